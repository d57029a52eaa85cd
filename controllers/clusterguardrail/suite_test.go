package clusterguardrail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers"
	"github.com/guardrail-dev/guardrail-operator/controllers/controlplane"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// The cluster baselines against the real apiserver: the manager's reconcilers and the
// control-plane server in process, real TokenRequest tokens bound to pods the apiserver
// knows, snapshots compiled as the guard compiles them and judged by the guard's engine.

var (
	cfg     *rest.Config
	k8s     client.Client
	cs      *kubernetes.Clientset
	baseURL string
	caFile  string
	logs    syncBuffer
	// kubeconfig is a cluster admin's, for kubectl.
	kubeconfig string
)

// canary is a ClusterClassifier's credential: it must reach only the guards of selected
// namespaces and no log.
const canary = "sk-cluster-canary-42d1"

const (
	operatorNS = "guardrail-system"
	guardImage = "registry.test/guardrail/operator:v0.0.0-test"
)

var (
	guardCommand = []string{"/guard"}
	testGuard    = injection.Guard{Image: guardImage, Command: guardCommand, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: "https://guardrail-control-plane.guardrail-system.svc:9444"}
	install = controllers.Options{OperatorNamespace: operatorNS, Guard: testGuard}
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
	kubeconfigDir, err := os.MkdirTemp("", "clusterguardrail-kubeconfig-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(kubeconfigDir) }()
	kubeconfig = filepath.Join(kubeconfigDir, "kubeconfig")
	if err := envtestutil.WriteKubeconfig(env, "admin", kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cs = kubernetes.NewForConfigOrDie(cfg)
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "clusterguardrail-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if _, err := envtestutil.ServingCert(dir, "127.0.0.1"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	caFile = filepath.Join(dir, "ca.crt")
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
	srv, err := controlplane.Setup(ctx, mgr, controlplane.Options{BindAddress: "127.0.0.1:0", CertDir: dir,
		Wait: 2 * time.Second, DecisionInterval: 200 * time.Millisecond, LeaseNamespace: operatorNS,
		LeaseDuration: 10 * time.Second, Guard: testGuard})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = mgr.Start(ctx) }()
	baseURL = "https://" + srv.Addr().String()
	code := m.Run()
	if bytes.Contains([]byte(logs.String()), []byte(canary)) {
		fmt.Fprintln(os.Stderr, "a ClusterClassifier credential appeared in the manager's log")
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

func ptrTo[T any](v T) *T { return &v }

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

// tenant creates a namespace with labels and a service account for its pods.
func tenant(t *testing.T, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-", Labels: labels}}
	must(t, k8s.Create(ctx, ns))
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "app"}}))
	return ns.Name
}

// pod creates an injected, Running pod with label app=<app> whose spec carries the guard
// as the injector renders it.
func pod(t *testing.T, ns, name, app string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderGuard(p, testGuard, false, []byte("ca"))
	must(t, k8s.Create(ctx, p))
	p.Status.Phase = corev1.PodRunning
	must(t, k8s.Status().Update(ctx, p))
	return p
}

// token is a projected service-account token of the control plane's audience bound to p.
func token(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	exp := int64(600)
	tr, err := cs.CoreV1().ServiceAccounts(p.Namespace).CreateToken(context.Background(), "app", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{guardv1.Audience}, ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
	}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

// post sends body to the control plane's path with the guard's token.
func post(t *testing.T, tok, path string, body any) (int, []byte) {
	t.Helper()
	hc, err := cp.HTTPClientFor(caFile)
	must(t, err)
	b, _ := json.Marshal(body)
	hr, err := http.NewRequest(http.MethodPost, baseURL+path, bytes.NewReader(b))
	must(t, err)
	hr.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(hr)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// subscribe polls until the pod's snapshot holds want (a guardrail key) or not, and
// returns it.
func subscribe(t *testing.T, tok string, ok func(*cp.Snapshot) bool) *cp.Snapshot {
	t.Helper()
	var snap *cp.Snapshot
	eventually(t, 15*time.Second, func() error {
		code, body := post(t, tok, cp.SubscribePath, cp.SubscribeRequest{})
		if code != http.StatusOK {
			return fmt.Errorf("subscribe answered %d: %s", code, body)
		}
		snap = &cp.Snapshot{}
		if err := json.Unmarshal(body, snap); err != nil {
			return err
		}
		if !ok(snap) {
			return fmt.Errorf("the snapshot does not hold what the test waits for: %d guardrails", len(snap.Guardrails))
		}
		return nil
	})
	return snap
}
