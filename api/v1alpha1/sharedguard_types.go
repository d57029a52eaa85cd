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
// like any guard and serves them the Guardrails that select their labels. In ExtProc mode
// the pods run the Envoy external processor (cmd/guard-extproc) instead, for a gateway that
// calls it over gRPC: rendered and verified by the operator the same way.

// SharedGuardMode is what a SharedGuard's pods run.
// +kubebuilder:validation:Enum=Proxy;ExtProc
type SharedGuardMode string

const (
	// SharedGuardModeProxy runs the guard's HTTP proxy: apps point their SDK's base URL at
	// the Service, and the guard calls the provider.
	SharedGuardModeProxy SharedGuardMode = "Proxy"
	// SharedGuardModeExtProc runs the Envoy external processor (guard-extproc): a gateway's
	// ext_proc filter calls the Service over gRPC, and the gateway calls the provider.
	SharedGuardModeExtProc SharedGuardMode = "ExtProc"
)

// SharedGuardSpec is the desired state of a SharedGuard.
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'ExtProc' || !has(self.openAIUpstream)",message="spec.openAIUpstream is the proxy's: in ExtProc mode the gateway routes the calls; unset it",fieldPath=.openAIUpstream
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'ExtProc' || !has(self.anthropicUpstream)",message="spec.anthropicUpstream is the proxy's: in ExtProc mode the gateway routes the calls; unset it",fieldPath=.anthropicUpstream
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'ExtProc' || !has(self.geminiUpstream)",message="spec.geminiUpstream is the proxy's: in ExtProc mode the gateway routes the calls; unset it",fieldPath=.geminiUpstream
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'ExtProc' || !has(self.auditLog) || !self.auditLog",message="spec.auditLog is the proxy's: the ext_proc server writes no audit log; unset it in ExtProc mode",fieldPath=.auditLog
// +kubebuilder:validation:XValidation:rule="has(self.tls) == has(oldSelf.tls)",message="spec.tls cannot be added or removed: clients (apps, or a gateway) call the guard either over TLS or in cleartext, and a rollout would serve both behind one Service; create another SharedGuard instead (spec.tls.secretName may change)",fieldPath=.tls
type SharedGuardSpec struct {
	// mode is what the pods run: Proxy (the default), the guard's HTTP proxy, which apps
	// call through their SDK's base URL; or ExtProc, the Envoy external processor
	// (guard-extproc, docs/extproc.md), which a gateway's ext_proc filter calls over gRPC
	// (h2c) on the Service's port 15081. An ExtProc guard holds no upstream and no
	// provider key: the gateway calls the provider. Immutable: its callers differ, so
	// create another SharedGuard to change it.
	// +optional
	// +kubebuilder:default=Proxy
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.mode is immutable: its callers differ (SDKs in Proxy mode, a gateway in ExtProc mode); create another SharedGuard instead"
	Mode SharedGuardMode `json:"mode,omitempty"`

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

	// tls has the guard serve TLS with the certificate of a kubernetes.io/tls Secret of the
	// SharedGuard's namespace, such as cert-manager writes for a Certificate, and the
	// Service advertise appProtocol https. In Proxy mode the guard's proxy serves HTTPS
	// (HTTP/1.1 and HTTP/2) on the Service's port 443 and status.url is
	// https://NAME.NAMESPACE.svc (apps append /v1 for OpenAI SDKs and trust the
	// certificate's CA); in ExtProc mode the processor serves gRPC over TLS and status.url
	// is https://NAME.NAMESPACE.svc:15081. Without it the proxy serves cleartext HTTP on
	// port 80 and the processor gRPC in cleartext (h2c). It cannot be added or removed
	// (clients call the guard one way or the other): create another SharedGuard instead.
	// docs/shared-guard.md says how to get a certificate and have apps or a gateway trust
	// it.
	// +optional
	TLS *SharedGuardTLS `json:"tls,omitempty"`
}

// SharedGuardTLS is the certificate a SharedGuard's proxy or processor presents.
type SharedGuardTLS struct {
	// secretName names a Secret of type kubernetes.io/tls in the SharedGuard's namespace:
	// its tls.crt (the certificate chain, leaf first) and tls.key (the private key), which
	// alone are mounted read-only into the guard's proxy or processor. A renewal written
	// into the same Secret (cert-manager renews in place) is picked up without a restart;
	// another name
	// rolls the pods out. The operator reads the Secret to report it missing or invalid
	// in the conditions and never copies it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.tls.secretName must be a Secret's name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	SecretName string `json:"secretName"`
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

	// url is the Service's address. In Proxy mode it is the base URL for Anthropic SDKs,
	// and with /v1 appended for OpenAI SDKs: http://NAME.NAMESPACE.svc in cleartext, or
	// https://NAME.NAMESPACE.svc over TLS (spec.tls); in ExtProc mode the gRPC endpoint a gateway's
	// ext_proc cluster points at: http://NAME.NAMESPACE.svc:15081 in cleartext (h2c), or
	// https://NAME.NAMESPACE.svc:15081 over TLS (spec.tls).
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
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
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
	// +kubebuilder:default={}
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

// LabelSharedGuardMode is on the pods of an ExtProc SharedGuard, with the value ExtProc, so
// that the pods of each mode (whose ports differ) serve only behind a Service of theirs.
const LabelSharedGuardMode = "guardrail.dev/shared-guard-mode"
