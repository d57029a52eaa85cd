package modelprovider_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// ModelProviders against the real apiserver: the CRD's validation, the aggregated roles,
// and the manager as controllers.SetupWith assembles it — this reconciler, the pod
// cache's transform that records a verified guard's providers, Events.

var (
	cfg  *rest.Config
	k8s  client.Client
	logs syncBuffer
)

// canary is a provider's API key: it must reach no status, Event or log line.
const canary = "sk-provider-canary-5e0b77"

const (
	operatorNS = "guardrail-system"
	guardImage = "registry.test/guardrail/operator:v0.0.0-test"
)

var (
	guardCommand = []string{"/guard"}
	install      = controllers.Options{OperatorNamespace: operatorNS, Guard: guardOf(guardImage)}
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(&logs), zap.UseDevMode(true)))
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
	if err := controllers.SetupWith(ctx, mgr, install); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = mgr.Start(ctx) }()
	code := m.Run()
	if bytes.Contains([]byte(logs.String()), []byte(canary)) {
		fmt.Fprintln(os.Stderr, "a provider's credential appeared in the manager's log")
		return 1
	}
	return code
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually retries f every 100ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tenant creates a namespace with labels and the service account app for its pods.
func tenant(t *testing.T, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-", Labels: labels}}
	must(t, k8s.Create(ctx, ns))
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "app"}}))
	return ns.Name
}

// guardedPod creates an injected, Running pod whose spec carries the guard as the
// injector renders it, with a --provider flag per provider.
func guardedPod(t *testing.T, ns, name string, providers ...string) *corev1.Pod {
	t.Helper()
	return podWithGuard(t, ns, name, guardImage, providers...)
}

// podWithGuard is guardedPod with the guard's container running image.
func podWithGuard(t *testing.T, ns, name, image string, providers ...string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderGuard(p, guardOf(image), false, []byte("ca"), providers...)
	must(t, k8s.Create(ctx, p))
	p.Status.Phase = corev1.PodRunning
	must(t, k8s.Status().Update(ctx, p))
	return p
}

// newProvider is a valid ModelProvider whose credential is Secret "<name>-key" of the
// operator's namespace, selecting namespaces labelled keyless=true.
func newProvider(name string) *v1alpha1.ModelProvider {
	return &v1alpha1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ModelProviderSpec{API: v1alpha1.ProviderAPIOpenAI, URL: "https://api.openai.example/v1",
			CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: name + "-key", Key: "apiKey"},
			NamespaceSelector:    &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"keyless": "true"}}}}
}

// readyCondition returns the ModelProvider's Ready condition as the apiserver has it.
func readyCondition(t *testing.T, name string) (*v1alpha1.ModelProvider, *metav1.Condition) {
	t.Helper()
	mp := &v1alpha1.ModelProvider{}
	must(t, k8s.Get(context.Background(), client.ObjectKey{Name: name}, mp))
	for i := range mp.Status.Conditions {
		if mp.Status.Conditions[i].Type == v1alpha1.ConditionReady {
			return mp, &mp.Status.Conditions[i]
		}
	}
	return mp, nil
}

// guardOf is the suite's guard running image.
func guardOf(image string) injection.Guard {
	return injection.Guard{Image: image, Command: guardCommand, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: "https://guardrail-control-plane.guardrail-system.svc:9444"}
}
