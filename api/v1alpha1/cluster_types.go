package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// The cluster baselines: a platform team's Guardrails and Classifiers,
// cluster-scoped, that apply to the pods of every namespace they select beside the
// namespace's own Guardrails, and that a namespace's tenants can add to but not weaken
// (config/samples/README.md, "Cluster baselines").

// ClusterGuardrailSpec is a GuardrailSpec that selects namespaces as well as pods.
type ClusterGuardrailSpec struct {
	spec.GuardrailSpec `json:",inline"`

	// namespaceSelector selects the namespaces whose pods this ClusterGuardrail applies
	// to, by the namespaces' labels (matchLabels and matchExpressions); spec.selector
	// then selects pods within them. Empty or unset selects every namespace whose pods
	// carry the guard. Namespaces where no pod is injected (the operator's own, system
	// namespaces) are never enforced, whatever it says.
	// +optional
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
}

// MaxNamespacesListed bounds status.namespaces of a ClusterGuardrail: the namespaces
// listed by name; the others are summed in status.otherNamespaces, so that the status
// stays small at any number of namespaces.
const MaxNamespacesListed = 20

// ClusterGuardrailStatus is the observed state of a ClusterGuardrail: the fields of a
// Guardrail's status, summed over the namespaces it selects, and a per-namespace
// breakdown bounded in size.
type ClusterGuardrailStatus struct {
	GuardrailStatus `json:",inline"`

	// selectedNamespaces is how many namespaces have a running pod this ClusterGuardrail
	// selects.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SelectedNamespaces int32 `json:"selectedNamespaces,omitempty"`

	// namespaces breaks enforcement and decisions down by namespace, at most 20 of them:
	// first the namespaces where a selected pod does not enforce the latest generation,
	// then those with the most decisions, by name; the rest are summed in otherNamespaces.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +kubebuilder:validation:MaxItems=20
	Namespaces []NamespaceBreakdown `json:"namespaces,omitempty"`

	// otherNamespaces sums the namespaces not listed in namespaces.
	// +optional
	OtherNamespaces *OtherNamespaces `json:"otherNamespaces,omitempty"`
}

// NamespaceBreakdown is how a ClusterGuardrail stands in one namespace.
type NamespaceBreakdown struct {
	// namespace is the namespace's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	NamespaceFigures `json:",inline"`
}

// OtherNamespaces sums the namespaces a ClusterGuardrail's status does not list.
type OtherNamespaces struct {
	// namespaces is how many namespaces are summed here.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Namespaces int32 `json:"namespaces,omitempty"`

	NamespaceFigures `json:",inline"`
}

// NamespaceFigures are a ClusterGuardrail's enforcement and decisions in one namespace or
// a group of them.
type NamespaceFigures struct {
	// selectedPods is how many running pods are selected.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SelectedPods int32 `json:"selectedPods,omitempty"`
	// acknowledgedPods is how many of them enforce the latest generation.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AcknowledgedPods int32 `json:"acknowledgedPods,omitempty"`
	// podsWithoutGuard is how many of them have no guard: their traffic bypasses the
	// policy.
	// +optional
	// +kubebuilder:validation:Minimum=0
	PodsWithoutGuard int32 `json:"podsWithoutGuard,omitempty"`
	// blocked counts requests blocked, cumulatively.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Blocked int64 `json:"blocked,omitempty"`
	// redacted counts requests redacted, cumulatively.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Redacted int64 `json:"redacted,omitempty"`
	// wouldBlock counts requests Report mode would have blocked, cumulatively.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WouldBlock int64 `json:"wouldBlock,omitempty"`
	// failed counts requests refused because an evaluation failed, cumulatively.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Failed int64 `json:"failed,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cgr,categories=guardrail-policies
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Classifier",type=string,JSONPath=`.spec.classifierRef.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Enforced",type=string,JSONPath=`.status.enforcement.summary`
// +kubebuilder:printcolumn:name="Blocked",type=integer,JSONPath=`.status.decisions.blocked`
// +kubebuilder:printcolumn:name="Redacted",type=integer,JSONPath=`.status.decisions.redacted`
// +kubebuilder:printcolumn:name="Would-Block",type=integer,JSONPath=`.status.decisions.wouldBlock`
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.status.selectedNamespaces`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterGuardrail is a Guardrail for the pods of every namespace its namespaceSelector
// selects, set by the platform: it applies beside the namespaces' own Guardrails, which
// can add restrictions but never weaken it. It references a ClusterClassifier.
type ClusterGuardrail struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired guardrail: a Guardrail's spec, whose classifierRef names a
	// ClusterClassifier, plus namespaceSelector.
	// +required
	Spec ClusterGuardrailSpec `json:"spec"`

	// status is the observed state, summed over the selected namespaces.
	// +optional
	Status ClusterGuardrailStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterGuardrailList is a list of ClusterGuardrails.
type ClusterGuardrailList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterGuardrail `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cclf,categories=guardrail-policies
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.status.backend`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Guardrails",type=integer,JSONPath=`.status.guardrails`,priority=1
// +kubebuilder:printcolumn:name="Guards",type=integer,JSONPath=`.status.guards`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterClassifier is a Classifier for ClusterGuardrails: the same backends, categories
// and questions. Its spec.credentialsSecretRef names a Secret in the operator's
// namespace, which tenants cannot read; the guards of every namespace using it receive
// the credential over their subscription.
type ClusterClassifier struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired classifier; spec.credentialsSecretRef names a Secret in the
	// operator's namespace.
	// +required
	Spec spec.ClassifierSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status ClassifierStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterClassifierList is a list of ClusterClassifiers.
type ClusterClassifierList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterClassifier `json:"items"`
}

// GetConditions returns the status conditions.
func (g *ClusterGuardrail) GetConditions() []metav1.Condition { return g.Status.Conditions }

// SetConditions replaces the status conditions.
func (g *ClusterGuardrail) SetConditions(conds []metav1.Condition) { g.Status.Conditions = conds }

// GetObservedGeneration returns status.observedGeneration.
func (g *ClusterGuardrail) GetObservedGeneration() int64 { return g.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (g *ClusterGuardrail) SetObservedGeneration(gen int64) { g.Status.ObservedGeneration = gen }

// GetConditions returns the status conditions.
func (c *ClusterClassifier) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions replaces the status conditions.
func (c *ClusterClassifier) SetConditions(conds []metav1.Condition) { c.Status.Conditions = conds }

// GetObservedGeneration returns status.observedGeneration.
func (c *ClusterClassifier) GetObservedGeneration() int64 { return c.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (c *ClusterClassifier) SetObservedGeneration(g int64) { c.Status.ObservedGeneration = g }
