package injection

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/guardrail-dev/guardrail-operator/controllers/certs"
)

// Names of the objects the injector works with in the operator's namespace (config/).
const (
	// WebhookConfigName is the MutatingWebhookConfiguration whose caBundle is kept current.
	WebhookConfigName = "guardrail-pod-injector"
	// WebhookServiceName fronts the manager's webhook server.
	WebhookServiceName = "guardrail-webhook"
	// ControlPlaneServiceName fronts the control-plane server; it shares the certificate.
	ControlPlaneServiceName = "guardrail-control-plane"
	// CertSecretName holds the self-managed CA and serving certificate.
	CertSecretName = "guardrail-webhook-cert"
	// ControlPlanePort is the control-plane Service's port.
	ControlPlanePort = 9444
)

// Options configure the injector's wiring into the manager.
type Options struct {
	// Config is the guard's configuration. An empty ControlPlaneURL becomes the
	// control-plane Service's URL; an empty Version the binary's module version.
	Config Config
	// CertDir holds tls.crt, tls.key and ca.crt for the webhook server (and the control
	// plane); its ca.crt is what injected guards trust.
	CertDir string
	// SelfManagedCerts has the manager create and rotate its CA and serving certificate;
	// false expects someone else (cert-manager) to provide CertDir and the caBundle.
	SelfManagedCerts bool
	// ExtraDNSNames are added to the serving certificate (tests and make dev: localhost).
	ExtraDNSNames []string
	// NativeSidecars forces the guard's shape; nil decides from the apiserver's version
	// (native sidecars from Kubernetes 1.29).
	NativeSidecars *bool
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=modelproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=update;patch,resourceNames=guardrail-pod-injector
// The certificate rotator caches the Secrets of the operator's namespace and writes one.
// +kubebuilder:rbac:groups="",namespace=guardrail-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=guardrail-system,resources=secrets,verbs=update,resourceNames=guardrail-webhook-cert

// Setup registers the injector on mgr's webhook server, with its certificates and its
// events controller, and adds readiness checks that fail until the webhook can serve.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	cfg, err := o.guardConfig()
	if err != nil {
		return err
	}
	if o.NativeSidecars != nil {
		cfg.NativeSidecars = *o.NativeSidecars
	} else {
		native, err := ServerHasNativeSidecars(mgr.GetConfig())
		if err != nil {
			return fmt.Errorf("injection: reading the apiserver's version: %w", err)
		}
		cfg.NativeSidecars = native
	}
	ctrl.LoggerFrom(ctx).WithName("injection").Info("Injecting the guard", "nativeSidecars", cfg.NativeSidecars,
		"image", cfg.Image, "controlPlane", cfg.ControlPlaneURL, "version", cfg.Version)

	if o.SelfManagedCerts {
		ready, err := certs.Setup(mgr, certs.Options{
			Namespace:  cfg.OperatorNamespace,
			SecretName: CertSecretName,
			CertDir:    o.CertDir,
			DNSNames: append([]string{
				WebhookServiceName + "." + cfg.OperatorNamespace + ".svc",
				ControlPlaneServiceName + "." + cfg.OperatorNamespace + ".svc",
			}, o.ExtraDNSNames...),
			MutatingWebhooks: []string{WebhookConfigName},
		})
		if err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("webhook-certificates", ready); err != nil {
			return err
		}
	} else if err := mgr.AddReadyzCheck("webhook-certificates", certs.FilesPresent(o.CertDir)); err != nil {
		return err
	}
	h := Handler{
		Config:     cfg,
		Namespaces: mgr.GetCache(),
		Providers:  mgr.GetCache(),
		APIReader:  mgr.GetAPIReader(),
		CA:         (&FileCA{Path: filepath.Join(o.CertDir, certs.CAFile)}).Get,
		Decoder:    admission.NewDecoder(mgr.GetScheme()),
	}
	failClosed := h
	failClosed.FailClosed = true
	serve := &deferredWebhook{mgr: mgr, certDir: o.CertDir, register: func(srv webhook.Server) {
		srv.Register(WebhookPath, &webhook.Admission{Handler: &h})
		srv.Register(WebhookPathRequired, &webhook.Admission{Handler: &failClosed})
	}}
	if err := mgr.Add(serve); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook-server", serve.started); err != nil {
		return err
	}

	// The manager's cache holds exactly the pods labelled guardrail.dev/injected (true or
	// false), trimmed to metadata and phase (controllers.CacheOptions): one pod informer for
	// the whole manager. The events controller reads a new pod's spec from the apiserver.
	return (&EventReconciler{
		Pods:      mgr.GetCache(),
		APIReader: mgr.GetAPIReader(),
		Guard:     cfg.Guard(),
		Recorder:  mgr.GetEventRecorder("guardrail-injector"),
	}).SetupWithManager(mgr)
}

// guardConfig is o.Config with the defaults of an empty control-plane URL and version.
func (o Options) guardConfig() (Config, error) {
	cfg := o.Config
	if cfg.OperatorNamespace == "" {
		return cfg, errors.New("injection: the operator's namespace is not set")
	}
	if cfg.Image == "" {
		return cfg, errors.New("injection: the guard's image is not set")
	}
	if cfg.ControlPlaneURL == "" {
		cfg.ControlPlaneURL = DefaultControlPlaneURL(cfg.OperatorNamespace)
	}
	if cfg.Version == "" {
		cfg.Version = moduleVersion()
	}
	return cfg, nil
}

// DefaultControlPlaneURL is the control-plane Service's URL in the operator's namespace.
func DefaultControlPlaneURL(operatorNamespace string) string {
	return fmt.Sprintf("https://%s.%s.svc:%d", ControlPlaneServiceName, operatorNamespace, ControlPlanePort)
}

// ServerHasNativeSidecars reports whether the apiserver is Kubernetes 1.29 or later, where
// init containers with restartPolicy Always (native sidecars) are on by default.
func ServerHasNativeSidecars(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return false, err
	}
	return nativeSidecarsIn(info.GitVersion)
}

// nativeSidecarsIn reports whether a Kubernetes version ("v1.29.3-eks-…") has native
// sidecars on by default.
func nativeSidecarsIn(gitVersion string) (bool, error) {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil {
		return false, fmt.Errorf("apiserver version %q: %w", gitVersion, err)
	}
	return v.AtLeast(version.MajorMinor(1, 29)), nil
}

// OwnImage returns the image of the manager's own container, read from its pod: the guard
// ships in the manager's image, so by default injected guards match the operator's version.
func OwnImage(ctx context.Context, reader client.Reader, namespace, podName, container string) (string, error) {
	pod := &corev1.Pod{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: podName}, pod); err != nil {
		return "", err
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == container {
			return c.Image, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container %s", namespace, podName, container)
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// deferredWebhook starts the manager's webhook server once its certificate is in the
// certificate directory: the server reads it when it starts and fails without it, while a
// self-managed certificate is only written after the manager has started. Nothing else
// may call mgr.GetWebhookServer before (that adds the server to the manager).
type deferredWebhook struct {
	mgr      ctrl.Manager
	certDir  string
	register func(webhook.Server)

	mu     sync.Mutex
	server webhook.Server
}

// NeedLeaderElection is false: every replica serves the webhook.
func (d *deferredWebhook) NeedLeaderElection() bool { return false }

// Start waits for the certificate, then registers the handler and starts the server.
func (d *deferredWebhook) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("injection")
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		return certs.FilesPresent(d.certDir)(nil) == nil, nil
	})
	if err != nil {
		return nil //nolint:nilerr // the manager is stopping
	}
	srv := d.mgr.GetWebhookServer()
	d.register(srv)
	d.mu.Lock()
	d.server = srv
	d.mu.Unlock()
	log.Info("Serving the pod injector", "path", WebhookPath)
	return nil
}

// started is the readiness check of the webhook server.
func (d *deferredWebhook) started(req *http.Request) error {
	d.mu.Lock()
	srv := d.server
	d.mu.Unlock()
	if srv == nil {
		return errors.New("the webhook server waits for its certificate")
	}
	return srv.StartedChecker()(req)
}
