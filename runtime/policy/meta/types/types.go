// Package types is the guard's copy of k8s.io/apimachinery/pkg/types's UID, named as
// apimachinery's so that a JSON decoding error names the same type (types.UID).
package types

// UID is an object's unique id.
type UID string
