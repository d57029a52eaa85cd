// Package v1alpha1 is the guard's own copy of the guardrail.dev/v1alpha1 API objects
// (github.com/guardrail-dev/guardrail-operator/api/v1alpha1): Classifier and Guardrail
// with their metadata, spec and status, written without importing apimachinery (the few
// apimachinery types they hold are copied in runtime/policy/meta). The guard decodes policy
// files and control-plane snapshots into these types and the policy compiler reads them,
// so that the guard sidecar links no k8s.io package — each package it links costs resident
// memory in every pod.
//
// The copy is exact, not a subset: every field of the API objects, with the same JSON
// names, Go types and encodings, including the metadata and status the guard never reads.
// That keeps a policy file decoded as strictly as before (a field misspelled anywhere is
// refused, a field `kubectl get -o yaml` prints is accepted) and the snapshot the operator
// sends byte for byte what it was. mirror_test.go fills the API objects and these with
// random values and requires the JSON of each to decode strictly into the other and
// re-encode identically, so a field added to the API and not here fails the tests; it also
// holds the constants to the API's. The packages are named as the originals (v1alpha1,
// v1, types) and so are the types, so that JSON decoding errors read the same
// (v1alpha1.Mode, v1.TypeMeta, types.UID).
//
// The operator keeps using api/v1alpha1 and converts with runtime/policy/kube.
package v1alpha1

// GroupName is the API group.
const GroupName = "guardrail.dev"

// Version is the API version within the group.
const Version = "v1alpha1"

// APIVersion is the apiVersion of the objects of this API.
const APIVersion = GroupName + "/" + Version

// Condition reasons the policy compiler reports, as in api/v1alpha1.
const (
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonSecretNotFound     = "SecretNotFound"
	ReasonClassifierNotFound = "ClassifierNotFound"
	ReasonClassifierMismatch = "ClassifierMismatch"
)
