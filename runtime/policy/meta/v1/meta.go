// Package v1 is the guard's copy of the types of k8s.io/apimachinery/pkg/apis/meta/v1 that
// the guardrail.dev/v1alpha1 objects hold — TypeMeta, ObjectMeta, Time, Duration,
// Condition — with the same JSON (field names, omitempty and omitzero, custom encodings),
// and nothing else of them: no protobuf, no conversion, no helpers beyond what the guard
// calls. The package is named v1, as apimachinery's is, so that a JSON decoding error names
// the same types (v1.TypeMeta, []v1.OwnerReference). runtime/policy/v1alpha1's tests hold
// the copy to apimachinery's encoding.
package v1

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy/meta/types"
)

// TypeMeta is apiVersion and kind.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// ObjectMeta is an object's metadata.
type ObjectMeta struct {
	Name                       string               `json:"name,omitempty"`
	GenerateName               string               `json:"generateName,omitempty"`
	Namespace                  string               `json:"namespace,omitempty"`
	SelfLink                   string               `json:"selfLink,omitempty"`
	UID                        types.UID            `json:"uid,omitempty"`
	ResourceVersion            string               `json:"resourceVersion,omitempty"`
	Generation                 int64                `json:"generation,omitempty"`
	CreationTimestamp          Time                 `json:"creationTimestamp,omitempty,omitzero"`
	DeletionTimestamp          *Time                `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64               `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string    `json:"labels,omitempty"`
	Annotations                map[string]string    `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference     `json:"ownerReferences,omitempty"`
	Finalizers                 []string             `json:"finalizers,omitempty"`
	ManagedFields              []ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// OwnerReference names an owner of an object.
type OwnerReference struct {
	APIVersion         string    `json:"apiVersion"`
	Kind               string    `json:"kind"`
	Name               string    `json:"name"`
	UID                types.UID `json:"uid"`
	Controller         *bool     `json:"controller,omitempty"`
	BlockOwnerDeletion *bool     `json:"blockOwnerDeletion,omitempty"`
}

// ManagedFieldsOperationType is Apply or Update.
type ManagedFieldsOperationType string

// ManagedFieldsEntry is one manager's set of fields (server-side apply).
type ManagedFieldsEntry struct {
	Manager     string                     `json:"manager,omitempty"`
	Operation   ManagedFieldsOperationType `json:"operation,omitempty"`
	APIVersion  string                     `json:"apiVersion,omitempty"`
	Time        *Time                      `json:"time,omitempty"`
	FieldsType  string                     `json:"fieldsType,omitempty"`
	FieldsV1    *FieldsV1                  `json:"fieldsV1,omitempty"`
	Subresource string                     `json:"subresource,omitempty"`
}

// FieldsV1 is a set of fields, kept as the JSON it was read from.
type FieldsV1 struct {
	Raw []byte `json:"-"`
}

// MarshalJSON writes the raw JSON, or null when there is none.
func (f FieldsV1) MarshalJSON() ([]byte, error) {
	if len(f.Raw) == 0 {
		return []byte("null"), nil
	}
	return f.Raw, nil
}

// UnmarshalJSON keeps the raw JSON; null leaves f as it is.
func (f *FieldsV1) UnmarshalJSON(b []byte) error {
	if f == nil {
		return errors.New("metav1.FieldsV1: UnmarshalJSON on nil pointer")
	}
	if !bytes.Equal(b, []byte("null")) {
		f.Raw = append(f.Raw[:0], b...)
	}
	return nil
}

// Time is a point in time, in JSON an RFC 3339 string in UTC to the second, or null.
type Time struct {
	time.Time
}

// IsZero reports whether t is nil or the zero time.
func (t *Time) IsZero() bool {
	return t == nil || t.Time.IsZero()
}

// MarshalJSON writes null for the zero time, else an RFC 3339 string in UTC.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b := []byte{'"'}
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"'), nil
}

// UnmarshalJSON reads null as the zero time, else an RFC 3339 string (in local time).
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	pt, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return err
	}
	t.Time = pt.Local()
	return nil
}

// Duration is a time.Duration, in JSON a Go duration string such as 1m30s.
type Duration struct {
	time.Duration
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	pd, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = pd
	return nil
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition is a status condition.
type Condition struct {
	Type               string          `json:"type"`
	Status             ConditionStatus `json:"status"`
	ObservedGeneration int64           `json:"observedGeneration,omitempty"`
	LastTransitionTime Time            `json:"lastTransitionTime"`
	Reason             string          `json:"reason"`
	Message            string          `json:"message"`
}
