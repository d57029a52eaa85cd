package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// The control-plane server against the real apiserver: real TokenRequest tokens, real
// TokenReview, pods the apiserver knows, the real guard client.

var (
	cfg     *rest.Config
	k8s     client.Client
	cs      *kubernetes.Clientset
	baseURL string
	// secondURL is a second Server, in a second manager on the same apiserver: another
	// replica.
	secondURL string
	caFile    string
	logs      syncBuffer
)

// canary is a classifier credential; it must reach only its namespace's guards and no log.
const canary = "sk-canary-7f3a9c1e0b5d"

// The installation the servers of these tests serve: the operator's namespace, where
// guards' Leases live, and the guard as the injector renders it.
const (
	leaseNS    = "guardrail-system"
	guardImage = "registry.test/guardrail/operator:v0.0.0-test"
	// extProcImage is the Envoy external processor's, which ExtProc SharedGuards run.
	extProcImage = "registry.test/guardrail/operator-extproc:v0.0.0-test"
	// leaseDuration is short, so that a guard that stops polling drops out within a test;
	// it exceeds the servers' Wait (2s), as it must.
	leaseDuration = 4 * time.Second
)

var (
	guardCommand = []string{"/guard"}
	testGuard    = injection.Guard{Image: guardImage, Command: guardCommand, ExtProcImage: extProcImage, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: "https://guardrail-control-plane.guardrail-system.svc:9444", Tracing: []injection.Tracing{currentTracing, previousTracing}}
	install    = controllers.Options{OperatorNamespace: leaseNS, Guard: testGuard}
	serverOpts controlplane.Options
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

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if fuzzing() {
		// go test -run '^$' -fuzz FuzzX: the fuzz targets are pure; an apiserver per
		// fuzz worker would stall the workers.
		return m.Run()
	}
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
	cs = kubernetes.NewForConfigOrDie(cfg)
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	dir, err := os.MkdirTemp("", "controlplane-test-")
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
	serverOpts = controlplane.Options{BindAddress: "127.0.0.1:0", CertDir: dir, Wait: 2 * time.Second, DecisionInterval: decisionInterval,
		LeaseNamespace: leaseNS, LeaseDuration: leaseDuration, Guard: testGuard, TracingHeaders: tracingHeaders,
		TracingClientCert: tracingClientCert}
	opts := serverOpts
	srv, err := controlplane.Setup(ctx, mgr, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = mgr.Start(ctx) }()
	baseURL = "https://" + srv.Addr().String()
	second, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: install.Cache(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv2, err := controlplane.Setup(ctx, second, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = second.Start(ctx) }()
	secondURL = "https://" + srv2.Addr().String()
	code := m.Run()
	if strings.Contains(logs.String(), canary) {
		fmt.Fprintln(os.Stderr, "a classifier credential appeared in the manager's log")
		return 1
	}
	return code
}

// fuzzing reports whether this process runs a fuzz target (go test -fuzz), as the
// coordinator or as one of its workers.
func fuzzing() bool {
	flag.Parse()
	f, w := flag.Lookup("test.fuzz"), flag.Lookup("test.fuzzworker")
	return (f != nil && f.Value.String() != "") || (w != nil && w.Value.String() == "true")
}

// fixture is a namespace with a remote classifier (credential canary+ns), a built-in one,
// and Guardrails selecting app=web and app=other.
func fixture(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cp-"}}
	must(t, k8s.Create(ctx, ns))
	name := ns.Name
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "app"}}))
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "judge"},
		Data: map[string][]byte{"apiKey": []byte(canary + "-" + name)}}))
	must(t, k8s.Create(ctx, &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "judge"},
		Spec: v1alpha1.ClassifierSpec{
			Moderation:           &v1alpha1.ModerationBackend{URL: "https://moderation.example/v1/moderations"},
			Categories:           []v1alpha1.Category{{ID: "violence"}},
			CredentialsSecretRef: &v1alpha1.SecretKeyReference{Name: "judge", Key: "apiKey"},
		}}))
	must(t, k8s.Create(ctx, &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{
			Keywords: []v1alpha1.KeywordRule{{Category: "banned", Words: []string{"flamingo"}}}}}}))
	must(t, k8s.Create(ctx, guardrail(name, "web-words", "web", "words", "banned")))
	must(t, k8s.Create(ctx, guardrail(name, "web-judge", "web", "judge", "violence")))
	must(t, k8s.Create(ctx, guardrail(name, "other-words", "other", "words", "banned")))
	return name
}

func guardrail(ns, name, app, classifier, category string) *v1alpha1.Guardrail {
	return &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.GuardrailSpec{
			Mode:          v1alpha1.ModeEnforce,
			Selector:      &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"app": v1alpha1.LabelValue(app)}},
			ClassifierRef: v1alpha1.LocalObjectReference{Name: classifier},
			Phases:        []v1alpha1.Phase{v1alpha1.PhaseInput},
			Categories:    []string{category},
			Threshold:     ptrTo(v1alpha1.Score(0.5)),
			Action:        v1alpha1.ActionBlock,
			Reason:        "Refused by " + name,
		}}
}

// pod creates an injected pod with labels app=<app>, marks it Running, and returns it: its
// spec carries the guard as the injector renders it, in the legacy shape (a regular
// container), which every apiserver version takes.
func pod(t *testing.T, ns, name, app string) *corev1.Pod {
	t.Helper()
	return createPod(t, guardedPod(ns, name, map[string]string{"app": app}, nil))
}

// tracedPod is pod for a guard injected with tracing setting tr.
func tracedPod(t *testing.T, ns, name, app string, tr injection.Tracing) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderTracedGuard(p, testGuard, tr, false, []byte("ca"))
	return createPod(t, p)
}

// guardedPod is a pod with labels and annotations whose spec carries the guard as the
// injector renders it for providers, in the legacy shape (a regular container), which
// every apiserver version takes.
func guardedPod(ns, name string, labels, annotations map[string]string, providers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderGuard(p, testGuard, false, []byte("ca"), providers...)
	return p
}

// guardTokenVolume is the injector's name of the guard's token volume.
const guardTokenVolume = "guardrail-token"

// tokenVolume projects a service-account token of the control plane's audience.
func tokenVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: guardv1.Audience, Path: "token"}}}}}}
}

// createPod creates p and marks it Running.
func createPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	must(t, k8s.Create(ctx, p))
	p.Status.Phase = corev1.PodRunning
	must(t, k8s.Status().Update(ctx, p))
	return p
}

// token is a projected service-account token bound to p.
func token(t *testing.T, p *corev1.Pod, audience string) string {
	t.Helper()
	exp := int64(600)
	tr, err := cs.CoreV1().ServiceAccounts(p.Namespace).CreateToken(context.Background(), "app", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
	}, metav1.CreateOptions{})
	must(t, err)
	return tr.Status.Token
}

// poll sends one subscribe request and returns the status and body.
func poll(t *testing.T, tok string, req cp.SubscribeRequest) (int, []byte) {
	t.Helper()
	c := &cp.Client{CAFile: caFile}
	hc, err := cpHTTPClient(c)
	must(t, err)
	body, _ := json.Marshal(req)
	hr, err := http.NewRequest(http.MethodPost, baseURL+cp.SubscribePath, bytes.NewReader(body))
	must(t, err)
	if tok != "" {
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := hc.Do(hr)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func cpHTTPClient(c *cp.Client) (*http.Client, error) { return cp.HTTPClientFor(c.CAFile) }
