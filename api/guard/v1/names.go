package guardv1

// Audience is the audience of the projected service-account token a guard presents to the
// operator; a token for any other audience is refused.
const Audience = "guardrail.dev"

// Labels on pods and namespaces.
const (
	// LabelInjected is the injector's note on a pod it handled: "true" when it injected
	// the guard, "false" when it could not. The operator caches only these pods. A tenant
	// can write it too, so it proves nothing: what counts as a guard is the pod's spec
	// (the injector's VerifyGuard) and an authenticated guard connection.
	LabelInjected = "guardrail.dev/injected"
	// LabelInject on a pod opts it in ("true") or out ("false"; wins over a namespace
	// labelled "enabled", never over one labelled "required").
	LabelInject = "guardrail.dev/inject"
	// LabelInjection on a namespace opts its pods in ("enabled", or "required": every pod
	// gets the guard whatever its labels, or is denied).
	LabelInjection = "guardrail.dev/injection"

	// Values of LabelInjection.
	InjectionEnabled  = "enabled"
	InjectionRequired = "required"
)

// Pod annotations a user may set to tune the injected guard. A value that does not parse
// is refused with an admission warning and a Warning Event, and the manager's default is
// used instead (in a namespace labelled guardrail.dev/injection=required the pod is
// denied).
const (
	// AnnotationCPU is the guard's CPU request, a Kubernetes quantity ("100m").
	AnnotationCPU = "guardrail.dev/cpu"
	// AnnotationMemory is the guard's memory request ("64Mi").
	AnnotationMemory = "guardrail.dev/memory"
	// AnnotationCPULimit is the guard's CPU limit; it also sets the guard's GOMAXPROCS.
	AnnotationCPULimit = "guardrail.dev/cpu-limit"
	// AnnotationMemoryLimit is the guard's memory limit; it also sets the guard's GOMEMLIMIT.
	AnnotationMemoryLimit = "guardrail.dev/memory-limit"
	// AnnotationOpenAIUpstream is the base URL the guard forwards OpenAI-style calls to.
	AnnotationOpenAIUpstream = "guardrail.dev/openai-upstream"
	// AnnotationAnthropicUpstream is the base URL the guard forwards Anthropic calls to.
	AnnotationAnthropicUpstream = "guardrail.dev/anthropic-upstream"
	// AnnotationGeminiUpstream is the base URL the guard forwards Gemini API calls to.
	AnnotationGeminiUpstream = "guardrail.dev/gemini-upstream"
	// AnnotationMCPUpstreams lists MCP servers the guard fronts, "NAME=URL,NAME=URL":
	// each is passed to the guard as FlagMCPUpstream and given to the app containers as
	// GUARDRAIL_MCP_<NAME>_URL. A list with one bad pair is refused whole.
	AnnotationMCPUpstreams = "guardrail.dev/mcp-upstreams"
	// AnnotationProvider on a pod names the ModelProviders it calls through its guard
	// (NAME, or NAME,NAME with one per API family); on a namespace, the default of its
	// pods. An empty value on a pod opts it out of its namespace's default.
	AnnotationProvider = "guardrail.dev/provider"
	// AnnotationAuditLog ("true" or "false") turns the guard's audit log on or off for the
	// pod, overriding the manager's default.
	AnnotationAuditLog = "guardrail.dev/audit-log"
)

// Pod annotations the injector writes.
const (
	// AnnotationInjectorVersion records which injector version rendered the guard. Like
	// every annotation it proves nothing: what marks a guarded pod is its spec.
	AnnotationInjectorVersion = "guardrail.dev/injector-version"
	// AnnotationCABundle holds the PEM CA certificate of the operator's control plane; the
	// guard reads it through a downward-API volume (CAPath).
	AnnotationCABundle = "guardrail.dev/ca-bundle"
	// AnnotationInjectionWarnings lists, one a line, what the injector refused or could not
	// honour; the operator turns each line into a Warning Event on the pod.
	AnnotationInjectionWarnings = "guardrail.dev/injection-warnings"
)

// ContainerName is the guard's container in a pod.
const ContainerName = "guardrail-guard"

// Where the guard finds, in its pod, its token, the operator's CA and the pod's labels
// (downward-API format: key="value" lines).
const (
	TokenPath  = "/var/run/secrets/guardrail.dev/token/token" //nolint:gosec // a mount path, not a credential
	CAPath     = "/var/run/secrets/guardrail.dev/ca/ca.crt"
	LabelsPath = "/var/run/guardrail/podinfo/labels"
)

// PlaceholderAPIKey is the API key the injector gives the app containers of a pod that
// uses a ModelProvider (OPENAI_API_KEY, ANTHROPIC_API_KEY): SDKs that insist on a key
// start, and the guard replaces it with the provider's credential. It calls nothing by
// itself.
const PlaceholderAPIKey = "guardrail-keyless-placeholder"

// The guard's flags that the injector renders, in one place: the guard defines them under
// these names and the injector writes them into the sidecar's arguments.
const (
	FlagListen            = "listen"
	FlagAdminListen       = "admin-listen"
	FlagOpenAIUpstream    = "openai-upstream"
	FlagAnthropicUpstream = "anthropic-upstream"
	FlagGeminiUpstream    = "gemini-upstream"
	// FlagAuditLog turns the guard's audit log (a JSON line per decision) on.
	FlagAuditLog = "audit-log"
	// FlagMCPUpstream is repeatable: NAME=URL.
	FlagMCPUpstream = "mcp-upstream"
	// FlagControlPlane is the operator's control-plane base URL (https://…).
	FlagControlPlane = "control-plane"
	// FlagTokenFile is the projected service-account token the guard presents.
	FlagTokenFile = "token-file"
	// FlagCAFile is the PEM bundle the guard trusts for the control plane.
	FlagCAFile = "ca-file"
	// FlagSnapshotDir is where the guard persists its last good policy snapshot.
	FlagSnapshotDir = "snapshot-dir"
	// FlagProvider names a ModelProvider the guard sends its pod's calls of that
	// provider's API family to, with the provider's credential (repeatable, at most one
	// per family). The upstream URL and the credential come from the snapshot, never from
	// a flag.
	FlagProvider = "provider"
)

// The API families of a ModelProvider, spelled as its spec.api.
const (
	ProviderAPIOpenAI    = "OpenAI"
	ProviderAPIAnthropic = "Anthropic"
)
