package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Decisions back to the cluster with the real manager and guard binaries: a policy rolled
// out in Report mode, its would-block counter exact, flipped to Enforce by a spec change
// only, and nothing of a prompt, a completion or a credential anywhere the cluster shows.

const (
	decidePrompt     = "canary-prompt-4c2e91"
	decideCompletion = "canary-completion-7b0d55"
	decideCredential = "canary-credential-e83f12"
)

func TestDecisionsReportThenEnforce(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t) // for the setup: each later step gets its own deadline (the whole test takes about as long as one)
	p := fakeprovider.New(fakeprovider.WithDefault(fakeprovider.Script{Choices: []fakeprovider.Choice{
		{Deltas: fakeprovider.Texts("Here you are: " + decideCompletion)}}}))
	t.Cleanup(p.Close)
	judge, judgeURL := allowingWebhook(t)
	certDir, work, snapDir := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := envtestutil.ServingCert(certDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	mgr := startManager(t, c.kubeconfig, certDir, addr, "--decision-interval=1s",
		"--metrics-bind-address="+metricsAddr, "--metrics-secure=false")

	const ns = "decide"
	tokenFile := c.injectedPod(t, ns, "web-1", work)
	words := &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Keywords: []v1alpha1.KeywordRule{
			{Category: "birds", Words: []string{"flamingo"}}}}}}
	// A remote classifier with a credential: it allows everything, and its credential
	// reaches the guard, so the guard's log and metrics can be searched for it.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge"},
		Data: map[string][]byte{"apiKey": []byte(decideCredential)}}
	judgeCl := &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge"},
		Spec: v1alpha1.ClassifierSpec{Webhook: &v1alpha1.WebhookBackend{URL: judgeURL},
			Categories:           []v1alpha1.Category{{ID: "harm"}},
			CredentialsSecretRef: &v1alpha1.SecretKeyReference{Name: "judge", Key: "apiKey"}}}
	g := guardrail("web", "words", phases(v1alpha1.PhaseInput))
	g.TypeMeta, g.Namespace = metav1.TypeMeta{}, ns
	g.Spec.Mode = v1alpha1.ModeReport
	g.Spec.Categories = []string{"birds"}
	judged := guardrail("judged", "judge", phases(v1alpha1.PhaseInput))
	judged.TypeMeta, judged.Namespace = metav1.TypeMeta{}, ns
	judged.Spec.Categories = []string{"harm"}
	for _, o := range []client.Object{words, secret, judgeCl, g, judged} {
		if err := c.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	gd := startGuard(t, "", upstream(p.URL), subscribedTo("https://"+addr, tokenFile, filepath.Join(certDir, "ca.crt"), snapDir),
		flags("--decision-interval", "1s"))
	waitSummary(t, c, ns, "web", "1/1")
	waitSummary(t, c, ns, "judged", "1/1")
	assertCurrent(t, c, ns, "web", "after the Report-mode apply")

	const wouldBlock, allowed = 7, 3
	for i := range wouldBlock {
		resp, body := rawPost(t, gd.URL+"/v1/chat/completions",
			`{"model":"gpt-e2e","messages":[{"role":"user","content":"a flamingo `+decidePrompt+`"}]}`,
			"X-Request-Id", fmt.Sprintf("req-%d", i))
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, lastResponse(t, p).Body) {
			t.Fatalf("Report mode: the client got %d %s, not the provider's answer", resp.StatusCode, body)
		}
	}
	for range allowed {
		if blocked(t, gd, "a pelican "+decidePrompt) {
			t.Fatal("an allowed prompt was blocked")
		}
	}
	if judge.Count() == 0 {
		t.Error("the remote classifier was never called: its credential was not exercised")
	}

	got := settledDecisions(t, c, ns, "web", func(d v1alpha1.DecisionCounts) bool {
		return d.WouldBlock >= wouldBlock && d.Allowed >= allowed
	})
	if got.WouldBlock != wouldBlock || got.Allowed != allowed || got.Blocked != 0 {
		t.Errorf("Report mode: wouldBlock %d, allowed %d, blocked %d; want %d, %d, 0", got.WouldBlock, got.Allowed, got.Blocked, wouldBlock, allowed)
	}
	if len(got.Categories) != 1 || got.Categories[0].Name != "birds" || got.Categories[0].Matches != wouldBlock {
		t.Errorf("categories %+v, want birds: %d", got.Categories, wouldBlock)
	}
	eventually(t, "a WouldBlock Event on Guardrail web", func() bool {
		return hasEvent(t, c, ns, "web", "Normal", "WouldBlock", "Would have blocked")
	})
	assertCurrent(t, c, ns, "web", "with Report-mode counts")

	// The rollout: a spec change only.
	if err := c.k8s.Get(testContext(t), client.ObjectKeyFromObject(g), g); err != nil {
		t.Fatal(err)
	}
	g.Spec.Mode = v1alpha1.ModeEnforce
	if err := c.k8s.Update(testContext(t), g); err != nil {
		t.Fatal(err)
	}
	waitSummary(t, c, ns, "web", "1/1") // the guard acknowledged the Enforce generation
	assertCurrent(t, c, ns, "web", "after the switch to Enforce")
	if !blocked(t, gd, "a flamingo "+decidePrompt) {
		t.Fatal("Enforce mode: the request that Report mode counted is not blocked")
	}
	got = settledDecisions(t, c, ns, "web", func(d v1alpha1.DecisionCounts) bool { return d.Blocked >= 1 })
	if got.Blocked != 1 || got.WouldBlock != wouldBlock {
		t.Errorf("after the switch: blocked %d, wouldBlock %d; want 1 and still %d", got.Blocked, got.WouldBlock, wouldBlock)
	}
	eventually(t, "a Warning Blocked Event on Guardrail web", func() bool {
		return hasEvent(t, c, ns, "web", "Warning", "Blocked", "Blocked 1 request")
	})
	assertCurrent(t, c, ns, "web", "with Enforce-mode counts")
	if j := decisionsOf(t, c, ns, "judged"); j.Allowed != wouldBlock+allowed+1 {
		t.Errorf("the remote-classifier Guardrail counted %d allowed, want %d", j.Allowed, wouldBlock+allowed+1)
	}

	// The remote classifier's figures: every call the guard made to it, with latency.
	var calls *v1alpha1.ClassifierCallStats
	eventually(t, "Classifier judge's call figures", func() bool {
		cl := &v1alpha1.Classifier{}
		if err := c.k8s.Get(testContext(t), client.ObjectKey{Namespace: ns, Name: "judge"}, cl); err != nil {
			return false
		}
		calls = cl.Status.Calls
		return calls != nil && calls.Total >= int64(judge.Count())
	})
	if calls.Total != int64(judge.Count()) || calls.Total != wouldBlock+allowed+1 || calls.LatencyP50 == nil || calls.LatencyP99 == nil || len(calls.Errors) != 0 {
		t.Errorf("Classifier judge: calls %+v; the webhook answered %d calls, want %d, with p50 and p99 and no errors",
			calls, judge.Count(), wouldBlock+allowed+1)
	} else {
		t.Logf("Classifier judge: %d calls, p50 ≤ %v, p99 ≤ %v", calls.Total, calls.LatencyP50.Duration, calls.LatencyP99.Duration)
	}

	eventually(t, "Classifier judge used by 1 guard", func() bool {
		cl := &v1alpha1.Classifier{}
		return c.k8s.Get(testContext(t), client.ObjectKey{Namespace: ns, Name: "judge"}, cl) == nil && cl.Status.Guards == 1
	})

	// What a user sees: kubectl get shows the counters.
	out, err := exec.CommandContext(testContext(t), "kubectl", "--kubeconfig", c.kubeconfig, "get", "guardrails", "-n", ns, "web").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get guardrails: %v\n%s", err, out)
	}
	t.Logf("kubectl get guardrails:\n%s", out)
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 2 ||
		column(lines, "BLOCKED") != "1" || column(lines, "WOULD-BLOCK") != "7" {
		t.Errorf("kubectl get guardrails does not show BLOCKED 1 and WOULD-BLOCK 7:\n%s", out)
	}

	managerMetrics := scrape(t, "http://"+metricsAddr+"/metrics")
	if !strings.Contains(managerMetrics, `guardrail_decisions_total{guardrail="decide/web",outcome="wouldBlock"} 7`) {
		t.Errorf("the manager's metrics lack the wouldBlock count:\n%s", grepLines(managerMetrics, "guardrail_decisions"))
	}

	// What the cluster shows, and both processes' logs and metrics: no prompt, completion
	// or credential.
	guardMetrics := gd.metrics()
	gd.stop()
	if !strings.Contains(gd.logs(), "All decisions delivered") {
		t.Error("the guard did not deliver its last decisions at shutdown")
	}
	seen := map[string]string{
		"manager log": mgr.log.String(), "guard log": gd.logs(), "manager metrics": managerMetrics, "guard metrics": guardMetrics,
		"Guardrail web":    objectJSON(t, c, ns, "web", &v1alpha1.Guardrail{}),
		"Guardrail judged": objectJSON(t, c, ns, "judged", &v1alpha1.Guardrail{}),
		"Classifier judge": objectJSON(t, c, ns, "judge", &v1alpha1.Classifier{}),
		"pod web-1":        objectJSON(t, c, ns, "web-1", &corev1.Pod{}),
	}
	var evs eventsv1.EventList
	if err := c.k8s.List(testContext(t), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(evs)
	seen["Events"] = string(b)
	for where, text := range seen {
		for _, canary := range []string{decidePrompt, decideCompletion, decideCredential} {
			if strings.Contains(text, canary) {
				t.Errorf("%s contains %s", where, canary)
			}
		}
	}
	if claim := c.claim(t, ns, "web-1"); !strings.Contains(claim, `"outcome":"wouldBlock"`) {
		t.Errorf("the guard's Lease does not record what was counted of its guard: %q", claim)
	}
	t.Logf("Events on web: %s", strings.Join(eventNotes(t, c, ns, "web"), " | "))
}

// settledDecisions waits until ok holds, then checks it still holds three intervals
// later: a count that arrived twice would show by then.
func settledDecisions(t *testing.T, c *cluster, ns, name string, ok func(v1alpha1.DecisionCounts) bool) v1alpha1.DecisionCounts {
	t.Helper()
	eventually(t, "the decisions of Guardrail "+name, func() bool { return ok(decisionsOf(t, c, ns, name)) })
	time.Sleep(3 * time.Second)
	return decisionsOf(t, c, ns, name)
}

func decisionsOf(t *testing.T, c *cluster, ns, name string) v1alpha1.DecisionCounts {
	t.Helper()
	g := &v1alpha1.Guardrail{}
	if err := c.k8s.Get(testContext(t), client.ObjectKey{Namespace: ns, Name: name}, g); err != nil || g.Status.Decisions == nil {
		return v1alpha1.DecisionCounts{}
	}
	return *g.Status.Decisions
}

// assertCurrent checks the Guardrail is Ready and kstatus Current, as Flux and Argo CD
// judge it.
func assertCurrent(t *testing.T, c *cluster, ns, name, when string) {
	t.Helper()
	var st kstatus.Status
	eventually(t, "Guardrail "+name+" Current "+when, func() bool {
		g := &v1alpha1.Guardrail{}
		if err := c.k8s.Get(testContext(t), client.ObjectKey{Namespace: ns, Name: name}, g); err != nil {
			return false
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(g)
		if err != nil {
			return false
		}
		res, err := kstatus.Compute(&unstructured.Unstructured{Object: m})
		if err != nil {
			return false
		}
		st = res.Status
		return st == kstatus.CurrentStatus
	})
}

func eventNotes(t *testing.T, c *cluster, ns, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := c.k8s.List(testContext(t), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Type+"/"+e.Reason+": "+e.Note)
		}
	}
	return out
}

func hasEvent(t *testing.T, c *cluster, ns, name, kind, reason, prefix string) bool {
	for _, e := range eventNotes(t, c, ns, name) {
		if strings.HasPrefix(e, kind+"/"+reason+": "+prefix) {
			return true
		}
	}
	return false
}

func objectJSON(t *testing.T, c *cluster, ns, name string, obj client.Object) string {
	t.Helper()
	if err := c.k8s.Get(testContext(t), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	var body string
	eventually(t, "the manager's metrics", func() bool {
		resp, err := http.Get(url) //nolint:gosec,noctx // the test's own loopback address
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	})
	return body
}

// column returns the value under header in a two-line kubectl table.
// column reads a cell of kubectl's table by the position of its header: cells may be
// empty (a counter that is zero is not printed), so splitting on whitespace would shift
// the later columns.
func column(lines []string, header string) string {
	at := -1
	for i := 0; i+len(header) <= len(lines[0]); i++ {
		if lines[0][i:i+len(header)] == header && (i == 0 || lines[0][i-1] == ' ') &&
			(i+len(header) == len(lines[0]) || lines[0][i+len(header)] == ' ') {
			at = i
			break
		}
	}
	if at < 0 || at >= len(lines[1]) {
		return ""
	}
	cell, _, _ := strings.Cut(lines[1][at:], " ")
	return cell
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestDecisionsAcrossManagerRestarts: a rolling restart (SIGTERM) loses nothing, because
// the stopping replica writes what it counted before it exits; a crash (SIGKILL) loses
// nothing either, because what the replica claimed and had not written is owed on the
// guard's Lease and taken over by the next replica; and nothing is counted twice.
func TestDecisionsAcrossManagerRestarts(t *testing.T) {
	top := t
	c := startCluster(t)
	ctx := testContext(t)
	p := newProvider(t)
	certDir, work, snapDir := t.TempDir(), t.TempDir(), t.TempDir()
	if _, err := envtestutil.ServingCert(certDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	// A long status interval, so that counts sit in the manager's memory when it stops.
	const interval = "--decision-interval=20s"
	mgr := startManager(t, c.kubeconfig, certDir, addr, interval)
	const ns = "restart"
	tokenFile := c.injectedPod(t, ns, "web-1", work)
	words := &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Keywords: []v1alpha1.KeywordRule{
			{Category: "birds", Words: []string{"flamingo"}}}}}}
	g := guardrail("web", "words", phases(v1alpha1.PhaseInput))
	g.TypeMeta, g.Namespace = metav1.TypeMeta{}, ns
	g.Spec.Mode = v1alpha1.ModeReport
	for _, o := range []client.Object{words, g} {
		if err := c.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	gd := startGuard(t, "", upstream(p.URL), subscribedTo("https://"+addr, tokenFile, filepath.Join(certDir, "ca.crt"), snapDir),
		flags("--decision-interval", "200ms"))
	waitSummary(t, c, ns, "web", "1/1")

	send := func(n int) {
		for range n {
			if blocked(t, gd, "a flamingo") {
				t.Fatal("Report mode blocked a request")
			}
		}
	}
	// claimedOnPod is the cumulative wouldBlock the manager recorded as counted (on the
	// guard's Lease).
	claimedOnPod := func() int64 {
		claim := c.claim(t, ns, "web-1")
		if claim == "-" {
			return -1
		}
		var cl struct{ Guardrails []guardv1.GuardrailDecisions }
		_ = json.Unmarshal([]byte(claim), &cl)
		var n int64
		for _, gd := range cl.Guardrails {
			for _, x := range gd.Counts {
				if x.Outcome == "wouldBlock" {
					n += x.Requests
				}
			}
		}
		return n
	}

	t.Run("a rolling restart loses nothing", func(t *testing.T) {
		send(5)
		eventually(t, "the manager to count 5", func() bool { return claimedOnPod() == 5 })
		mgr.stop() // SIGTERM, well inside the 20s interval
		if got := decisionsOf(t, c, ns, "web").WouldBlock; got != 5 {
			t.Fatalf("after a graceful stop: wouldBlock %d, want 5", got)
		}
		mgr = startManager(top, c.kubeconfig, certDir, addr, interval)
		send(4)
		eventually(t, "the new manager to count 9", func() bool { return claimedOnPod() == 9 })
		mgr.stop()
		if got := decisionsOf(t, c, ns, "web").WouldBlock; got != 9 {
			t.Errorf("across a restart mid-traffic: wouldBlock %d, want 9", got)
		}
	})

	t.Run("crashes and stops under steady traffic lose and repeat nothing", func(t *testing.T) {
		// A 3s interval: when the manager is killed just after it claimed, what it claimed
		// is not in status yet. Its heartbeat lasts 3 intervals (9s); the next manager
		// takes the owed counts over from the guard's Lease once it expired.
		const iv = "--decision-interval=3s"
		mgr = startManager(top, c.kubeconfig, certDir, addr, iv)
		before := decisionsOf(t, c, ns, "web").WouldBlock
		var sent atomic.Int64
		stop, done := make(chan struct{}), make(chan struct{})
		errs := make(chan string, 1)
		go func() {
			defer close(done)
			body := `{"model":"gpt-e2e","messages":[{"role":"user","content":"a flamingo"}]}`
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				resp, err := http.Post(gd.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err.Error()
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Sprintf("Report mode answered %d", resp.StatusCode)
					return
				}
				sent.Add(1)
			}
		}()
		for i, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGKILL, syscall.SIGTERM, syscall.SIGKILL} {
			at := claimedOnPod()
			eventually(t, "the manager to claim more traffic", func() bool { return claimedOnPod() > at+3 })
			_ = mgr.cmd.Process.Signal(sig)
			<-mgr.exited
			t.Logf("stop %d: %v, %d requests sent so far", i+1, sig, sent.Load())
			mgr = startManager(top, c.kubeconfig, certDir, addr, iv)
		}
		time.Sleep(time.Second)
		close(stop)
		<-done
		select {
		case e := <-errs:
			t.Fatal(e)
		default:
		}
		want := before + sent.Load()
		deadline := time.Now().Add(60 * time.Second)
		for decisionsOf(t, c, ns, "web").WouldBlock < want && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(4 * 3 * time.Second) // nothing arrives twice late
		got := decisionsOf(t, c, ns, "web").WouldBlock
		t.Logf("%d requests under 3 SIGKILLs and 2 SIGTERMs of the manager: wouldBlock went from %d to %d", sent.Load(), before, got)
		if got != want {
			t.Errorf("wouldBlock %d, want exactly %d (%+d)", got, want, got-want)
		}
	})
}

// TestDecisionsFromSeveralGuardsCountRequests: three guards, each with its own pod, send
// known traffic through a Report-mode Guardrail judging Input, Stream and Output. A
// streamed answer is judged many times, a request may match in several phases: each
// request counts once, and the counters equal the traffic exactly.
func TestDecisionsFromSeveralGuardsCountRequests(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	p := fakeprovider.New(fakeprovider.WithHandler(func(r *fakeprovider.Request) fakeprovider.Script {
		if bytes.Contains(r.Body, []byte("quiet")) {
			return fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts("All ", "calm ", "here.")}}}
		}
		return fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts("Look, ", "a pink ", "flamingo ", "in the ", "lake.")}}}
	}))
	t.Cleanup(p.Close)
	certDir := t.TempDir()
	if _, err := envtestutil.ServingCert(certDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startManager(t, c.kubeconfig, certDir, addr, "--decision-interval=1s")
	const ns = "many"
	words := &v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Keywords: []v1alpha1.KeywordRule{
			{Category: "birds", Words: []string{"flamingo"}}}}}}
	g := guardrail("web", "words", phases(v1alpha1.PhaseInput, v1alpha1.PhaseStream, v1alpha1.PhaseOutput), streaming(1, 0))
	g.TypeMeta, g.Namespace = metav1.TypeMeta{}, ns
	g.Spec.Mode = v1alpha1.ModeReport
	var guards []*guard
	for i := range 3 {
		dir := t.TempDir()
		var tok string
		if i == 0 {
			tok = c.injectedPod(t, ns, "web-0", dir) // the namespace and its service account too
			for _, o := range []client.Object{words, g} {
				if err := c.k8s.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			tok = c.podWithToken(t, ns, fmt.Sprintf("web-%d", i), dir)
		}
		guards = append(guards, startGuard(t, "", upstream(p.URL),
			subscribedTo("https://"+addr, tok, filepath.Join(certDir, "ca.crt"), dir), flags("--decision-interval", "500ms")))
	}
	waitSummary(t, c, ns, "web", "3/3")

	post := func(gd *guard, prompt string, stream bool) {
		t.Helper()
		s := ""
		if stream {
			s = `"stream":true,`
		}
		resp, body := rawPost(t, gd.URL+"/v1/chat/completions", `{"model":"gpt-e2e",`+s+`"messages":[{"role":"user","content":"`+prompt+`"}]}`)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, lastResponse(t, p).Body) {
			t.Fatalf("Report mode changed an answer: %d %s", resp.StatusCode, body)
		}
	}
	var wouldBlock, allowed int64
	for i, gd := range guards {
		for range 2 + i { // the prompt and the answer match: one request, one wouldBlock
			post(gd, "a flamingo", false)
			wouldBlock++
		}
		for range 2 { // only the streamed answer matches, judged at every delta
			post(gd, "a pelican", true)
			wouldBlock++
		}
		for range 2 { // nothing matches anywhere
			post(gd, "a quiet pelican", true)
			allowed++
		}
	}
	got := settledDecisions(t, c, ns, "web", func(d v1alpha1.DecisionCounts) bool {
		return d.WouldBlock >= wouldBlock && d.Allowed >= allowed
	})
	if got.WouldBlock != wouldBlock || got.Allowed != allowed {
		t.Errorf("3 guards: wouldBlock %d, allowed %d; the traffic had %d and %d requests", got.WouldBlock, got.Allowed, wouldBlock, allowed)
	}
	if len(got.Categories) != 1 || got.Categories[0].Matches != wouldBlock {
		t.Errorf("categories %+v, want birds: %d", got.Categories, wouldBlock)
	}
	// The guards' own metrics count evaluations: many more than requests.
	evaluations := 0.0
	for _, gd := range guards {
		for _, line := range strings.Split(gd.metrics(), "\n") {
			if strings.HasPrefix(line, `guard_decisions_total{guardrail="many/web"`) {
				v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				evaluations += v
			}
		}
	}
	t.Logf("%d requests, %.0f evaluations: counted as %d wouldBlock and %d allowed", wouldBlock+allowed, evaluations, got.WouldBlock, got.Allowed)
	if evaluations <= float64(wouldBlock+allowed) {
		t.Errorf("%.0f evaluations for %d requests: the traffic does not exercise several evaluations per request", evaluations, wouldBlock+allowed)
	}
}

// claim is the decisions claim of the guard of pod ns/name, on its Lease in the operator's
// namespace; "-" when the pod or the Lease cannot be read.
func (c *cluster) claim(t *testing.T, ns, name string) string {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.k8s.Get(testContext(t), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		return "-"
	}
	lease := &coordinationv1.Lease{}
	if err := c.k8s.Get(testContext(t), client.ObjectKey{Namespace: operatorNS, Name: guards.LeaseName(pod.UID)}, lease); err != nil {
		return "-"
	}
	return lease.Annotations[guardv1.AnnotationDecisions]
}

// podWithToken creates a Running injected pod in an existing namespace (with its "app"
// service account) and writes a token bound to it into dir/token.
func (c *cluster) podWithToken(t *testing.T, ns, name, dir string) string {
	t.Helper()
	ctx := testContext(t)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"app": "web", guardv1.LabelInjected: "true"}}, Spec: guardSpec()}
	if err := c.k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	if err := c.k8s.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	exp := int64(3600)
	tr, err := c.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "app", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{guardv1.Audience}, ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
