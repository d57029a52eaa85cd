package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Policy distribution with the real manager and guard binaries against the local
// apiserver: apply → enforced, edits within a second, the manager away, the guard
// restarted on its persisted snapshot, catching up, and a corrupted snapshot refused.

var (
	managerOnce sync.Once
	managerBin  string
	managerErr  error
)

func buildManager(t *testing.T) string {
	t.Helper()
	managerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "manager-e2e-")
		if err != nil {
			managerErr = err
			return
		}
		managerBin = filepath.Join(dir, "manager")
		args := append(append([]string{"build"}, buildFlags...), "-o", managerBin, "github.com/guardrail-dev/guardrail-operator/cmd/manager")
		out, err := exec.Command("go", args...).CombinedOutput() //nolint:gosec // fixed arguments
		if err != nil {
			managerErr = fmt.Errorf("building the manager: %v\n%s", err, out)
		}
	})
	if managerErr != nil {
		t.Fatal(managerErr)
	}
	return managerBin
}

// manager is a running manager process.
type manager struct {
	cmd    *exec.Cmd
	log    lockedBuffer
	exited chan struct{}
}

func startManager(t *testing.T, kubeconfig, certDir, addr string, extra ...string) *manager {
	t.Helper()
	m := &manager{exited: make(chan struct{})}
	// Injection has its own suite (controllers/injection); here the guard is started by hand.
	// The fake classifiers listen on 127.0.0.1, which the manager refuses by default.
	args := append([]string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--enable-injection=false",
		"--classifier-allow-local-urls",
		"--control-plane-bind-address=" + addr, "--control-plane-cert-dir=" + certDir,
		// Outside a pod the manager is told its namespace (guards' Leases) and the guard
		// it accepts reports from (injectedPod's spec carries it).
		"--operator-namespace=" + operatorNS, "--guard-image=" + guardImage, "--guard-command=/guard"}, extra...)
	m.cmd = exec.Command(buildManager(t), args...) //nolint:gosec // test binary
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	m.cmd.Stderr = writerFunc(m.log.write)
	m.cmd.Stdout = writerFunc(m.log.write)
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			t.Logf("manager log:\n%s", m.log.String())
		}
	})
	return m
}

func (m *manager) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(waitTimeout):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// operatorNS is the manager's namespace in these tests, where it keeps guards' Leases;
// guardImage is the guard's image as the manager is told it (--guard-image).
const (
	operatorNS = "guardrail-system"
	guardImage = "registry.test/guardrail/operator:e2e"
)

// cluster is the local apiserver with an admin client and kubeconfig.
type cluster struct {
	k8s        client.Client
	cs         *kubernetes.Clientset
	kubeconfig string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	env, cfg := envtestutil.Start(t)
	c := &cluster{kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), cs: kubernetes.NewForConfigOrDie(cfg)}
	if err := envtestutil.WriteKubeconfig(env, "admin", c.kubeconfig); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	var err error
	if c.k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if err := c.k8s.Create(testContext(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// guardSpec is a pod spec carrying the guard as the injector renders it (the legacy shape,
// a regular container): the control plane takes reports only from such pods.
func guardSpec() corev1.PodSpec {
	p := &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderGuard(p, injection.Guard{Image: guardImage, Command: []string{"/guard"}, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: injection.DefaultControlPlaneURL(operatorNS)}, false, nil)
	return p.Spec
}

// injectedPod creates the Pod an injected guard belongs to (Running, labelled injected,
// its spec carrying the guard) and writes a projected token bound to it, as the kubelet would, into dir/token.
func (c *cluster) injectedPod(t *testing.T, ns, name, dir string) string {
	t.Helper()
	ctx := testContext(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(c.k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"app": "web", guardv1.LabelInjected: "true"}}, Spec: guardSpec()}
	must(c.k8s.Create(ctx, p))
	p.Status.Phase = corev1.PodRunning
	must(c.k8s.Status().Update(ctx, p))
	exp := int64(3600)
	tr, err := c.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "app", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{guardv1.Audience}, ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
	}, metav1.CreateOptions{})
	must(err)
	path := filepath.Join(dir, "token")
	must(os.WriteFile(path, []byte(tr.Status.Token), 0o600))
	return path
}

// blocked reports whether the guard refuses a prompt at Input.
func blocked(t *testing.T, g *guard, prompt string) bool {
	t.Helper()
	resp, body := rawPost(t, g.URL+"/v1/chat/completions",
		`{"model":"gpt-e2e","messages":[{"role":"user","content":"`+prompt+`"}]}`)
	switch resp.StatusCode {
	case http.StatusOK:
		return false
	case http.StatusBadRequest:
		return strings.Contains(string(body), "web says no")
	}
	t.Fatalf("unexpected answer %d: %s", resp.StatusCode, body)
	return false
}

func TestDistributionFromApplyToEnforcementAndWithoutTheOperator(t *testing.T) {
	top := t // processes started in subtests outlive them
	c := startCluster(t)
	ctx := testContext(t)
	p := newProvider(t)
	certDir, work, snapDir := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := envtestutil.ServingCert(certDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	mgr := startManager(t, c.kubeconfig, certDir, addr)

	const ns = "shop"
	tokenFile := c.injectedPod(t, ns, "web-1", work)
	words := &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Keywords: []v1alpha1.KeywordRule{
			{Category: "birds", Words: []string{"flamingo"}}, {Category: "more-birds", Words: []string{"pelican"}}}}}}
	g := guardrail("web", "words", phases(v1alpha1.PhaseInput))
	g.TypeMeta, g.Namespace = metav1.TypeMeta{}, ns
	g.Spec.Categories = []string{"birds"}
	for _, o := range []client.Object{words, g} {
		if err := c.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	// A remote classifier whose credential comes from a Secret: it reaches the guard
	// through the subscription, the backend receives it, and no log shows it.
	const credential = "sk-distribution-canary-51c0ffee"
	judge, judgeURL := allowingWebhook(t)
	remote := webhookClassifier("judge", judgeURL, "", "harm")
	remote.TypeMeta, remote.Namespace = metav1.TypeMeta{}, ns
	remote.Spec.CredentialsSecretRef = &v1alpha1.SecretKeyReference{Name: "judge", Key: "apiKey"}
	watch := guardrail("judge-output", "judge", phases(v1alpha1.PhaseOutput))
	watch.TypeMeta, watch.Namespace, watch.Spec.Mode = metav1.TypeMeta{}, ns, v1alpha1.ModeReport
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge"}, Data: map[string][]byte{"apiKey": []byte(credential)}},
		remote, watch,
	} {
		if err := c.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	guardOpts := []guardOpt{upstream(p.URL), subscribedTo("https://"+addr, tokenFile, filepath.Join(certDir, "ca.crt"), snapDir)}
	gd := startGuard(t, "", guardOpts...)
	gd.waitReady()
	eventually(t, "both Guardrails in the guard's policy", func() bool {
		if !blocked(t, gd, "a flamingo") {
			return false
		}
		p.Enqueue(fakeprovider.Reply("A sparrow is a small bird."))
		if blocked(t, gd, "a sparrow") {
			t.Fatal("an allowed prompt was blocked")
		}
		for _, r := range judge.Requests() {
			if r.Header.Get("Authorization") == "Bearer "+credential {
				return true
			}
		}
		return false
	})
	v1 := gd.waitReady()
	if !blocked(t, gd, "a flamingo") || blocked(t, gd, "a pelican") {
		t.Fatal("the first policy is not what the guard enforces")
	}
	waitSummary(t, c, ns, "web", "1/1")

	t.Run("an edit is enforced within a second of the apply", func(t *testing.T) {
		start := time.Now()
		c.edit(t, g, func() { g.Spec.Categories = []string{"birds", "more-birds"} })
		for !blocked(t, gd, "a pelican") {
			if time.Since(start) > waitTimeout {
				t.Fatal("the edit never reached the guard")
			}
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(start)
		t.Logf("apply → a request with the new word blocked: %v", took)
		// The bound is generous for a loaded 2-core machine; the figure is in the log.
		if took > 5*time.Second {
			t.Errorf("the edit took %v to be enforced", took)
		}
		waitSummary(t, c, ns, "web", "1/1")
	})

	t.Run("the guard keeps enforcing while the manager is away", func(t *testing.T) {
		mgr.stop()
		if !blocked(t, gd, "a pelican") || !blocked(t, gd, "a flamingo") {
			t.Error("the guard stopped enforcing when the manager went away")
		}
	})

	var v2 string
	t.Run("a restarted guard enforces its persisted snapshot with the manager down", func(t *testing.T) {
		_, v2 = gd.readyz()
		gd.stop()
		gd = startGuard(top, "", guardOpts...)
		if got := gd.waitReady(); got != v2 {
			t.Errorf("restarted on version %q, want the persisted %q", got, v2)
		}
		if !blocked(t, gd, "a pelican") {
			t.Error("the persisted snapshot is not enforced")
		}
		// The guard says so right after applying it, which may be just after it is ready.
		eventually(t, "the guard saying it runs on its persisted snapshot", func() bool {
			return strings.Contains(gd.logs(), "persisted policy snapshot")
		})
	})

	t.Run("the guard catches up with what changed while the manager was down", func(t *testing.T) {
		c.edit(t, g, func() { g.Spec.Categories = []string{"more-birds"} })
		mgr = startManager(top, c.kubeconfig, certDir, addr)
		v3 := gd.waitVersion(v2)
		if v3 == v1 || blocked(t, gd, "a flamingo") || !blocked(t, gd, "a pelican") {
			t.Errorf("after catching up (version %s) the guard does not enforce the latest spec", v3)
		}
		waitSummary(t, c, ns, "web", "1/1")
	})

	t.Run("a corrupted snapshot is refused and the guard stays unready", func(t *testing.T) {
		mgr.stop()
		gd.stop()
		path := filepath.Join(snapDir, cp.SnapshotFile)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(string(b), "more-birds")
		if i < 0 {
			t.Fatal("the persisted snapshot does not hold the policy")
		}
		b[i] = 'M'
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		gd = startGuard(top, "", append(guardOpts, noWait())...)
		eventually(t, "the refusal in the log", func() bool { return strings.Contains(gd.logs(), "integrity check") })
		if status, _ := gd.readyz(); status != http.StatusServiceUnavailable {
			t.Errorf("/readyz %d with a corrupted snapshot and no control plane; want 503", status)
		}
		resp, _ := rawPost(t, gd.URL+"/v1/chat/completions", `{"model":"gpt-e2e","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("traffic without a policy answered %d; want 503 (fail closed)", resp.StatusCode)
		}
	})

	for _, logs := range []string{gd.logs(), mgr.log.String()} {
		if strings.Contains(logs, credential) {
			t.Error("a classifier credential appears in a log")
		}
		for _, secret := range []string{"flamingo", "pelican"} {
			// Prompts are never logged; the words are in the policy, whose text is not
			// logged either.
			if strings.Contains(logs, "a "+secret) {
				t.Errorf("a prompt appears in a log")
			}
		}
	}
}

// edit changes g's spec, retrying while the reconciler writes its status.
func (c *cluster) edit(t *testing.T, g *v1alpha1.Guardrail, change func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.k8s.Get(testContext(t), client.ObjectKeyFromObject(g), g); err != nil {
			return err
		}
		change()
		return c.k8s.Update(testContext(t), g)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitSummary(t *testing.T, c *cluster, ns, name, want string) {
	t.Helper()
	g := &v1alpha1.Guardrail{}
	eventually(t, "Guardrail "+name+" ENFORCED "+want, func() bool {
		if err := c.k8s.Get(testContext(t), client.ObjectKey{Namespace: ns, Name: name}, g); err != nil {
			return false
		}
		e := g.Status.Enforcement
		return e != nil && e.Summary == want && g.Status.ObservedGeneration == g.Generation
	})
}

// TestShippedSampleAppliedWithKubectl is the path a user takes: `kubectl apply` of the
// shipped redaction sample into a namespace, a guard subscribed as a pod there, and the
// official OpenAI SDK streaming an answer with an email address and a key in it, split
// into small deltas. Nothing of either reaches the client; the Guardrail shows ENFORCED 1/1.
func TestShippedSampleAppliedWithKubectl(t *testing.T) {
	c := startCluster(t)
	p := newProvider(t)
	certDir, work, snapDir := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := envtestutil.ServingCert(certDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startManager(t, c.kubeconfig, certDir, addr)
	const ns = "support"
	tokenFile := c.injectedPod(t, ns, "chat-1", work)

	sample := filepath.Join(envtestutil.RepoRoot(), "config", "samples", "pii-secrets-redaction.yaml")
	out, err := exec.CommandContext(testContext(t), "kubectl", "--kubeconfig", c.kubeconfig, "-n", ns, "apply", "-f", sample).CombinedOutput() //nolint:gosec // test arguments
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	gd := startGuard(t, "", upstream(p.URL), subscribedTo("https://"+addr, tokenFile, filepath.Join(certDir, "ca.crt"), snapDir))
	waitSummary(t, c, ns, "redact-pii-secrets", "1/1")

	const email, key = "jane.doe@example.com", "sk-proj-4fT9xQ2mZ7vB1nK8wR3yL6pD0sH5jC2aE9gU"
	p.Enqueue(fakeprovider.Script{Choices: []fakeprovider.Choice{{
		Deltas: fakeprovider.Chunks("Write to "+email+" and use the key "+key+" for the staging API.", 3)}}})
	acc, _, err := chatStream(testContext(t), openaiClient(gd), chatParams("how do I reach support?"))
	if err != nil {
		t.Fatal(err)
	}
	got := acc.Choices[0].Message.Content
	for _, secret := range []string{email, key, "jane.doe", "4fT9xQ2mZ7vB1nK8"} {
		if strings.Contains(got, secret) {
			t.Errorf("the client received %q of a redacted value: %q", secret, got)
		}
	}
	if !strings.Contains(got, "[REDACTED:email]") || !strings.Contains(got, "for the staging API.") {
		t.Errorf("answer %q: want the email redacted and the rest of the answer intact", got)
	}
}

// TestPolicyExportedWithKubectlRunsStandalone is a user moving a policy out of a cluster:
// the shipped sample, applied and reconciled (so that it carries the apiserver's metadata,
// managed fields and the manager's status), exported with `kubectl get -o yaml` and given
// as is to a standalone guard. The guard reads it with its own copy of the API types, not
// apimachinery's: everything the apiserver and the manager wrote must decode, and the
// policy must enforce.
func TestPolicyExportedWithKubectlRunsStandalone(t *testing.T) {
	c := startCluster(t)
	p := newProvider(t)
	certDir := t.TempDir()
	if _, err := envtestutil.ServingCert(certDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	startManager(t, c.kubeconfig, certDir, freeAddr(t))
	const ns = "export"
	kubectl := func(args ...string) []byte {
		t.Helper()
		out, err := exec.CommandContext(testContext(t), "kubectl", append([]string{"--kubeconfig", c.kubeconfig}, args...)...).Output() //nolint:gosec // test arguments
		if err != nil {
			t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	kubectl("create", "namespace", ns)
	kubectl("-n", ns, "apply", "-f", filepath.Join(envtestutil.RepoRoot(), "config", "samples", "pii-secrets-redaction.yaml"))
	eventually(t, "the sample Guardrail reconciled", func() bool {
		return strings.Contains(string(kubectl("-n", ns, "get", "guardrail", "redact-pii-secrets", "-o", "yaml")), "observedGeneration")
	})
	// As kubectl prints them by default, and one with its managed fields shown.
	exported := string(kubectl("-n", ns, "get", "classifier", "pii-secrets", "-o", "yaml")) + "---\n" +
		string(kubectl("-n", ns, "get", "guardrail", "redact-pii-secrets", "-o", "yaml", "--show-managed-fields"))
	for _, written := range []string{"managedFields", "creationTimestamp", "uid", "status", "lastTransitionTime"} {
		if !strings.Contains(exported, written) {
			t.Fatalf("the export holds no %s: the test no longer exercises what the apiserver writes\n%s", written, exported)
		}
	}

	gd := startGuard(t, exported, upstream(p.URL))
	const email = "jane.doe@example.com"
	p.Enqueue(fakeprovider.Script{Choices: []fakeprovider.Choice{{
		Deltas: fakeprovider.Chunks("Write to "+email+" for the staging API.", 3)}}})
	acc, _, err := chatStream(testContext(t), openaiClient(gd), chatParams("how do I reach support?"))
	if err != nil {
		t.Fatalf("%v\nguard log:\n%s", err, gd.logs())
	}
	if got := acc.Choices[0].Message.Content; strings.Contains(got, "jane.doe") || !strings.Contains(got, "[REDACTED:email]") {
		t.Errorf("answer %q: want the email redacted by the exported policy", got)
	}
}

// TestATypoTheSchemaLetsThroughDoesNotSwitchThePolicyOff is a user's slip: a category name
// misspelt in a `kubectl patch` of the shipped sample. The schema accepts it (categories
// are names); the operator cannot compile it, says so on the Guardrail naming the field,
// and the guard keeps redacting with the last good generation, also in the snapshots
// pushed after it.
func TestATypoTheSchemaLetsThroughDoesNotSwitchThePolicyOff(t *testing.T) {
	c := startCluster(t)
	p := newProvider(t)
	certDir, work, snapDir := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := envtestutil.ServingCert(certDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startManager(t, c.kubeconfig, certDir, addr)
	const ns = "support"
	tokenFile := c.injectedPod(t, ns, "chat-1", work)
	kubectl := func(args ...string) {
		t.Helper()
		args = append([]string{"--kubeconfig", c.kubeconfig, "-n", ns}, args...)
		if out, err := exec.CommandContext(testContext(t), "kubectl", args...).CombinedOutput(); err != nil { //nolint:gosec // test arguments
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	kubectl("apply", "-f", filepath.Join(envtestutil.RepoRoot(), "config", "samples", "pii-secrets-redaction.yaml"))
	gd := startGuard(t, "", upstream(p.URL), subscribedTo("https://"+addr, tokenFile, filepath.Join(certDir, "ca.crt"), snapDir))
	waitSummary(t, c, ns, "redact-pii-secrets", "1/1")
	before := gd.waitReady()

	kubectl("patch", "guardrail", "redact-pii-secrets", "--type", "merge", "-p", `{"spec":{"categories":["emial"]}}`)
	g := &v1alpha1.Guardrail{}
	eventually(t, "the Guardrail to say it is Stalled, naming the field", func() bool {
		if err := c.k8s.Get(testContext(t), client.ObjectKey{Namespace: ns, Name: "redact-pii-secrets"}, g); err != nil {
			return false
		}
		for _, cond := range g.Status.Conditions {
			if cond.Type == v1alpha1.ConditionStalled && cond.Status == metav1.ConditionTrue {
				return strings.Contains(cond.Message, "spec.categories[0]")
			}
		}
		return false
	})

	// A valid change beside it, so that a new snapshot is certainly compiled and pushed:
	// the broken Guardrail must be in it, in its last good form.
	words := &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Keywords: []v1alpha1.KeywordRule{
			{Category: "birds", Words: []string{"flamingo"}}}}}}
	block := guardrail("web", "words", phases(v1alpha1.PhaseInput))
	block.TypeMeta, block.Namespace = metav1.TypeMeta{}, ns
	for _, o := range []client.Object{words, block} {
		if err := c.k8s.Create(testContext(t), o); err != nil {
			t.Fatal(err)
		}
	}
	gd.waitVersion(before)
	eventually(t, "the new Guardrail in force", func() bool { return blocked(t, gd, "a flamingo") })

	const email = "maria.gonzalez+support@example-mail.org"
	p.Enqueue(fakeprovider.Script{Choices: []fakeprovider.Choice{{
		Deltas: fakeprovider.Chunks("Forward it to "+email+", she answers within a day.", 2)}}})
	acc, _, err := chatStream(testContext(t), openaiClient(gd), chatParams("who handles refunds?"))
	if err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; strings.Contains(got, "maria.gonzalez") || !strings.Contains(got, "[REDACTED:email]") {
		t.Errorf("after a broken edit the guard stopped redacting: %q", got)
	}
}
