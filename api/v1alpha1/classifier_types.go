package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// ClassifierStatus is the observed state of a Classifier.
type ClassifierStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled and CredentialsResolved; InUse while a
	// deletion waits for the Guardrails that reference the Classifier.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// backend is the backend in use: builtin, moderation, llm or webhook.
	// +optional
	Backend string `json:"backend,omitempty"`

	// categories the classifier scores, resolved (for builtin classifiers, expanded from
	// packs, detectors, patterns and keywords), in order.
	// +optional
	// +listType=atomic
	Categories []string `json:"categories,omitempty"`

	// holdBackHint is the classifier's longest possible match in characters, the default
	// hold-back of streaming guardrails using it; 0 for remote backends.
	// +optional
	// +kubebuilder:validation:Minimum=0
	HoldBackHint int32 `json:"holdBackHint,omitempty"`

	// guardrails is how many Guardrails reference this classifier.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Guardrails int32 `json:"guardrails,omitempty"`

	// guards is how many pods' guards enforce a Guardrail that uses this classifier, as
	// they acknowledged their policy.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Guards int32 `json:"guards,omitempty"`

	// calls summarizes backend calls reported by guard sidecars.
	// +optional
	Calls *ClassifierCallStats `json:"calls,omitempty"`
}

// ClassifierCallStats summarizes backend calls reported by guard sidecars.
type ClassifierCallStats struct {
	// total calls reported.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Total int64 `json:"total,omitempty"`

	// latencyP50 and latencyP99 of calls over the last reporting window.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|μs|ms|s|m|h)){1,4}$')",message="must be a duration such as 0s, 500ms or 1m30s"
	LatencyP50 *metav1.Duration `json:"latencyP50,omitempty"`
	// latencyP99 of calls over the last reporting window.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|μs|ms|s|m|h)){1,4}$')",message="must be a duration such as 0s, 500ms or 1m30s"
	LatencyP99 *metav1.Duration `json:"latencyP99,omitempty"`

	// errors by code (CLASSIFIER_FAILED, TIMEOUT, INVALID_ANSWER, UNSUPPORTED), cumulative.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0)",message="error counts are never negative"
	Errors map[string]int64 `json:"errors,omitempty"`

	// writes marks the manager's latest write of these figures, one entry per writer: how
	// a write retried after a failure of unknown outcome is never counted twice. Written
	// by the operator only.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	Writes []string `json:"writes,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=clf,categories=guardrail-policies
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.status.backend`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Guardrails",type=integer,JSONPath=`.status.guardrails`,priority=1
// +kubebuilder:printcolumn:name="Guards",type=integer,JSONPath=`.status.guards`,priority=1
// +kubebuilder:printcolumn:name="Calls",type=integer,JSONPath=`.status.calls.total`,priority=1
// +kubebuilder:printcolumn:name="P99",type=string,JSONPath=`.status.calls.latencyP99`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Classifier says how content is judged: a built-in detector set, a moderation endpoint,
// an LLM judge, or a webhook, with its categories or questions, timeouts and limits.
// Guardrails in the same namespace reference it by name.
type Classifier struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired classifier.
	// +required
	Spec spec.ClassifierSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status ClassifierStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClassifierList is a list of Classifiers.
type ClassifierList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Classifier `json:"items"`
}
