package injection

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	corev1 "k8s.io/api/core/v1"

	"github.com/guardrail-dev/guardrail-operator/internal/serving"
)

// Flags are the manager's command-line settings of the injector. main binds them, passes
// WebhookServer to the manager and calls Setup.
type Flags struct {
	enabled               bool
	webhookPort           int
	certDir               string
	certManagement        string
	operatorNamespace     string
	controlPlaneURL       string
	guardImage            string
	extProcImage          string
	guardCommand          string
	pullPolicy            string
	proxyPort, adminPort  int
	cpu, memory           string
	cpuLimit, memoryLimit string
	openAI, anthropic     string
	gemini                string
	nativeSidecars        string
	auditLog              bool
	tracing               Tracing
	previousTracing       []Tracing
	tracingHeaders        TracingHeaders
	tracingClientCert     TracingClientCert
}

// The flags' defaults of the guard's resources and upstreams.
const (
	defaultCPURequest        = "100m"
	defaultMemoryRequest     = "64Mi"
	defaultMemoryLimit       = "256Mi"
	defaultOpenAIUpstream    = "https://api.openai.com"
	defaultAnthropicUpstream = "https://api.anthropic.com"
	defaultGeminiUpstream    = "https://generativelanguage.googleapis.com"
)

// Certificate management modes (--cert-management).
const (
	CertsSelf     = "self"
	CertsExternal = "external"
)

// Bind registers the flags on fs.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.BoolVar(&f.enabled, "enable-injection", true, "Serve the pod webhook that injects the guard sidecar.")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&f.certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory of the serving "+
		"certificate (tls.crt, tls.key) and its CA (ca.crt), shared by the webhook and the control-plane server.")
	fs.StringVar(&f.certManagement, "cert-management", CertsSelf, "self: the manager creates and rotates its CA and serving "+
		"certificate in the Secret "+CertSecretName+" and writes them into --webhook-cert-dir; external: another tool "+
		"(cert-manager) provides --webhook-cert-dir and the webhook configuration's caBundle.")
	fs.StringVar(&f.operatorNamespace, "operator-namespace", "", "The operator's namespace (never injected; home of "+
		"the certificate Secret); defaults to $POD_NAMESPACE, then the service account's namespace.")
	fs.StringVar(&f.controlPlaneURL, "control-plane-url", "", "URL injected guards subscribe to; defaults to "+
		"https://"+ControlPlaneServiceName+".<operator-namespace>.svc:9444.")
	fs.StringVar(&f.guardImage, "guard-image", "", "Image of the injected guard; defaults to the manager's own image "+
		"(read from its pod, $POD_NAME), which carries the guard binary.")
	fs.StringVar(&f.extProcImage, "guard-extproc-image", "", "Image of the Envoy external processor (/guard-extproc) that "+
		"SharedGuards in ExtProc mode run (docs/shared-guard.md); defaults to the guard's image's repository with -extproc "+
		"appended and the same tag, as make release names it (none when the guard's image is pinned by digest alone).")
	fs.StringVar(&f.guardCommand, "guard-command", "/guard", "Path of the guard binary in --guard-image; empty runs the image's entrypoint.")
	fs.StringVar(&f.pullPolicy, "guard-image-pull-policy", "", "Pull policy of the guard's image; empty lets the apiserver default it.")
	fs.IntVar(&f.proxyPort, "guard-proxy-port", 15080, "Loopback port of the guard's proxy, where app base URLs point.")
	fs.IntVar(&f.adminPort, "guard-admin-port", 15090, "Port of the guard's /healthz, /readyz and /metrics.")
	fs.StringVar(&f.cpu, "guard-cpu-request", defaultCPURequest, "Default CPU request of the guard (annotation "+guardv1.AnnotationCPU+").")
	fs.StringVar(&f.memory, "guard-memory-request", defaultMemoryRequest, "Default memory request of the guard (annotation "+guardv1.AnnotationMemory+").")
	fs.StringVar(&f.cpuLimit, "guard-cpu-limit", "", "Default CPU limit of the guard, empty for none (annotation "+guardv1.AnnotationCPULimit+").")
	fs.StringVar(&f.memoryLimit, "guard-memory-limit", defaultMemoryLimit, "Default memory limit of the guard, empty for none (annotation "+guardv1.AnnotationMemoryLimit+").")
	fs.StringVar(&f.openAI, "guard-openai-upstream", defaultOpenAIUpstream, "Default OpenAI-compatible provider (annotation "+guardv1.AnnotationOpenAIUpstream+").")
	fs.StringVar(&f.anthropic, "guard-anthropic-upstream", defaultAnthropicUpstream, "Default Anthropic provider (annotation "+guardv1.AnnotationAnthropicUpstream+").")
	fs.StringVar(&f.gemini, "guard-gemini-upstream", defaultGeminiUpstream, "Default Gemini API endpoint (annotation "+guardv1.AnnotationGeminiUpstream+").")
	fs.BoolVar(&f.auditLog, "guard-audit-log", false, "Injected guards write their audit log, a JSON line per "+
		"decision, to stdout (docs/audit-log.md); annotation "+guardv1.AnnotationAuditLog+" overrides it per pod.")
	fs.StringVar(&f.tracing.Endpoint, "guard-otel-endpoint", "", "OTLP endpoint (a collector's base URL, http:// or "+
		"https://) injected guards send their trace spans to, as OTEL_EXPORTER_OTLP_ENDPOINT (docs/tracing.md); empty: tracing off.")
	fs.StringVar(&f.tracing.Protocol, "guard-otel-protocol", otelProtocolHTTP, "OTEL_EXPORTER_OTLP_PROTOCOL of injected guards: "+
		otelProtocolHTTP+" or "+otelProtocolGRPC+".")
	fs.StringVar(&f.tracing.Sampler, "guard-otel-sampler", otelDefaultSampler, "OTEL_TRACES_SAMPLER of injected guards.")
	fs.StringVar(&f.tracing.SamplerArg, "guard-otel-sampler-arg", "", "OTEL_TRACES_SAMPLER_ARG of injected guards, the ratio "+
		"of a traceidratio sampler (0 to 1); empty: the guard's default, 1.")
	fs.StringVar(&f.tracing.ResourceAttributes, "guard-otel-resource-attributes", "", "OTEL_RESOURCE_ATTRIBUTES of injected "+
		"guards, key=value,... (the guard sets service.name and its pod's k8s.pod.name and k8s.namespace.name itself).")
	fs.Func("guard-otel-previous", "An earlier tracing setting whose guards still verify until their pods are re-created, "+
		`as JSON: {"endpoint":"…","protocol":"…","sampler":"…","samplerArg":"…","resourceAttributes":"…"}; repeatable.`,
		func(raw string) error {
			t, err := parsePreviousTracing(raw)
			if err != nil {
				return err
			}
			f.previousTracing = append(f.previousTracing, t)
			return nil
		})
	fs.Func("guard-otel-headers-secret", "NAME/KEY of a Secret in the operator's namespace whose key holds the headers "+
		"of the guards' OTLP exports (a collector's token), as OTEL_EXPORTER_OTLP_HEADERS writes them: key=value,... with "+
		"URL-encoded values. The control plane delivers them to verified guards, in memory only, for --guard-otel-endpoint; "+
		"they are never in a pod (docs/tracing.md).",
		func(raw string) error {
			name, key, err := parseTracingHeadersSecret(raw)
			f.tracingHeaders.Secret, f.tracingHeaders.Key = name, key
			return err
		})
	fs.Func("guard-otel-client-cert-secret", "NAME of a kubernetes.io/tls Secret in the operator's namespace (tls.crt, "+
		"tls.key, optionally ca.crt) holding the client certificate the guards present to the collector of "+
		"--guard-otel-endpoint (https://) for mTLS, and the CA its certificate must chain to. The control plane delivers "+
		"it to verified guards, in memory only; it is never in a pod (docs/tracing.md).",
		func(raw string) error {
			name, err := parseTracingClientCertSecret(raw)
			f.tracingClientCert.Secret = name
			return err
		})
	fs.StringVar(&f.nativeSidecars, "native-sidecars", "auto", "auto: inject the guard as a native sidecar when the "+
		"apiserver is 1.29 or later, else as a regular container; true or false forces one shape.")
}

// TracingHeaders is the --guard-otel-headers-secret setting, for the control plane: an
// error when it is set without --guard-otel-endpoint, which the headers are for.
func (f *Flags) TracingHeaders() (TracingHeaders, error) {
	if !f.tracingHeaders.On() {
		return TracingHeaders{}, nil
	}
	if !f.tracing.On() {
		return TracingHeaders{}, errors.New("--guard-otel-headers-secret needs --guard-otel-endpoint: the headers are that collector's")
	}
	h := f.tracingHeaders
	h.Endpoint = f.tracing.Endpoint
	return h, nil
}

// TracingClientCert is the --guard-otel-client-cert-secret setting, for the control plane:
// an error when it is set without --guard-otel-endpoint, which the certificate is for, or
// with one that is not https:// (a plaintext export presents no certificate).
func (f *Flags) TracingClientCert() (TracingClientCert, error) {
	if !f.tracingClientCert.On() {
		return TracingClientCert{}, nil
	}
	if !f.tracing.On() {
		return TracingClientCert{}, errors.New("--guard-otel-client-cert-secret needs --guard-otel-endpoint: the certificate is for that collector")
	}
	if u, err := url.Parse(f.tracing.Endpoint); err != nil || u.Scheme != "https" {
		return TracingClientCert{}, errors.New("--guard-otel-client-cert-secret needs an https:// --guard-otel-endpoint: " +
			"a plaintext export presents no client certificate")
	}
	c := f.tracingClientCert
	c.Endpoint = f.tracing.Endpoint
	return c, nil
}

// WebhookServer is the manager's webhook server on --webhook-port with --webhook-cert-dir.
// Like the metrics endpoint it speaks HTTP/1.1 only (CVE-2023-44487), and a client that
// is slow to send a request or read an answer is cut off (serving.WebhookTimeouts).
func (f *Flags) WebhookServer() webhook.Server {
	return serving.WebhookServer(webhook.Options{
		Port:    f.webhookPort,
		CertDir: f.certDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}, serving.WebhookTimeouts)
}

// Setup validates the flags and sets the injector up on mgr (a no-op with
// --enable-injection=false).
func (f *Flags) Setup(ctx context.Context, mgr ctrl.Manager) error {
	if !f.enabled {
		return nil
	}
	o, err := f.options(ctx, mgr)
	if err != nil {
		return err
	}
	return Setup(ctx, mgr, o)
}

func (f *Flags) options(ctx context.Context, mgr ctrl.Manager) (Options, error) {
	ns := f.operatorNamespace
	if ns == "" {
		ns = os.Getenv("POD_NAMESPACE")
	}
	if ns == "" {
		if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	if ns == "" {
		return Options{}, fmt.Errorf("--operator-namespace is required outside a pod")
	}
	image := f.guardImage
	if image == "" {
		podName := os.Getenv("POD_NAME")
		if podName == "" {
			return Options{}, fmt.Errorf("--guard-image is required outside a pod (no $POD_NAME)")
		}
		var err error
		if image, err = OwnImage(ctx, mgr.GetAPIReader(), ns, podName, "manager"); err != nil {
			return Options{}, fmt.Errorf("reading the manager's image for --guard-image: %w", err)
		}
	}
	extProc := f.extProcImageFor(image)
	if extProc != "" && f.extProcImage != "" && imageRepository(extProc) == imageRepository(image) && f.guardCommand == extProcCommandPath {
		return Options{}, fmt.Errorf("--guard-extproc-image and --guard-image name one repository and --guard-command is %s: "+
			"the guard and the Envoy external processor would be indistinguishable", extProcCommandPath)
	}
	for _, p := range []int{f.proxyPort, f.adminPort} {
		if p < 1 || p > 65535 {
			return Options{}, fmt.Errorf("guard port %d is out of range", p)
		}
	}
	if f.proxyPort == f.adminPort {
		return Options{}, fmt.Errorf("--guard-proxy-port and --guard-admin-port must differ")
	}
	cfg := Config{
		Image:             image,
		Command:           commandOf(f.guardCommand),
		ExtProcImage:      extProc,
		ImagePullPolicy:   corev1.PullPolicy(f.pullPolicy),
		ProxyPort:         int32(f.proxyPort),
		AdminPort:         int32(f.adminPort),
		ControlPlaneURL:   f.controlPlaneURL,
		OperatorNamespace: ns,
		OpenAIUpstream:    f.openAI,
		AnthropicUpstream: f.anthropic,
		GeminiUpstream:    f.gemini,
		AuditLog:          f.auditLog,
		PreviousTracing:   f.previousTracing,
	}
	if f.tracing.On() {
		if err := f.tracing.check(); err != nil {
			return Options{}, fmt.Errorf("--guard-otel-* %w", err)
		}
		cfg.Tracing = f.tracing.normalized()
	}
	for _, q := range []struct {
		flag, value string
		into        *resource.Quantity
	}{
		{"--guard-cpu-request", f.cpu, &cfg.CPURequest},
		{"--guard-memory-request", f.memory, &cfg.MemoryRequest},
		{"--guard-cpu-limit", f.cpuLimit, &cfg.CPULimit},
		{"--guard-memory-limit", f.memoryLimit, &cfg.MemoryLimit},
	} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil || v.Sign() <= 0 {
			return Options{}, fmt.Errorf("%s=%q is not a positive quantity", q.flag, q.value)
		}
		*q.into = v
	}
	for flagName, u := range map[string]string{"--guard-openai-upstream": f.openAI, "--guard-anthropic-upstream": f.anthropic,
		"--guard-gemini-upstream": f.gemini} {
		if reason := checkUpstream(u); reason != "" {
			return Options{}, fmt.Errorf("%s %s", flagName, reason)
		}
	}
	o := Options{Config: cfg, CertDir: f.certDir}
	switch f.certManagement {
	case CertsSelf:
		o.SelfManagedCerts = true
	case CertsExternal:
	default:
		return Options{}, fmt.Errorf("--cert-management must be %s or %s, got %q", CertsSelf, CertsExternal, f.certManagement)
	}
	switch f.nativeSidecars {
	case "auto":
	case "true", "false":
		o.NativeSidecars = ptr.To(f.nativeSidecars == "true")
	default:
		return Options{}, fmt.Errorf("--native-sidecars must be auto, true or false, got %q", f.nativeSidecars)
	}
	return o, nil
}

// Guard is the guard these flags render, with the operator's namespace and the guard's
// image resolved by the caller (the manager's namespace and own image by default): what
// the manager's cache and control plane verify pods against before the injector is set
// up. It agrees with Config.Guard of the injector Setup makes.
func (f *Flags) Guard(operatorNamespace, image string) Guard {
	u := f.controlPlaneURL
	if u == "" {
		u = DefaultControlPlaneURL(operatorNamespace)
	}
	return Guard{Image: image, Command: commandOf(f.guardCommand), ExtProcImage: f.extProcImageFor(image), ProxyPort: int32(f.proxyPort), AdminPort: int32(f.adminPort), ControlPlaneURL: u,
		Tracing: acceptedTracing(f.tracing, f.previousTracing)}
}

// extProcImageFor is --guard-extproc-image, or the default beside guardImage.
func (f *Flags) extProcImageFor(guardImage string) string {
	if f.extProcImage != "" {
		return f.extProcImage
	}
	return DefaultExtProcImage(guardImage)
}

// GuardImage is --guard-image, empty for the manager's own image.
func (f *Flags) GuardImage() string { return f.guardImage }

// OperatorNamespace is --operator-namespace, empty for the manager's own namespace.
func (f *Flags) OperatorNamespace() string { return f.operatorNamespace }

func commandOf(path string) []string {
	if path == "" {
		return nil
	}
	return []string{path}
}

// CertDir is the directory of the serving certificate (tls.crt, tls.key, ca.crt); the
// control-plane server serves from it too.
func (f *Flags) CertDir() string { return f.certDir }
