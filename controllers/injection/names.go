package injection

import (
	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	mcpupstream "github.com/guardrail-dev/guardrail-operator/runtime/mcp/upstream"
)

// Pod annotations a user may set to tune the injected guard. Each value that does not
// parse is refused with an admission warning and a Warning Event, and the manager's
// default is used instead (in a namespace labelled guardrail.dev/injection=required the
// pod is denied).
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
	// AnnotationMCPUpstreams lists MCP servers the guard fronts, "NAME=URL,NAME=URL":
	// each is passed to the guard as --mcp-upstream and given to the app containers as
	// GUARDRAIL_MCP_<NAME>_URL. A list with one bad pair is refused whole.
	AnnotationMCPUpstreams = mcpupstream.Annotation
	// AnnotationAuditLog ("true" or "false") turns the guard's audit log on or off for the
	// pod, overriding the manager's --guard-audit-log (audit.go).
	AnnotationAuditLog = "guardrail.dev/audit-log"
)

// Annotations the injector writes.
const (
	// AnnotationInjectorVersion records which injector version rendered the guard (the
	// Injected Event quotes it). Like every annotation it proves nothing: what marks a
	// guarded pod is its spec (VerifyGuard).
	AnnotationInjectorVersion = "guardrail.dev/injector-version"
	// AnnotationCABundle holds the PEM CA certificate of the operator's control plane. The
	// guard reads it through a downward-API volume: the pod lives in another namespace than
	// the operator's CA Secret, and an annotation is what a pod can mount of itself. A CA
	// rotation reaches a pod when the pod is re-created (the CA lives for ten years).
	AnnotationCABundle = "guardrail.dev/ca-bundle"
	// AnnotationInjectionWarnings lists, one a line, what the injector refused or could not
	// honour; the events controller turns each line into a Warning Event on the pod.
	AnnotationInjectionWarnings = "guardrail.dev/injection-warnings"
	// annotationDefaultContainer makes kubectl logs/exec pick the app, not the guard, in the
	// legacy shape where the guard is the first regular container.
	annotationDefaultContainer = "kubectl.kubernetes.io/default-container"
)

// Label values of the contract's labels (controlplane.LabelInject, LabelInjection,
// LabelInjected).
const (
	injectionEnabled  = "enabled"
	injectionRequired = "required"
	labelTrue         = "true"
	labelFalse        = "false"
)

// What the injector adds to a pod. Names are prefixed so they do not collide with an app's.
const (
	// ContainerName is the guard's container.
	ContainerName = "guardrail-guard"

	volumeToken    = "guardrail-token"
	volumeCA       = "guardrail-ca"
	volumePodInfo  = "guardrail-podinfo"
	volumeSnapshot = "guardrail-snapshot"

	tokenDir    = "/var/run/secrets/guardrail.dev/token" //nolint:gosec // a mount path, not a credential
	caDir       = "/var/run/secrets/guardrail.dev/ca"
	podInfoDir  = "/var/run/guardrail/podinfo"
	snapshotDir = "/var/run/guardrail/snapshot"

	// TokenPath, CAPath and LabelsPath are where the guard finds its token, the
	// operator's CA and the pod's labels (downward-API format: key="value" lines).
	TokenPath  = tokenDir + "/token"
	CAPath     = caDir + "/ca.crt"
	LabelsPath = podInfoDir + "/labels"

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

// The guard's own flags that the injector sets. The control-plane ones live in the
// contract package shared with the guard; these four predate it and are defined by
// cmd/guard.
const (
	flagListen            = "listen"
	flagAdminListen       = "admin-listen"
	flagOpenAIUpstream    = "openai-upstream"
	flagAnthropicUpstream = "anthropic-upstream"
	flagControlPlane      = controlplane.FlagControlPlane
	flagTokenFile         = controlplane.FlagTokenFile
	flagCAFile            = controlplane.FlagCAFile
	flagSnapshotDir       = controlplane.FlagSnapshotDir
	flagMCPUpstream       = mcpupstream.Flag
	flagProvider          = controlplane.FlagProvider
	// flagAuditLog is cmd/guard's --audit-log (FlagAuditLog there).
	flagAuditLog = "audit-log"
)

// Environment variables the injector sets on app containers that do not set them.
const (
	envOpenAIBaseURL    = "OPENAI_BASE_URL"
	envAnthropicBaseURL = "ANTHROPIC_BASE_URL"
)

// The guard's Go runtime settings, derived from its resources.
const (
	envGOMAXPROCS = "GOMAXPROCS"
	envGOMEMLIMIT = "GOMEMLIMIT"
)

// systemNamespaces are never injected, whatever their labels say.
var systemNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true}
