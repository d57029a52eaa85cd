package injection

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/guardrail-dev/guardrail-operator/controllers/certs"
)

// A shared guard is the guard alone in a pod of its own, serving the apps that call it
// through a Service instead of a sidecar on 127.0.0.1. The injector's rendering makes it,
// with one difference: its proxy listens on every address of its pod (--listen=:PORT).
// VerifyGuard accepts that listener only for a guard without ModelProviders: a guard that
// others can reach must not attach the platform's credential to their calls. A SharedGuard
// in ExtProc mode runs the Envoy external processor in that pod instead (extproc.go).
// With spec.tls the proxy serves HTTPS (SharedGuardPodWithTLS): the pod mounts the two
// keys of the Secret named there, as for the processor, and the proxy takes them as
// --tls-cert-file and --tls-key-file. A sidecar, which apps reach on loopback, never
// takes either.

// Renderer renders the pods of shared guards as the injector renders guards, with the
// manager's settings and CA.
type Renderer struct {
	config Config
	ca     func() ([]byte, error)
}

// NewRenderer returns the renderer of o's guards: o.Config with the defaults Setup
// applies, and the CA in o.CertDir.
func NewRenderer(o Options) (*Renderer, error) {
	cfg, err := o.guardConfig()
	if err != nil {
		return nil, err
	}
	cfg.NativeSidecars = false // the guard is the pod's only container
	return &Renderer{config: cfg, ca: (&FileCA{Path: filepath.Join(o.CertDir, certs.CAFile)}).Get}, nil
}

// NewRendererFor returns a renderer of cfg's guards trusting the CA ca returns (tests).
func NewRendererFor(cfg Config, ca func() ([]byte, error)) *Renderer {
	cfg.NativeSidecars = false
	return &Renderer{config: cfg, ca: ca}
}

// Guard is what every guard the renderer renders shares (VerifyGuard's g).
func (r *Renderer) Guard() Guard { return r.config.Guard() }

// ErrNoCA is SharedGuardPod's error while the operator's CA is not written yet.
var ErrNoCA = errors.New("the operator's CA certificate is not available yet")

// SharedGuardPod renders a shared guard's pod: labels, plus the injector's marks; the
// guard with the settings the annotations choose (the injector's annotations:
// guardrail.dev/cpu, guardrail.dev/openai-upstream, guardrail.dev/audit-log, …) on the
// manager's defaults, and no ModelProvider whatever its namespace says. It returns the
// annotations refused, each with its reason, and an error when the pod cannot be
// rendered (no CA yet) or would not verify. The proxy serves cleartext HTTP.
func (r *Renderer) SharedGuardPod(labels, annotations map[string]string) (corev1.PodTemplateSpec, []string, error) {
	return r.SharedGuardPodWithTLS(labels, annotations, "")
}

// SharedGuardPodWithTLS is SharedGuardPod for a proxy that serves HTTPS (HTTP/1.1 and
// HTTP/2 by ALPN) with the certificate and key of the kubernetes.io/tls Secret tlsSecret
// of the pod's namespace (a SharedGuard's spec.tls.secretName), or cleartext HTTP when
// tlsSecret is "": the Secret's tls.crt and tls.key are mounted read-only at tlsDir
// (tlsVolumeFor) and passed as --tls-cert-file and --tls-key-file (withTLS), as for the
// Envoy external processor. The Secret is not read here.
func (r *Renderer) SharedGuardPodWithTLS(labels, annotations map[string]string, tlsSecret string) (corev1.PodTemplateSpec, []string, error) {
	caPEM, err := r.ca()
	if err != nil || len(caPEM) == 0 {
		return corev1.PodTemplateSpec{}, nil, ErrNoCA
	}
	if _, ok := annotations[guardv1.AnnotationMCPUpstreams]; ok {
		return corev1.PodTemplateSpec{}, nil, fmt.Errorf("a shared guard fronts no MCP server (annotation %s)", guardv1.AnnotationMCPUpstreams)
	}
	pod := &corev1.Pod{}
	pod.Labels = maps.Clone(labels)
	pod.Annotations = maps.Clone(annotations)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	// Empty on a pod: no provider, whatever the namespace's default.
	pod.Annotations[guardv1.AnnotationProvider] = ""
	s, refused := resolveSettings(pod.Annotations, &r.config)
	s.shared = true
	// Nothing in the pod needs the Kubernetes API, and no app's environment is there
	// for Service links to fill.
	pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	pod.Spec.EnableServiceLinks = ptr.To(false)
	render(pod, &r.config, s, caPEM)
	if tlsSecret != "" {
		guard, _ := findGuard(pod)
		withTLS(guard)
		pod.Spec.Volumes = append(pod.Spec.Volumes, tlsVolumeFor(tlsSecret))
	}
	if err := VerifyGuard(pod, r.config.Guard()); err != nil {
		return corev1.PodTemplateSpec{}, nil, fmt.Errorf("the shared guard's pod would not verify: %w", err)
	}
	msgs := make([]string, len(refused))
	for i, f := range refused {
		msgs[i] = f.String()
	}
	return corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}, msgs, nil
}

// listensBeyondLoopback reports whether a guard container's proxy listens on every
// address of its pod (a shared guard) rather than on 127.0.0.1.
func listensBeyondLoopback(c *corev1.Container) bool {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--"+flagListen+"="); ok {
			return strings.HasPrefix(v, ":")
		}
	}
	return false
}

// Renderer is the renderer of the shared guards of the injector these flags configure;
// nil with --enable-injection=false, where no guard is rendered.
func (f *Flags) Renderer(ctx context.Context, mgr ctrl.Manager) (*Renderer, error) {
	if !f.enabled {
		return nil, nil
	}
	o, err := f.options(ctx, mgr)
	if err != nil {
		return nil, err
	}
	return NewRenderer(o)
}

// listenHost is the host of the guard's --listen: 127.0.0.1 for a sidecar, every address
// of the pod for a shared guard.
func listenHost(s guardSettings) string {
	if s.shared {
		return ""
	}
	return "127.0.0.1"
}
