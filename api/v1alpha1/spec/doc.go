// Package spec holds the specs of the guardrail.dev/v1alpha1 API — ClassifierSpec,
// GuardrailSpec and every type they hold — as plain Go types that import nothing from
// Kubernetes. It is their one home: api/v1alpha1 wraps them in the Kubernetes objects
// (TypeMeta, ObjectMeta, status, conditions) that the operator stores and reconciles, and
// the guard sidecar decodes policy files and control-plane snapshots into them without
// linking apimachinery (each package the guard links costs resident memory in every pod).
// This is the split of Istio's api (plain spec types) from its client-go (the objects
// that wrap them), and of Flux's dependency-free fluxcd/pkg/apis/meta.
//
// The kubebuilder markers here generate the CRD schemas (controller-gen follows the
// object's spec field into this package), so the godoc of every field is what
// `kubectl explain` prints. The two apimachinery types the specs used to hold have small
// replacements with the same JSON: Duration (metav1.Duration's string form) and
// IntOrString (intstr.IntOrString's number-or-string form).
//
// Nothing in this package may import k8s.io or sigs.k8s.io: the guard's link check
// (runtime/linkcheck_test.go) fails if the guard links either.
// +kubebuilder:object:generate=true
package spec

// Group is the API group of the objects these specs belong to.
const Group = "guardrail.dev"

// Version is the API version within Group.
const Version = "v1alpha1"

// APIVersion is the apiVersion of the objects these specs belong to.
const APIVersion = Group + "/" + Version

// Reasons a spec is refused by the policy compiler (runtime/policy), which the operator
// and the guard share. They are also the reasons of the status conditions that report the
// refusal (api/v1alpha1, conditions.go, documents them there as well).
const (
	// ReasonInvalidSpec: the spec is valid for the schema but cannot be compiled (an
	// invalid regular expression, a CEL rule that does not type-check, an unknown
	// category).
	ReasonInvalidSpec = "InvalidSpec"

	// ReasonSecretNotFound: the credentials named by spec.credentialsSecretRef are not
	// resolved.
	ReasonSecretNotFound = "SecretNotFound"

	// ReasonClassifierNotFound: spec.classifierRef names a Classifier that does not exist.
	ReasonClassifierNotFound = "ClassifierNotFound"

	// ReasonClassifierMismatch: a Guardrail does not fit the Classifier it references.
	ReasonClassifierMismatch = "ClassifierMismatch"
)
