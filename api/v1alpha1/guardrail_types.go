package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// GuardrailStatus is the observed state of a Guardrail.
type GuardrailStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled, ClassifierResolved and Enforced.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// enforcement compares the pods selected with those whose sidecar enforces this
	// generation.
	// +optional
	Enforcement *EnforcementStatus `json:"enforcement,omitempty"`

	// decisions counts outcomes, cumulatively; a spec change does not reset them.
	// +optional
	Decisions *DecisionCounts `json:"decisions,omitempty"`

	// lastDecisionTime is when the latest counted decision was made.
	// +optional
	LastDecisionTime *metav1.Time `json:"lastDecisionTime,omitempty"`
}

// EnforcementStatus compares the pods selected with those enforcing the latest generation.
type EnforcementStatus struct {
	// selectedPods is how many running pods the selector matches.
	// +kubebuilder:validation:Minimum=0
	SelectedPods int32 `json:"selectedPods"`
	// acknowledgedPods is how many of them have acknowledged the latest generation.
	// +kubebuilder:validation:Minimum=0
	AcknowledgedPods int32 `json:"acknowledgedPods"`
	// podsWithoutGuard is how many of the selected pods have no guard: their traffic
	// bypasses this policy.
	// +optional
	// +kubebuilder:validation:Minimum=0
	PodsWithoutGuard int32 `json:"podsWithoutGuard,omitempty"`
	// summary is acknowledgedPods/selectedPods, for `kubectl get`.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Summary string `json:"summary,omitempty"`
}

// DecisionCounts are cumulative decision counts by outcome and by category.
type DecisionCounts struct {
	// +optional
	// +kubebuilder:validation:Minimum=0
	Allowed int64 `json:"allowed,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Warned int64 `json:"warned,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Stripped int64 `json:"stripped,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Redacted int64 `json:"redacted,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Blocked int64 `json:"blocked,omitempty"`
	// failed counts evaluation failures under failurePolicy Closed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Failed int64 `json:"failed,omitempty"`
	// notInspected counts content passed without inspection (failurePolicy Open,
	// unsupported Allow, or past maxEvaluations).
	// +optional
	// +kubebuilder:validation:Minimum=0
	NotInspected int64 `json:"notInspected,omitempty"`
	// pseudonymized counts requests whose values were replaced by placeholders (action
	// Pseudonymize) and given back in the answer.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Pseudonymized int64 `json:"pseudonymized,omitempty"`
	// wouldWarn, wouldStrip, wouldRedact, wouldPseudonymize and wouldBlock count what
	// Report mode would have done.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WouldWarn int64 `json:"wouldWarn,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	WouldStrip int64 `json:"wouldStrip,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	WouldRedact int64 `json:"wouldRedact,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	WouldPseudonymize int64 `json:"wouldPseudonymize,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	WouldBlock int64 `json:"wouldBlock,omitempty"`
	// categories counts matches by category id or rule name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	Categories []CategoryCount `json:"categories,omitempty"`

	// writes marks the manager's latest write of these counters, one entry per writer:
	// how a write retried after a failure of unknown outcome is never counted twice.
	// Written by the operator only.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	Writes []string `json:"writes,omitempty"`
}

// CategoryCount is the cumulative number of matches of a category or rule.
type CategoryCount struct {
	// name of the category or rule.
	Name string `json:"name"`
	// matches counted.
	// +kubebuilder:validation:Minimum=0
	Matches int64 `json:"matches"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gr;grd,categories=guardrail-policies
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Classifier",type=string,JSONPath=`.spec.classifierRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Enforced",type=string,JSONPath=`.status.enforcement.summary`
// +kubebuilder:printcolumn:name="Blocked",type=integer,JSONPath=`.status.decisions.blocked`
// +kubebuilder:printcolumn:name="Redacted",type=integer,JSONPath=`.status.decisions.redacted`
// +kubebuilder:printcolumn:name="Would-Block",type=integer,JSONPath=`.status.decisions.wouldBlock`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Guardrail says what is enforced where: which pods, which phases, which categories and
// thresholds or CEL rules, which action, the streaming cadence and hold-back, the failure
// policy, and whether it enforces or only reports.
type Guardrail struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired guardrail.
	// +required
	Spec spec.GuardrailSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status GuardrailStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GuardrailList is a list of Guardrails.
type GuardrailList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Guardrail `json:"items"`
}
