package injection

import (
	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
)

// annotationDefaultContainer makes kubectl logs/exec pick the app, not the guard, in the
// legacy shape where the guard is the first regular container.
const annotationDefaultContainer = "kubectl.kubernetes.io/default-container"

// Label values of the contract's labels (guardv1.LabelInject, LabelInjection,
// LabelInjected).
const (
	injectionEnabled  = guardv1.InjectionEnabled
	injectionRequired = guardv1.InjectionRequired
	labelTrue         = "true"
	labelFalse        = "false"
)

// What the injector adds to a pod. Names are prefixed so they do not collide with an app's.
const (
	volumeToken    = "guardrail-token"
	volumeCA       = "guardrail-ca"
	volumePodInfo  = "guardrail-podinfo"
	volumeSnapshot = "guardrail-snapshot"

	tokenDir    = "/var/run/secrets/guardrail.dev/token" //nolint:gosec // a mount path, not a credential
	caDir       = "/var/run/secrets/guardrail.dev/ca"
	podInfoDir  = "/var/run/guardrail/podinfo"
	snapshotDir = "/var/run/guardrail/snapshot"

	portNameProxy = "guard-proxy"
	portNameAdmin = "guard-admin"

	// volumeNoAPIToken is an empty, read-only volume the guard mounts at
	// serviceAccountTokenDir. The apiserver's ServiceAccount admission plugin mounts the
	// pod's Kubernetes API token into every container without a mount at that path, and it
	// runs again after the injector has added the guard (a webhook's change re-runs the
	// in-tree plugins); the guard never calls the Kubernetes API, so it gets no token.
	volumeNoAPIToken       = "guardrail-no-api-token"
	serviceAccountTokenDir = "/var/run/secrets/kubernetes.io/serviceaccount" //nolint:gosec // a mount path, not a credential

	// tokenExpirationSeconds is the projected token's lifetime; the kubelet refreshes it
	// at 80% of it.
	tokenExpirationSeconds = 3600
	// guardUID is the user and group the guard runs as, and no app container of a
	// namespace labelled required may run as it. It is one no common image uses, so that an
	// app whose image sets its user (which admission cannot see) is not the guard's user
	// either: not 0 (root), 1–999 (distributions' system users: nginx 101, postgres and
	// redis 999), 1000–1001 (the first user: node, bitnami, UBI), 1337 and 2102 (the Istio
	// and Linkerd proxies), 65532 (distroless and Chainguard "nonroot", the operator's own
	// image) or 65534 (nobody). Distributions hand out users upward from 1000, so a high
	// one is rarely taken; it stays below 65536 for pods in user namespaces
	// (hostUsers: false), which map 65536 IDs.
	guardUID = 41352
)

// The guard's flags that the injector sets (guardv1 names them for both).
const (
	flagListen            = guardv1.FlagListen
	flagAdminListen       = guardv1.FlagAdminListen
	flagOpenAIUpstream    = guardv1.FlagOpenAIUpstream
	flagAnthropicUpstream = guardv1.FlagAnthropicUpstream
	flagGeminiUpstream    = guardv1.FlagGeminiUpstream
	flagControlPlane      = guardv1.FlagControlPlane
	flagTokenFile         = guardv1.FlagTokenFile
	flagCAFile            = guardv1.FlagCAFile
	flagSnapshotDir       = guardv1.FlagSnapshotDir
	flagMCPUpstream       = guardv1.FlagMCPUpstream
	flagProvider          = guardv1.FlagProvider
	flagAuditLog          = guardv1.FlagAuditLog
)

// Environment variables the injector sets on app containers that do not set them.
const (
	envOpenAIBaseURL    = "OPENAI_BASE_URL"
	envAnthropicBaseURL = "ANTHROPIC_BASE_URL"
	// envGeminiBaseURL is the base URL @google/genai reads in Node.js (its browser build
	// reads no environment); it appends the API version (/v1beta) itself.
	envGeminiBaseURL = "GOOGLE_GEMINI_BASE_URL"
)

// The guard's Go runtime settings, derived from its resources.
const (
	envGOMAXPROCS = "GOMAXPROCS"
	envGOMEMLIMIT = "GOMEMLIMIT"
)

// systemNamespaces are never injected, whatever their labels say.
var systemNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true}
