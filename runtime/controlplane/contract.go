// Package controlplane is the guard's side of the operator's control plane (DESIGN.md §6):
// the names the injector and the guard agree on, the wire types of the policy
// subscription and of the decisions the guard sends back, the client that subscribes, and
// the aggregator and reporter of decisions. It imports neither client-go nor
// controller-runtime: it is linked into every sidecar.
package controlplane

// Audience is the audience of the projected service-account token a guard presents to the
// operator; a token for any other audience is refused.
const Audience = "guardrail.dev"

// The guard's flags for the control plane, in one place: the injector writes them into the
// sidecar's arguments and the guard defines them.
const (
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
	// per family). The injector sets it from AnnotationProvider; the upstream URL and the
	// credential come from the snapshot, never from a flag.
	FlagProvider = "provider"
)

// Keyless apps (DESIGN.md §9.2).
const (
	// AnnotationProvider on a pod names the ModelProviders it calls through its guard
	// (NAME, or NAME,NAME with one per API family); on a namespace, the default of its
	// pods. An empty value on a pod opts it out of its namespace's default.
	AnnotationProvider = "guardrail.dev/provider"
	// PlaceholderAPIKey is the API key the injector gives the app containers of a pod
	// that uses a ModelProvider (OPENAI_API_KEY, ANTHROPIC_API_KEY): SDKs that insist on a
	// key start, and the guard replaces it with the provider's credential. It calls
	// nothing by itself.
	PlaceholderAPIKey = "guardrail-keyless-placeholder"
)

// Labels and annotations on pods.
const (
	// LabelInjected is the injector's note on a pod it handled: "true" when it injected
	// the guard, "false" when it could not. The operator caches only these pods. A tenant
	// can write it too, so it proves nothing: what counts as a guard is the pod's spec
	// (controllers/injection.VerifyGuard) and an authenticated guard connection.
	LabelInjected = "guardrail.dev/injected"
	// LabelInject on a pod opts it in ("true") or out ("false"; wins over a namespace
	// labelled "enabled", never over one labelled "required").
	LabelInject = "guardrail.dev/inject"
	// LabelInjection on a namespace opts its pods in ("enabled", or "required": every pod
	// gets the guard whatever its labels, or is denied).
	LabelInjection = "guardrail.dev/injection"
)
