// Command dev runs guardrail-operator locally on an embedded control plane: the real
// kube-apiserver and etcd from bin/controlplane, with the CRDs installed, and the manager
// in process. It writes a kubeconfig for kubectl and stops everything on Ctrl-C.
//
//	make dev
//	export KUBECONFIG=bin/dev/kubeconfig
//	kubectl apply -f config/samples/pii-secrets-redaction.yaml
//	kubectl get guardrails,classifiers
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

func main() {
	kubeconfig := flag.String("kubeconfig-out", filepath.Join(envtestutil.RepoRoot(), "bin", "dev", "kubeconfig"), "Where to write the kubeconfig of the embedded control plane.")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:8080", "Address of the manager's Prometheus metrics.")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	log := ctrl.Log.WithName("dev")
	if err := run(*kubeconfig, *metricsAddr); err != nil {
		log.Error(err, "The local control plane stopped with an error")
		os.Exit(1)
	}
}

func run(kubeconfigPath, metricsAddr string) error {
	log := ctrl.Log.WithName("dev")
	env, err := envtestutil.New()
	if err != nil {
		return err
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := controllers.Setup(ctx, mgr); err != nil {
		return err
	}
	log.Info("Control plane and manager are up; press Ctrl-C to stop",
		"kubeconfig", kubeconfigPath, "try", "KUBECONFIG="+kubeconfigPath+" kubectl apply -f config/samples/")
	return mgr.Start(ctx)
}
