package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Shared guards: for workloads that cannot take a sidecar (a managed runtime, a pod the
// webhook cannot mutate, a job whose image is fixed) or that should reach their model
// through one place, a SharedGuard runs the guard as a Deployment of its own behind a
// Service in its namespace. Apps point their SDK's base URL at the Service. The guard's
// pods are rendered by the operator, value for value as the injector renders a sidecar,
// except that the proxy listens on the pod's address, so the control plane verifies them
// like any guard and serves them the Guardrails that select their labels.

// SharedGuardSpec is the desired state of a SharedGuard.
type SharedGuardSpec struct {
	// replicas is the number of guard pods behind the Service.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	Replicas *int32 `json:"replicas,omitempty"`

	// podLabels are labels the guard's pods carry. Guardrails select the shared guard by
	// them as they select app pods (spec.selector), so give it the labels of the
	// workloads it speaks for. Keys of the guardrail.dev domain are the operator's and
	// refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k == 'guardrail.dev' || k.startsWith('guardrail.dev/') || k.contains('.guardrail.dev/')))",message="must not set labels of the guardrail.dev domain: they are the operator's"
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// openAIUpstream is where the guard forwards OpenAI-style calls; empty uses the
	// manager's default (--guard-openai-upstream).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="must be an absolute http or https URL with a host"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="must not carry credentials"
	OpenAIUpstream string `json:"openAIUpstream,omitempty"`

	// anthropicUpstream is where the guard forwards Anthropic calls; empty uses the
	// manager's default (--guard-anthropic-upstream).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="must be an absolute http or https URL with a host"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="must not carry credentials"
	AnthropicUpstream string `json:"anthropicUpstream,omitempty"`

	// geminiUpstream is where the guard forwards Gemini API calls; empty uses the
	// manager's default (--guard-gemini-upstream).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="must be an absolute http or https URL with a host"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="must not carry credentials"
	GeminiUpstream string `json:"geminiUpstream,omitempty"`

	// resources are each guard pod's CPU and memory; empty fields use the manager's
	// defaults (--guard-cpu-request and the like). A shared guard serves many callers:
	// give it more than a sidecar.
	// +optional
	Resources *SharedGuardResources `json:"resources,omitempty"`

	// auditLog has the guard write its audit log, one JSON line per decision with ids
	// and names only, to stdout.
	// +optional
	AuditLog bool `json:"auditLog,omitempty"`
}

// SharedGuardResources are a shared guard pod's requests and limits.
type SharedGuardResources struct {
	// cpuRequest is the guard's CPU request.
	// +optional
	CPURequest *resource.Quantity `json:"cpuRequest,omitempty"`
	// memoryRequest is the guard's memory request.
	// +optional
	MemoryRequest *resource.Quantity `json:"memoryRequest,omitempty"`
	// cpuLimit is the guard's CPU limit; it sets GOMAXPROCS.
	// +optional
	CPULimit *resource.Quantity `json:"cpuLimit,omitempty"`
	// memoryLimit is the guard's memory limit; it sets GOMEMLIMIT to 90% of it.
	// +optional
	MemoryLimit *resource.Quantity `json:"memoryLimit,omitempty"`
}

// SharedGuardStatus is the observed state of a SharedGuard.
type SharedGuardStatus struct {
	// conditions: Ready (kstatus; True once every guard pod of the current generation is
	// ready, which a guard is only once it holds its policy), Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// observedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// url is the Service's address: the base URL for Anthropic SDKs, and with /v1
	// appended for OpenAI SDKs.
	// +optional
	URL string `json:"url,omitempty"`

	// replicas counts the guard pods, readyReplicas those that hold a policy and serve.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// selector selects the guard's pods (the scale subresource's, for autoscalers).
	// +optional
	Selector string `json:"selector,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=sg
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Replicas",type=string,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// SharedGuard runs the guard as a Deployment behind a Service of the same name in its
// namespace, for apps that call their model through it instead of a sidecar.
type SharedGuard struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired shared guard.
	// +optional
	Spec SharedGuardSpec `json:"spec,omitempty"`

	// status is the observed state.
	// +optional
	Status SharedGuardStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SharedGuardList is a list of SharedGuards.
type SharedGuardList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SharedGuard `json:"items"`
}

// GetConditions returns the status conditions.
func (g *SharedGuard) GetConditions() []metav1.Condition { return g.Status.Conditions }

// SetConditions replaces the status conditions.
func (g *SharedGuard) SetConditions(conds []metav1.Condition) { g.Status.Conditions = conds }

// GetObservedGeneration returns status.observedGeneration.
func (g *SharedGuard) GetObservedGeneration() int64 { return g.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (g *SharedGuard) SetObservedGeneration(gen int64) { g.Status.ObservedGeneration = gen }

// LabelSharedGuard names, on a shared guard's Deployment, Service, EndpointSlice and
// pods, the SharedGuard they belong to.
const LabelSharedGuard = "guardrail.dev/shared-guard"
