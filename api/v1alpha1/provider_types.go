package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// Keyless apps: the platform holds the provider keys. A ModelProvider
// names an upstream, its API family and a Secret of the operator's namespace; a pod that
// chooses it (annotation guardrail.dev/provider, on the pod or as its namespace's default)
// gets a placeholder API key, and its guard, which receives the credential over the
// control-plane subscription, replaces the placeholder with it. The app container never
// holds a key it could call the provider with.

// ProviderAPI is the API family a ModelProvider serves.
// +kubebuilder:validation:Enum=OpenAI;Anthropic
type ProviderAPI string

const (
	// ProviderAPIOpenAI is the OpenAI API (chat completions, Responses, embeddings) and
	// the OpenAI-compatible servers: the credential goes in Authorization: Bearer.
	ProviderAPIOpenAI ProviderAPI = "OpenAI"
	// ProviderAPIAnthropic is the Anthropic Messages API: the credential goes in x-api-key.
	ProviderAPIAnthropic ProviderAPI = "Anthropic"
)

// ModelProviderSpec is the desired state of a ModelProvider.
type ModelProviderSpec struct {
	// api is the API family: OpenAI (also every OpenAI-compatible server) or Anthropic.
	// +required
	API ProviderAPI `json:"api"`

	// url is the provider's base URL, such as https://api.openai.com/v1 or
	// https://api.anthropic.com; a trailing /v1 is accepted. The guard sends the pod's
	// calls and this provider's credential there, and nowhere else.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="must be an absolute http or https URL with a host"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') && !self.contains('?') && !self.contains('#')",message="must not carry credentials, a query or a fragment (put the credential in credentialsSecretRef)"
	URL string `json:"url"`

	// credentialsSecretRef names the key of a Secret in the operator's namespace that
	// holds the provider's API key. Tenants cannot read it; the guards of the namespaces
	// the namespaceSelector selects receive it over their subscription, in memory only.
	// +required
	CredentialsSecretRef spec.SecretKeyReference `json:"credentialsSecretRef"`

	// namespaceSelector selects the namespaces whose pods may use this provider, by the
	// namespaces' labels. It is required: {} selects every namespace, which must be said.
	// +required
	NamespaceSelector *LabelSelector `json:"namespaceSelector"`

	// headers are extra request headers the guard adds to every call, such as
	// OpenAI-Organization or OpenAI-Project. They are not secret: anyone who can read the
	// ModelProvider reads them. Credentials and connection headers are refused.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Headers []ProviderHeader `json:"headers,omitempty"`

	// limits are budgets of each namespace's use of this provider: every namespace the
	// namespaceSelector selects has its own share of each limit, counted in fixed UTC
	// windows (the minute, the day). Without limits the provider's use is only counted.
	// In Report mode (the default) a namespace that reaches a limit is reported (an Event
	// BudgetWouldBeExceeded and a metric); in Enforce mode its guards answer its calls to
	// this provider with 429 until the window ends. The manager learns usage at the
	// guards' decision interval: a namespace may exceed a limit by what its guards send in
	// about one interval (docs/keyless-apps.md).
	// +optional
	Limits *ProviderLimits `json:"limits,omitempty"`
}

// BudgetMode says what reaching a ModelProvider's limit does.
// +kubebuilder:validation:Enum=Report;Enforce
type BudgetMode string

const (
	// BudgetModeReport reports a namespace that reaches a limit and refuses nothing.
	BudgetModeReport BudgetMode = "Report"
	// BudgetModeEnforce refuses a namespace's calls (429) once it reached a limit, until
	// the window ends.
	BudgetModeEnforce BudgetMode = "Enforce"
)

// ProviderLimits are a ModelProvider's budgets, each applying to every namespace's use of
// the provider separately. Tokens are input and output tokens together, as the provider's
// usage fields count them.
// +kubebuilder:validation:XValidation:rule="has(self.requestsPerMinute) || has(self.tokensPerMinute) || has(self.requestsPerDay) || has(self.tokensPerDay)",message="set at least one of requestsPerMinute, tokensPerMinute, requestsPerDay and tokensPerDay (leave limits out for no budget)"
type ProviderLimits struct {
	// requestsPerMinute is how many calls a namespace may send in a UTC minute.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RequestsPerMinute *int64 `json:"requestsPerMinute,omitempty"`
	// tokensPerMinute is how many tokens (input and output) a namespace may use in a UTC
	// minute.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TokensPerMinute *int64 `json:"tokensPerMinute,omitempty"`
	// requestsPerDay is how many calls a namespace may send in a UTC day.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RequestsPerDay *int64 `json:"requestsPerDay,omitempty"`
	// tokensPerDay is how many tokens (input and output) a namespace may use in a UTC day.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TokensPerDay *int64 `json:"tokensPerDay,omitempty"`
	// mode is Report (the default: a namespace reaching a limit is reported, no call is
	// refused) or Enforce (its calls are refused with 429 until the window ends). Roll a
	// budget out in Report first, as a Guardrail.
	// +optional
	// +kubebuilder:default=Report
	Mode BudgetMode `json:"mode,omitempty"`
}

// ProviderHeader is one extra request header.
type ProviderHeader struct {
	// name of the header, such as OpenAI-Project.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9-]*$`
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'proxy-authorization', 'cookie', 'host', 'connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length', 'content-type', 'x-request-id'])",message="must not be a credential, connection or content header: the guard sets those, and a key written here would be readable by anyone who can read the ModelProvider"
	Name string `json:"name"`

	// value of the header.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.matches('[\\\\x00-\\\\x1f\\\\x7f]')",message="must not contain control characters"
	Value string `json:"value"`
}

// ModelProviderStatus is the observed state of a ModelProvider.
type ModelProviderStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the credential resolves and the spec is usable), Reconciling,
	// Stalled and CredentialsResolved.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// namespaces is how many namespaces have a running guard pod that uses this provider.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Namespaces int32 `json:"namespaces,omitempty"`

	// pods is how many running guard pods use this provider.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Pods int32 `json:"pods,omitempty"`

	// usage is what the guards counted through this provider, cumulatively: requests and
	// the tokens of the providers' own usage fields, streamed answers included. Never
	// prompt or completion text.
	// +optional
	Usage *ProviderUsage `json:"usage,omitempty"`

	// budgets are the namespaces' use of the provider in the current windows, when
	// spec.limits is set: at most 256 namespaces, those nearest to a limit kept. Figures
	// as of the manager's latest write of usage.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +kubebuilder:validation:MaxItems=256
	Budgets []NamespaceBudget `json:"budgets,omitempty"`
}

// MaxBudgetNamespaces bounds a ModelProvider's status.budgets. The list is what budgets
// are enforced from, not a summary: a namespace it cannot hold is not counted against its
// limits until it comes nearer to them than the furthest one listed. 256 entries of about
// 300 bytes keep the status well under the apiserver's object size limit.
const MaxBudgetNamespaces = 256

// NamespaceBudget is one namespace's use of a ModelProvider in the current windows.
type NamespaceBudget struct {
	// namespace is the namespace's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// minute is the UTC minute of the latest write.
	// +optional
	Minute *BudgetWindow `json:"minute,omitempty"`
	// day is the UTC day of the latest write.
	// +optional
	Day *BudgetWindow `json:"day,omitempty"`
}

// BudgetWindow is a namespace's use of a ModelProvider in one fixed window.
type BudgetWindow struct {
	// start is when the window began (UTC); it ends a minute or a day later.
	// +required
	Start metav1.Time `json:"start"`
	// requests counts the calls of the window.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Requests int64 `json:"requests,omitempty"`
	// tokens sums the input and output tokens of the window.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Tokens int64 `json:"tokens,omitempty"`
	// requestsRemaining is the window's request limit minus requests, not below 0; absent
	// without such a limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RequestsRemaining *int64 `json:"requestsRemaining,omitempty"`
	// tokensRemaining is the window's token limit minus tokens, not below 0; absent
	// without such a limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TokensRemaining *int64 `json:"tokensRemaining,omitempty"`
}

// ProviderUsage is a ModelProvider's usage in total and by namespace.
type ProviderUsage struct {
	UsageFigures `json:",inline"`

	// namespaces breaks usage down by namespace, at most 20 of them, those with the most
	// tokens first; the rest are summed in otherNamespaces.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +kubebuilder:validation:MaxItems=20
	Namespaces []NamespaceUsage `json:"namespaces,omitempty"`

	// otherNamespaces sums the namespaces not listed in namespaces.
	// +optional
	OtherNamespaces *OtherNamespacesUsage `json:"otherNamespaces,omitempty"`

	// writes marks the manager's latest write of this usage, one entry per writer: how a
	// write retried after a failure of unknown outcome is never counted twice. Written by
	// the operator only.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	Writes []string `json:"writes,omitempty"`
}

// NamespaceUsage is a ModelProvider's usage in one namespace.
type NamespaceUsage struct {
	// namespace is the namespace's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	UsageFigures `json:",inline"`
}

// OtherNamespacesUsage sums the namespaces a ModelProvider's usage does not list.
type OtherNamespacesUsage struct {
	// namespaces is how many namespaces are summed here.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Namespaces int32 `json:"namespaces,omitempty"`

	UsageFigures `json:",inline"`
}

// UsageFigures are requests and tokens, cumulatively.
type UsageFigures struct {
	// requests counts the calls the guards sent to the provider.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Requests int64 `json:"requests,omitempty"`
	// inputTokens sums the input (prompt) tokens the provider reported.
	// +optional
	// +kubebuilder:validation:Minimum=0
	InputTokens int64 `json:"inputTokens,omitempty"`
	// outputTokens sums the output (completion) tokens the provider reported.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OutputTokens int64 `json:"outputTokens,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mp,categories=guardrail-policies
// +kubebuilder:printcolumn:name="API",type=string,JSONPath=`.spec.api`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Pods",type=integer,JSONPath=`.status.pods`
// +kubebuilder:printcolumn:name="Requests",type=integer,JSONPath=`.status.usage.requests`
// +kubebuilder:printcolumn:name="Budget",type=string,JSONPath=`.spec.limits.mode`
// +kubebuilder:printcolumn:name="Input-Tokens",type=integer,JSONPath=`.status.usage.inputTokens`,priority=1
// +kubebuilder:printcolumn:name="Output-Tokens",type=integer,JSONPath=`.status.usage.outputTokens`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ModelProvider is a model provider whose credential the platform holds: pods of the
// namespaces it selects choose it with the annotation guardrail.dev/provider and call it
// through their guard, which attaches the credential. The app never holds the key.
type ModelProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired provider.
	// +required
	Spec ModelProviderSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status ModelProviderStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ModelProviderList is a list of ModelProviders.
type ModelProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModelProvider `json:"items"`
}

// GetConditions returns the status conditions.
func (p *ModelProvider) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions replaces the status conditions.
func (p *ModelProvider) SetConditions(conds []metav1.Condition) { p.Status.Conditions = conds }

// GetObservedGeneration returns status.observedGeneration.
func (p *ModelProvider) GetObservedGeneration() int64 { return p.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (p *ModelProvider) SetObservedGeneration(gen int64) { p.Status.ObservedGeneration = gen }
