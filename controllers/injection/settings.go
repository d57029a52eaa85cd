package injection

import (
	"fmt"
	"net/url"
	"strconv"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	mcpupstream "github.com/guardrail-dev/guardrail-operator/runtime/mcp/upstream"
)

// Config is what the manager decides for every guard it injects. The resource and upstream
// fields are defaults that pod annotations override.
type Config struct {
	// Image is the guard's container image.
	Image string
	// Command runs the guard in Image; the operator's image carries it as /guard (its
	// entrypoint is the manager). Empty uses the image's entrypoint.
	Command []string
	// ExtProcImage is the image of the Envoy external processor (guard-extproc, at
	// /guard-extproc) that ExtProc SharedGuards run (extproc.go); empty: none runs, and no
	// pod running it verifies.
	ExtProcImage string
	// ImagePullPolicy of the guard's container; empty lets the apiserver default it.
	ImagePullPolicy corev1.PullPolicy
	// ProxyPort is the loopback port the guard proxies on; app containers get base URLs
	// pointing at it.
	ProxyPort int32
	// AdminPort serves the guard's /healthz, /readyz and /metrics (probes hit it).
	AdminPort int32
	// ControlPlaneURL is the operator's control-plane endpoint the guard subscribes to.
	ControlPlaneURL string
	// OperatorNamespace is never injected.
	OperatorNamespace string
	// NativeSidecars renders the guard as an init container with restartPolicy Always
	// (Kubernetes 1.29 and later); false renders it as the first regular container.
	NativeSidecars bool
	// Version is written into AnnotationInjectorVersion.
	Version string

	// Resources are the guard's default requests and limits. A zero CPULimit means none.
	CPURequest, MemoryRequest, CPULimit, MemoryLimit resource.Quantity
	// OpenAIUpstream, AnthropicUpstream and GeminiUpstream are the default provider base
	// URLs.
	OpenAIUpstream, AnthropicUpstream, GeminiUpstream string
	// AuditLog is the default of the guard's audit log (audit.go).
	AuditLog bool
	// Tracing is the tracing setting of the guards injected now, off when zero, and
	// PreviousTracing the earlier ones whose guards still verify (tracing.go).
	Tracing         Tracing
	PreviousTracing []Tracing
}

// guardSettings are the per-pod values: the manager's defaults with the pod's annotations
// applied.
type guardSettings struct {
	cpuRequest, memoryRequest, cpuLimit, memoryLimit resource.Quantity
	openAIUpstream, anthropicUpstream                string
	// geminiUpstream is empty in a guard injected before the injector rendered it: that
	// guard has no --gemini-upstream and uses its own default, the Gemini API.
	geminiUpstream string
	mcpUpstreams   []mcpupstream.Upstream
	// providers are the ModelProviders the pod may use (resolveProviders), sorted by name.
	providers []chosenProvider
	// auditLog turns the guard's audit log on (audit.go).
	auditLog bool
	// shared renders the proxy on every address of the pod, not 127.0.0.1: a shared
	// guard's pod (shared.go), never an injected sidecar.
	shared bool
	// tracing is the guard's tracing setting, the manager's (tracing.go); no annotation
	// sets it.
	tracing Tracing
}

// refusal is an annotation value the injector did not accept.
type refusal struct {
	annotation string
	reason     string
}

func (r refusal) String() string {
	return fmt.Sprintf("annotation %s %s; the default is used", r.annotation, r.reason)
}

// resolveSettings applies the pod's annotations to the defaults. Each value that does not
// parse is refused and the default kept; the pod stays injectable.
func resolveSettings(annotations map[string]string, cfg *Config) (guardSettings, []refusal) {
	s := guardSettings{
		cpuRequest: cfg.CPURequest, memoryRequest: cfg.MemoryRequest,
		cpuLimit: cfg.CPULimit, memoryLimit: cfg.MemoryLimit,
		openAIUpstream: cfg.OpenAIUpstream, anthropicUpstream: cfg.AnthropicUpstream, geminiUpstream: cfg.GeminiUpstream,
		tracing: cfg.Tracing.normalized(),
	}
	var refused []refusal
	refused = append(refused, resolveAuditLog(annotations, cfg, &s)...)
	quantity := func(key string, into *resource.Quantity) {
		raw, ok := annotations[key]
		if !ok {
			return
		}
		q, err := resource.ParseQuantity(raw)
		switch {
		case err != nil:
			refused = append(refused, refusal{key, fmt.Sprintf("is not a Kubernetes quantity (%s)", strconv.Quote(truncate(raw)))})
		case q.Sign() <= 0:
			refused = append(refused, refusal{key, fmt.Sprintf("must be positive, got %s", strconv.Quote(truncate(raw)))})
		default:
			*into = q
		}
	}
	quantity(guardv1.AnnotationCPU, &s.cpuRequest)
	quantity(guardv1.AnnotationMemory, &s.memoryRequest)
	quantity(guardv1.AnnotationCPULimit, &s.cpuLimit)
	quantity(guardv1.AnnotationMemoryLimit, &s.memoryLimit)
	upstream := func(key string, into *string) {
		raw, ok := annotations[key]
		if !ok {
			return
		}
		if reason := checkUpstream(raw); reason != "" {
			refused = append(refused, refusal{key, reason})
			return
		}
		*into = raw
	}
	upstream(guardv1.AnnotationOpenAIUpstream, &s.openAIUpstream)
	upstream(guardv1.AnnotationAnthropicUpstream, &s.anthropicUpstream)
	upstream(guardv1.AnnotationGeminiUpstream, &s.geminiUpstream)
	if raw, ok := annotations[guardv1.AnnotationMCPUpstreams]; ok {
		ups, err := mcpupstream.ParseList(raw)
		if err != nil {
			refused = append(refused, refusal{guardv1.AnnotationMCPUpstreams, "is refused (" + err.Error() + "): no MCP server is fronted"})
		} else {
			s.mcpUpstreams = ups
		}
	}

	// A request above its limit would make the apiserver refuse the whole pod: the limit
	// is what the user asked to bound, so the request comes down to it.
	if !s.cpuLimit.IsZero() && s.cpuRequest.Cmp(s.cpuLimit) > 0 {
		refused = append(refused, refusal{guardv1.AnnotationCPU, fmt.Sprintf("(%s) exceeds the CPU limit (%s); the request is lowered to the limit", s.cpuRequest.String(), s.cpuLimit.String())})
		s.cpuRequest = s.cpuLimit
	}
	if !s.memoryLimit.IsZero() && s.memoryRequest.Cmp(s.memoryLimit) > 0 {
		refused = append(refused, refusal{guardv1.AnnotationMemory, fmt.Sprintf("(%s) exceeds the memory limit (%s); the request is lowered to the limit", s.memoryRequest.String(), s.memoryLimit.String())})
		s.memoryRequest = s.memoryLimit
	}
	return s, refused
}

// checkUpstream says why raw is not a provider base URL the guard accepts, or "" when it
// is. The value is not echoed: a URL may carry credentials in its user-info.
func checkUpstream(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an absolute http or https URL"
	case u.Host == "":
		return "must name a host"
	case u.User != nil:
		return "must not carry credentials (set them in the app's API key instead)"
	case u.RawQuery != "" || u.Fragment != "":
		return "must not have a query or fragment"
	}
	return ""
}

// truncate bounds a user's value quoted in a message.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// gomaxprocs is the guard's GOMAXPROCS: the CPU limit rounded up, or without a limit the
// request rounded up, and at least 1. The guard is latency-bound with a small heap; extra
// Ps on a node with many cores only add scheduler and GC work (measured: 0.42 → 0.37
// CPU-seconds per 1,000 requests at GOMAXPROCS=1 for a 1-CPU guard).
func gomaxprocs(s guardSettings) int64 {
	q := s.cpuLimit
	if q.IsZero() {
		q = s.cpuRequest
	}
	n := (q.MilliValue() + 999) / 1000
	if n < 1 {
		n = 1
	}
	return n
}

// gomemlimit is 90% of the memory limit in bytes, leaving room for what the Go runtime does
// not account (stacks, cgo-free overhead) before the kernel's OOM killer; 0 without a limit.
func gomemlimit(s guardSettings) int64 {
	if s.memoryLimit.IsZero() {
		return 0
	}
	return s.memoryLimit.Value() / 10 * 9
}
