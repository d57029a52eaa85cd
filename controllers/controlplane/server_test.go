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

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers"
	"github.com/guardrail-dev/guardrail-operator/controllers/controlplane"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
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
	// leaseDuration is short, so that a guard that stops polling drops out within a test;
	// it exceeds the servers' Wait (2s), as it must.
	leaseDuration = 4 * time.Second
)

var (
	guardCommand = []string{"/guard"}
	install      = controllers.Options{OperatorNamespace: leaseNS, GuardImage: guardImage, GuardCommand: guardCommand}
	serverOpts   controlplane.Options
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
		LeaseNamespace: leaseNS, LeaseDuration: leaseDuration, GuardImage: guardImage, GuardCommand: guardCommand}
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
	return createPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"app": app, cp.LabelInjected: "true"}},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{
			{Name: injection.ContainerName, Image: guardImage, Command: guardCommand,
				VolumeMounts: []corev1.VolumeMount{{Name: guardTokenVolume, MountPath: "/var/run/secrets/guardrail.dev"}}},
			{Name: "app", Image: "app"},
		}, Volumes: []corev1.Volume{tokenVolume(guardTokenVolume)}}})
}

// guardTokenVolume is the injector's name of the guard's token volume.
const guardTokenVolume = "guardrail-token"

// tokenVolume projects a service-account token of the control plane's audience.
func tokenVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: cp.Audience, Path: "token"}}}}}}
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

func TestSnapshotHoldsThePodsGuardrailsAndOnlyItsCredentials(t *testing.T) {
	a, b := fixture(t), fixture(t)
	pa := pod(t, a, "web-1", "web")
	status, body := waitSnapshot(t, token(t, pa, cp.Audience))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var s cp.Snapshot
	must(t, json.Unmarshal(body, &s))
	var names []string
	for _, g := range s.Guardrails {
		names = append(names, g.Name)
	}
	if strings.Join(names, ",") != "web-judge,web-words" {
		t.Errorf("a pod labelled app=web got Guardrails %v, want web-judge and web-words", names)
	}
	if s.Credentials[policy.Key(a, "judge")] != canary+"-"+a {
		t.Errorf("the snapshot lacks its namespace's classifier credential")
	}
	if bytes.Contains(body, []byte(canary+"-"+b)) || bytes.Contains(body, []byte(b)) {
		t.Errorf("a snapshot for namespace %s holds something of namespace %s", a, b)
	}
	if _, err := cp.Compile(&s); err != nil {
		t.Errorf("the guard cannot compile the snapshot: %v", err)
	}
}

// waitSnapshot polls until the Guardrails' classifiers are Ready enough to compile.
func waitSnapshot(t *testing.T, tok string) (int, []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body := poll(t, tok, cp.SubscribeRequest{})
		if status != http.StatusOK {
			return status, body
		}
		var s cp.Snapshot
		must(t, json.Unmarshal(body, &s))
		if len(s.Guardrails) >= 2 || time.Now().After(deadline) {
			return status, body
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTokensThatAreNotAPodsOwnAreRefused(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	ctx := context.Background()

	t.Run("no token", func(t *testing.T) {
		if status, _ := poll(t, "", cp.SubscribeRequest{}); status != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", status)
		}
	})
	t.Run("a token for another audience", func(t *testing.T) {
		if status, body := poll(t, token(t, p, "https://kubernetes.default.svc"), cp.SubscribeRequest{}); status != http.StatusUnauthorized {
			t.Errorf("status %d (%s), want 401", status, body)
		}
	})
	t.Run("a token not bound to a pod", func(t *testing.T) {
		exp := int64(600)
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "app", &authv1.TokenRequest{
			Spec: authv1.TokenRequestSpec{Audiences: []string{cp.Audience}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		must(t, err)
		if status, body := poll(t, tr.Status.Token, cp.SubscribeRequest{}); status != http.StatusForbidden {
			t.Errorf("status %d (%s), want 403", status, body)
		}
	})
	t.Run("a token of a deleted pod, even once reviewed and cached", func(t *testing.T) {
		gone := pod(t, ns, "web-gone", "web")
		tok := token(t, gone, cp.Audience)
		if status, body := poll(t, tok, cp.SubscribeRequest{}); status != http.StatusOK {
			t.Fatalf("before deletion: status %d (%s)", status, body)
		}
		must(t, k8s.Delete(ctx, gone, client.GracePeriodSeconds(0)))
		waitGone(t, gone)
		status, body := poll(t, tok, cp.SubscribeRequest{})
		if status != http.StatusUnauthorized && status != http.StatusForbidden {
			t.Errorf("status %d (%s), want 401 or 403", status, body)
		}
	})
	t.Run("a token of a pod of another namespace never yields this namespace", func(t *testing.T) {
		other := fixture(t)
		po := pod(t, other, "web-1", "web")
		_, body := waitSnapshot(t, token(t, po, cp.Audience))
		if bytes.Contains(body, []byte(ns)) || bytes.Contains(body, []byte(canary+"-"+ns)) {
			t.Errorf("namespace %s's guard received namespace %s's policy", other, ns)
		}
	})
}

func waitGone(t *testing.T, p *corev1.Pod) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{}); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pod %s not deleted", p.Name)
}

// TestGuardFollowsAppliesAndAcksIntoStatus runs the real guard client: it receives the
// policy, acks it, the Guardrail shows 1/1; an edit reaches it and is acked again.
func TestGuardFollowsAppliesAndAcksIntoStatus(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	must(t, os.WriteFile(tokFile, []byte(token(t, p, cp.Audience)), 0o600))
	applied := make(chan *policy.Snapshot, 16)
	c := &cp.Client{URL: baseURL, TokenFile: tokFile, CAFile: caFile, SnapshotDir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx, func(s *policy.Snapshot) error { applied <- s; return nil }, func(error) {})

	await := func(what string, ok func(*policy.Snapshot) bool) *policy.Snapshot {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case s := <-applied:
				if ok(s) {
					return s
				}
			case <-timeout:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	await("both web Guardrails", func(s *policy.Snapshot) bool { return len(s.Guardrails) == 2 })
	waitEnforced(t, ns, "web-words", "1/1")
	for _, name := range []string{"words", "judge"} {
		deadline := time.Now().Add(20 * time.Second)
		for cl := (&v1alpha1.Classifier{}); ; time.Sleep(100 * time.Millisecond) {
			must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cl))
			if cl.Status.Guards == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Classifier %s: status.guards %d, want 1 (the one guard enforcing its Guardrails)", name, cl.Status.Guards)
			}
		}
	}

	g := &v1alpha1.Guardrail{}
	// The reconciler writes status meanwhile: an edit retries on conflict, as kubectl's
	// apply does.
	edit := func(reason string) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-words"}, g); err != nil {
				return err
			}
			g.Spec.Reason = reason
			return k8s.Update(ctx, g)
		}))
	}
	start := time.Now()
	edit("Edited")
	await("the edit", func(s *policy.Snapshot) bool {
		for _, cg := range s.Guardrails {
			if cg.Name == "web-words" && cg.Generation == g.Generation {
				return true
			}
		}
		return false
	})
	t.Logf("apply → guard applied: %v", time.Since(start))
	waitEnforced(t, ns, "web-words", "1/1")

	// A burst of applies is debounced into a push or two, not one per apply.
	// Merge patches: one request each, and no conflict with the reconciler's status writes.
	for i := range 10 {
		before := g.DeepCopy()
		g.Spec.Reason = fmt.Sprintf("Burst %d", i)
		must(t, k8s.Patch(ctx, g, client.MergeFrom(before)))
	}
	pushes, sawLast := 0, false
	for timeout := time.After(20 * time.Second); !sawLast; {
		select {
		case s := <-applied:
			pushes++
			for _, cg := range s.Guardrails {
				sawLast = sawLast || (cg.Name == "web-words" && cg.Reason == "Burst 9")
			}
		case <-timeout:
			t.Fatal("the burst's last edit never arrived")
		}
	}
	for drained := false; !drained; {
		select {
		case <-applied:
			pushes++
		case <-time.After(500 * time.Millisecond):
			drained = true
		}
	}
	// How many depends on the gaps between the applies on a loaded machine; the
	// debounce itself is tested in hub_test.go.
	t.Logf("10 applies in a burst reached the guard as %d snapshots", pushes)

	if fi, err := os.Stat(filepath.Join(dir, cp.SnapshotFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("persisted snapshot: %v, mode %v; want mode 0600", err, fi)
	}
}

func waitEnforced(t *testing.T, ns, name, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	g := &v1alpha1.Guardrail{}
	for time.Now().Before(deadline) {
		must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, g))
		if e := g.Status.Enforcement; e != nil && e.Summary == want && g.Status.ObservedGeneration == g.Generation {
			for _, c := range g.Status.Conditions {
				if c.Type == v1alpha1.ConditionEnforced && c.Status == metav1.ConditionTrue {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("Guardrail %s: enforcement %+v, conditions %+v; want %s and Enforced True", name, g.Status.Enforcement, g.Status.Conditions, want)
}

func TestPodsWithoutGuardAreNamed(t *testing.T) {
	ns := fixture(t)
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bypass", Labels: map[string]string{"app": "other"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	must(t, k8s.Create(ctx, p))
	p.Status.Phase = corev1.PodRunning
	must(t, k8s.Status().Update(ctx, p))
	// Pods without a guard are not watched: the Guardrail sees them on its next reconcile.
	g := editGuardrail(t, ns, "other-words", func(g *v1alpha1.Guardrail) { g.Spec.Reason = "touch" })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(g), g))
		for _, c := range g.Status.Conditions {
			if c.Type == v1alpha1.ConditionEnforced && c.Reason == v1alpha1.ReasonPodsWithoutGuard {
				if !strings.Contains(c.Message, "bypass") || g.Status.Enforcement.Summary != "0/1" {
					t.Errorf("message %q, summary %q", c.Message, g.Status.Enforcement.Summary)
				}
				ready := false
				for _, r := range g.Status.Conditions {
					ready = ready || (r.Type == v1alpha1.ConditionReady && r.Status == metav1.ConditionTrue)
				}
				if !ready {
					t.Errorf("a bypass must not make the Guardrail unready: %+v", g.Status.Conditions)
				}
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no PodsWithoutGuard: %+v", g.Status.Conditions)
}

func ptrTo[T any](v T) *T { return &v }

// editGuardrail changes a Guardrail's spec, retrying on conflict with the reconciler's
// status writes, as kubectl apply does.
func editGuardrail(t *testing.T, ns, name string, edit func(*v1alpha1.Guardrail)) *v1alpha1.Guardrail {
	t.Helper()
	g := &v1alpha1.Guardrail{}
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, g); err != nil {
			return err
		}
		edit(g)
		return k8s.Update(context.Background(), g)
	}))
	return g
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSecretRotationReachesTheGuard: a new credential in the Secret is pushed.
func TestSecretRotationReachesTheGuard(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	must(t, os.WriteFile(tokFile, []byte(token(t, p, cp.Audience)), 0o600))
	applied := make(chan *policy.Snapshot, 16)
	c := &cp.Client{URL: baseURL, TokenFile: tokFile, CAFile: caFile}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx, func(s *policy.Snapshot) error { applied <- s; return nil }, func(error) {})
	credential := func(s *policy.Snapshot) string {
		for _, c := range s.Classifiers {
			if c.Name == "judge" {
				return string(c.Token)
			}
		}
		return ""
	}
	await := func(want string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case s := <-applied:
				if credential(s) == want {
					return
				}
			case <-timeout:
				t.Fatalf("the guard never got the credential it should")
			}
		}
	}
	await(canary + "-" + ns)
	sec := &corev1.Secret{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "judge"}, sec))
	sec.Data["apiKey"] = []byte(canary + "-rotated-" + ns)
	must(t, k8s.Update(ctx, sec))
	await(canary + "-rotated-" + ns)
}

// TestBrokenEditKeepsTheLastGoodGuardrail: an edit the Classifier cannot serve does not
// switch the Guardrail off in the guards.
func TestBrokenEditKeepsTheLastGoodGuardrail(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	tok := token(t, p, cp.Audience)
	_, body := waitSnapshot(t, tok)
	var before cp.Snapshot
	must(t, json.Unmarshal(body, &before))

	editGuardrail(t, ns, "web-words", func(g *v1alpha1.Guardrail) { g.Spec.Categories = []string{"no-such-category"} })
	// A change elsewhere in the namespace, so that a new snapshot is compiled.
	editGuardrail(t, ns, "web-judge", func(g *v1alpha1.Guardrail) { g.Spec.Reason = "Edited" })

	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body := poll(t, tok, cp.SubscribeRequest{Running: before.Version})
		if status == http.StatusOK {
			var s cp.Snapshot
			must(t, json.Unmarshal(body, &s))
			var words *policy.GuardrailObject
			for i := range s.Guardrails {
				if s.Guardrails[i].Name == "web-words" {
					words = &s.Guardrails[i]
				}
			}
			edited := false
			for _, x := range s.Guardrails {
				edited = edited || (x.Name == "web-judge" && x.Spec.Reason == "Edited")
			}
			if edited {
				if words == nil {
					t.Fatal("the broken Guardrail was dropped from the snapshot: its pods lost it")
				}
				if words.Generation != 1 || words.Spec.Categories[0] != "banned" {
					t.Errorf("kept %+v, want the last good generation 1", words.Spec)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the edit of web-judge never arrived")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
