// Command manager runs the guardrail-operator controllers: the Classifier and Guardrail
// reconcilers (leader-elected), the pod webhook that injects the guard sidecar and the
// policy subscription injected guards connect to (both on every
// replica), with health probes and Prometheus metrics.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers"
	"github.com/guardrail-dev/guardrail-operator/controllers/classifier"
	"github.com/guardrail-dev/guardrail-operator/controllers/controlplane"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/controllers/sharedguard"
	"github.com/guardrail-dev/guardrail-operator/internal/serving"
)

func main() {
	var (
		metrics            metricsConfig
		probeAddr          string
		leaderElect        bool
		enableSharedGuards bool
		leaderNS           string
		watchNamespaces    string
		controlPlane       controlplane.Options
		injectionFlags     injection.Flags
		zapOpts            = zap.Options{Development: false}
		setupLog           = ctrl.Log.WithName("setup")
		scheme             = runtime.NewScheme()
		leaderLockID       = "guardrail-operator.guardrail.dev"
	)
	flag.StringVar(&metrics.bindAddress, "metrics-bind-address", ":8443", "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	flag.BoolVar(&metrics.secure, "metrics-secure", true, "Serve metrics over HTTPS to clients authenticated by a TokenReview and "+
		"authorized by a SubjectAccessReview (get on the non-resource URL /metrics). False serves plain HTTP to anyone who "+
		"can connect: bind it to loopback, e.g. --metrics-bind-address=127.0.0.1:8080.")
	flag.StringVar(&metrics.certDir, "metrics-cert-dir", "", "Directory holding tls.crt and tls.key for the metrics endpoint; "+
		"empty generates a self-signed certificate.")
	flag.BoolVar(&metrics.http2, "enable-http2", false, "Serve metrics over HTTP/2 as well; off by default against HTTP/2 "+
		"stream-reset attacks (CVE-2023-44487).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz probes bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader among replicas before reconciling.")
	flag.StringVar(&leaderNS, "leader-election-namespace", "", "Namespace of the leader election lease; defaults to the pod's namespace.")
	flag.StringVar(&watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces whose Classifiers, Guardrails "+
		"and Secrets the manager watches; empty watches all namespaces. With a list, the manager needs Secret access only "+
		"in those namespaces (config/scoped); objects elsewhere are ignored.")
	flag.StringVar(&controlPlane.BindAddress, "control-plane-bind-address", ":9444", "Address of the policy subscription "+
		"guards connect to (HTTPS, on every replica); 0 disables it.")
	flag.StringVar(&controlPlane.CertDir, "control-plane-cert-dir", "", "Directory holding tls.crt and tls.key of the "+
		"control plane; empty uses --webhook-cert-dir (one serving certificate for both). Served once they exist.")
	flag.DurationVar(&controlPlane.DecisionInterval, "decision-interval", 10*time.Second, "How often decisions counted by a "+
		"replica are written into Guardrail status, with their Events (at most once per Guardrail per interval).")
	flag.DurationVar(&controlPlane.LeaseDuration, "guard-lease-duration", guards.DefaultLeaseDuration, "How long a "+
		"guard counts as answering after its last poll (its Lease in the operator's namespace); a live guard polls every "+
		"30s. A guard that stops polling drops out of Guardrail status.enforcement within this bound.")
	flag.BoolVar(&classifier.AllowLocalURLs, "classifier-allow-local-urls", false, "Let Classifier backend URLs and ModelProvider "+
		"URLs name loopback, link-local or unspecified addresses (127.0.0.1, localhost, 169.254.169.254, ...); for development "+
		"only: a guard calls them from the app's pod, with the Classifier's or the ModelProvider's credential.")
	flag.BoolVar(&enableSharedGuards, "enable-shared-guards", true, "Reconcile SharedGuards (docs/shared-guard.md). Off, "+
		"none is reconciled and the manager needs no rights on Deployments, Services, EndpointSlices or "+
		"PodDisruptionBudgets; delete the SharedGuards first, since their Services stop following their pods.")
	flag.BoolVar(&controlPlane.AuditLog, "decision-audit-log", false, "Write a JSON line per decision count taken from a guard "+
		"(pod, guardrail, outcome, phase, category, count; never content) to stdout: docs/audit-log.md.")
	injectionFlags.Bind(flag.CommandLine)
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	if !metrics.secure && !metrics.loopback() {
		setupLog.Info("Serving metrics over plain HTTP without authentication on a non-loopback address",
			"address", metrics.bindAddress)
	}
	ctx := ctrl.SetupSignalHandler()
	restConfig := ctrl.GetConfigOrDie()
	install, err := installation(ctx, restConfig, scheme, &injectionFlags, watchNamespaces)
	if err != nil {
		setupLog.Error(err, "Unable to tell the operator's namespace and the guard it injects")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: scheme,
		// The metrics endpoint and the health probes are served below, with read, write
		// and idle timeouts that the manager's own servers lack (internal/serving).
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		Cache:                   install.Cache(),
		HealthProbeBindAddress:  "0",
		WebhookServer:           injectionFlags.WebhookServer(),
		LeaderElection:          leaderElect,
		LeaderElectionID:        leaderLockID,
		LeaderElectionNamespace: leaderNS,
	})
	if err != nil {
		setupLog.Error(err, "Unable to create the manager")
		os.Exit(1)
	}
	if err := serving.Metrics(mgr, metrics.options(), serving.MetricsTimeouts); err != nil {
		setupLog.Error(err, "Unable to serve metrics")
		os.Exit(1)
	}
	// Every health check added from here on is served by these probes.
	if mgr, err = serving.Probes(mgr, probeAddr, serving.ProbeTimeouts); err != nil {
		setupLog.Error(err, "Unable to serve the health probes")
		os.Exit(1)
	}
	if err := controllers.SetupWith(ctx, mgr, install); err != nil {
		setupLog.Error(err, "Unable to set up the controllers")
		os.Exit(1)
	}
	if err := injectionFlags.Setup(ctx, mgr); err != nil {
		setupLog.Error(err, "Unable to set up the pod injector")
		os.Exit(1)
	}
	if enableSharedGuards {
		if err := setupSharedGuards(ctx, mgr, &injectionFlags, install.OperatorNamespace); err != nil {
			setupLog.Error(err, "Unable to set up the shared guards")
			os.Exit(1)
		}
	}
	if controlPlane.CertDir == "" {
		controlPlane.CertDir = injectionFlags.CertDir()
	}
	controlPlane.LeaseNamespace = install.OperatorNamespace
	controlPlane.Guard = install.Guard
	if controlPlane.TracingHeaders, err = injectionFlags.TracingHeaders(); err != nil {
		setupLog.Error(err, "Unable to deliver the guards' OTLP headers")
		os.Exit(1)
	}
	if controlPlane.TracingClientCert, err = injectionFlags.TracingClientCert(); err != nil {
		setupLog.Error(err, "Unable to deliver the guards' client certificate for the collector")
		os.Exit(1)
	}
	controlPlane.AllowLocalClassifierURLs = classifier.AllowLocalURLs
	if _, err := controlplane.Setup(ctx, mgr, controlPlane); err != nil {
		setupLog.Error(err, "Unable to set up the control plane server")
		os.Exit(1)
	}
	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", healthz.Ping))

	setupLog.Info("Starting the manager", "watchNamespaces", watchNamespaces)
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "The manager stopped with an error")
		os.Exit(1)
	}
}

// installation reads what the cache and the control plane need to know before the manager
// exists: the operator's namespace (home of the guards' Leases) and the guard as the
// injector renders it (only pods whose spec carries it, value for value, may report). The
// namespace is --operator-namespace, else $POD_NAMESPACE, else the service account's; the
// guard's image --guard-image, else the manager's own image (read from its pod,
// $POD_NAME); the rest of the guard comes from the injector's flags (injection.Flags.Guard).
func installation(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, injectionFlags *injection.Flags, watchNamespaces string) (controllers.Options, error) {
	o := controllers.Options{WatchNamespaces: watchNamespaces}
	o.OperatorNamespace = injectionFlags.OperatorNamespace()
	if o.OperatorNamespace == "" {
		o.OperatorNamespace = os.Getenv("POD_NAMESPACE")
	}
	if o.OperatorNamespace == "" {
		if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
			o.OperatorNamespace = strings.TrimSpace(string(b))
		}
	}
	if o.OperatorNamespace == "" {
		return o, errors.New("--operator-namespace is required outside a pod")
	}
	image := injectionFlags.GuardImage()
	if image == "" {
		podName := os.Getenv("POD_NAME")
		if podName == "" {
			return o, errors.New("--guard-image is required outside a pod (no $POD_NAME)")
		}
		reader, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return o, err
		}
		if image, err = injection.OwnImage(ctx, reader, o.OperatorNamespace, podName, "manager"); err != nil {
			return o, fmt.Errorf("reading the manager's image for --guard-image: %w", err)
		}
	}
	o.Guard = injectionFlags.Guard(o.OperatorNamespace, image)
	return o, nil
}

// metricsConfig is how the metrics endpoint is served.
type metricsConfig struct {
	bindAddress string
	secure      bool
	certDir     string
	http2       bool
}

// options serves metrics the way current kubebuilder projects do: HTTPS, with every
// request authenticated and authorized by the apiserver (TokenReview, SubjectAccessReview),
// unless secure is off. serving.Metrics serves them.
func (m metricsConfig) options() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: m.bindAddress}
	if !m.secure {
		return opts
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	opts.CertDir = m.certDir
	if !m.http2 {
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	return opts
}

// loopback reports whether the bind address accepts only local connections.
func (m metricsConfig) loopback() bool {
	if m.bindAddress == "0" {
		return true
	}
	host, _, err := net.SplitHostPort(m.bindAddress)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// setupSharedGuards runs SharedGuards with the guard the injector renders; without the
// injector (--enable-injection=false) there is no guard to render and none runs.
func setupSharedGuards(ctx context.Context, mgr ctrl.Manager, injectionFlags *injection.Flags, operatorNamespace string) error {
	renderer, err := injectionFlags.Renderer(ctx, mgr)
	if err != nil || renderer == nil {
		return err
	}
	return (&sharedguard.Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Recorder:          mgr.GetEventRecorder("sharedguard-controller"),
		Renderer:          renderer,
		OperatorNamespace: operatorNamespace,
	}).SetupWithManager(mgr)
}
