package sharedguard_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/controllers/sharedguard"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// SharedGuards against the real apiserver: the CRD's validation, the reconciler with the
// manager's cache as controllers.Options assembles it (the pod transform that verifies
// guards, the label-filtered Deployments, Services and EndpointSlices), and the guard's
// pod as the injector's code renders it. The apiserver runs no controller-manager and no
// kubelet: the tests write the pods and the Deployment's status the way they would.

var (
	cfg      *rest.Config
	k8s      client.Client
	renderer *injection.Renderer
)

const (
	operatorNS = "guardrail-system"
	guardImage = "registry.test/guardrail/operator:v0.0.0-test"
	// extProcImage is the Envoy external processor's, beside the operator's.
	extProcImage = "registry.test/guardrail/operator-extproc:v0.0.0-test"
	// caPEM stands in for the operator's CA: the guard's pods carry it in an annotation.
	caPEM = "-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	env, err := envtestutil.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	renderer = injection.NewRendererFor(injection.Config{
		Image: guardImage, Command: []string{"/guard"}, ExtProcImage: extProcImage, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: injection.DefaultControlPlaneURL(operatorNS), OperatorNamespace: operatorNS, Version: "v0.0.0-test",
		CPURequest: resource.MustParse("100m"), MemoryRequest: resource.MustParse("64Mi"), MemoryLimit: resource.MustParse("256Mi"),
		OpenAIUpstream: "https://api.openai.com", AnthropicUpstream: "https://api.anthropic.com", GeminiUpstream: "https://generativelanguage.googleapis.com",
	}, func() ([]byte, error) { return []byte(caPEM), nil })
	install := controllers.Options{OperatorNamespace: operatorNS, Guard: renderer.Guard()}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: install.Cache(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := (&sharedguard.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("sharedguard-controller"),
		Renderer: renderer, OperatorNamespace: operatorNS,
	}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = mgr.Start(ctx) }()
	return m.Run()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually retries check until it returns nil or 20 s pass.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// namespace creates a namespace of its own for a test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	must(t, k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}
