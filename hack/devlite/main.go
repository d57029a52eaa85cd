// Command devlite (make dev-lite, for machines where make dev cannot run the real cluster)
// runs guardrail-operator locally on an embedded control plane: the real
// kube-apiserver and etcd from bin/controlplane, with the CRDs and the pod injector's
// webhook configuration installed, and the manager in process (its webhook and policy
// subscription served over TLS with the certificate it makes itself). Beside it run a demo
// model provider (it answers by repeating the prompt) and a real guard process that
// subscribes to the control plane the way an injected one does: with a token from
// TokenRequest bound to a Pod object made for it (namespace demo, labels app=chat). It
// writes a kubeconfig for kubectl and stops everything on Ctrl-C.
//
//	make dev-lite
//	export KUBECONFIG=bin/dev/kubeconfig
//	kubectl -n demo apply -f config/samples/pii-secrets-redaction.yaml
//	kubectl -n demo get guardrails                     # ENFORCED 1/1: the local guard acked it
//	curl -s localhost:8000/v1/chat/completions -d '{"model":"m","messages":[{"role":"user","content":"mail me at jo@example.com"}]}'
//	kubectl label namespace demo guardrail.dev/injection=enabled
//	kubectl -n demo run chat --image=busybox -- sleep 3600
//	kubectl -n demo get pod chat -o yaml               # the guard is the first init container
//
// No kubelet runs here: pods are stored, not started (the local guard plays one).
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers"
	"github.com/guardrail-dev/guardrail-operator/controllers/classifier"
	"github.com/guardrail-dev/guardrail-operator/controllers/controlplane"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// operatorNamespace plays the operator's namespace: the certificate Secret lives there.
const operatorNamespace = "guardrail-system"

// guardCommand runs the guard in its image, as the manager's --guard-command does.
var guardCommand = []string{"/guard"}

// controlPlaneAddr is where the policy subscription listens.
const controlPlaneAddr = "127.0.0.1:9444"

var guardListen, guardAdmin string

func main() {
	kubeconfig := flag.String("kubeconfig-out", filepath.Join(envtestutil.RepoRoot(), "bin", "dev", "kubeconfig"), "Where to write the kubeconfig of the embedded control plane.")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:8080", "Address of the manager's Prometheus metrics.")
	guardImage := flag.String("guard-image", "guardrail-operator:dev", "Image written into injected pods (nothing pulls it here).")
	flag.StringVar(&guardListen, "guard-listen", "127.0.0.1:8000", "Where the local guard's proxy listens (OPENAI_BASE_URL=http://<this>/v1).")
	flag.StringVar(&guardAdmin, "guard-admin-listen", "127.0.0.1:9090", "The local guard's /healthz, /readyz and /metrics.")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	log := ctrl.Log.WithName("dev")
	if err := run(*kubeconfig, *metricsAddr, *guardImage); err != nil {
		log.Error(err, "The local control plane stopped with an error")
		os.Exit(1)
	}
}

func run(kubeconfigPath, metricsAddr, guardImage string) error {
	log := ctrl.Log.WithName("dev")
	env, err := envtestutil.New()
	if err != nil {
		return err
	}
	// The apiserver calls the webhook at https://localhost:<port>; the manager's own
	// certificate names localhost (ExtraDNSNames below) and its CA replaces envtest's in
	// the caBundle.
	env.WebhookInstallOptions = envtest.WebhookInstallOptions{
		Paths:                        []string{filepath.Join(envtestutil.RepoRoot(), "config", "webhook", "manifests.yaml")},
		LocalServingHost:             "127.0.0.1",
		LocalServingHostExternalName: "localhost",
	}
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			log.Error(err, "Stopping the control plane")
		}
	}()

	user, err := env.AddUser(envtest.User{Name: "developer", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfigPath), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfigPath, kc, 0o600); err != nil {
		return err
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	certDir := filepath.Join(filepath.Dir(kubeconfigPath), "certs")
	if err := os.RemoveAll(certDir); err != nil { // the previous run's CA is not in this apiserver
		return err
	}
	wo := env.WebhookInstallOptions
	guard := injection.Guard{Image: guardImage, Command: guardCommand, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: injection.DefaultControlPlaneURL(operatorNamespace)}
	opts := controllers.Options{OperatorNamespace: operatorNamespace, Guard: guard}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  opts.Cache(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: certDir}),
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Everything runs on this machine: a classifier the developer runs beside it listens on
	// 127.0.0.1, which the manager refuses unless told otherwise.
	classifier.AllowLocalURLs = true
	if err := controllers.SetupWith(ctx, mgr, opts); err != nil {
		return err
	}
	if err := setupInjection(ctx, mgr, certDir, guard); err != nil {
		return err
	}
	if _, err := controlplane.Setup(ctx, mgr, controlplane.Options{BindAddress: controlPlaneAddr, CertDir: certDir,
		LeaseNamespace: operatorNamespace, Guard: guard, AllowLocalClassifierURLs: true}); err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- mgr.Start(ctx) }()
	go func() { errc <- runGuard(ctx, mgr, filepath.Dir(kubeconfigPath), certDir, guard) }()
	log.Info("Control plane and manager are up; press Ctrl-C to stop",
		"kubeconfig", kubeconfigPath,
		"try", "KUBECONFIG="+kubeconfigPath+" kubectl -n demo apply -f config/samples/pii-secrets-redaction.yaml")
	err = <-errc
	stop()
	if err2 := <-errc; err == nil {
		err = err2
	}
	return err
}

// setupInjection runs the pod injector as the manager does in a cluster, with
// self-managed certificates, the Secret for them, and the chart's defaults.
func setupInjection(ctx context.Context, mgr ctrl.Manager, certDir string, guard injection.Guard) error {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: injection.CertSecretName, Namespace: operatorNamespace}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return injection.Setup(ctx, mgr, injection.Options{
		Config: injection.Config{
			Image:             guard.Image,
			Command:           guard.Command,
			ProxyPort:         guard.ProxyPort,
			AdminPort:         guard.AdminPort,
			ControlPlaneURL:   guard.ControlPlaneURL,
			OperatorNamespace: operatorNamespace,
			CPURequest:        resource.MustParse("100m"),
			MemoryRequest:     resource.MustParse("64Mi"),
			MemoryLimit:       resource.MustParse("256Mi"),
			OpenAIUpstream:    "https://api.openai.com",
			AnthropicUpstream: "https://api.anthropic.com",
		},
		CertDir:          certDir,
		SelfManagedCerts: true,
		ExtraDNSNames:    []string{"localhost"},
	})
}
