package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// decisionInterval is the servers' status write interval in these tests.
const decisionInterval = 300 * time.Millisecond

// Decisions from guards into Guardrail status, against the real apiserver with two
// Server replicas (two managers on the same apiserver) and real pod-bound tokens.

// cumulative is a guard's batch: since it started, wouldBlock and blocked requests under
// the Guardrail web-words of ns.
func cumulative(ns, incarnation string, wouldBlock, blocked int64) guardv1.DecisionsRequest {
	gd := guardv1.GuardrailDecisions{Guardrail: ns + "/web-words", Last: time.Now().UnixMilli(),
		Matches: map[string]int64{"banned": wouldBlock + blocked}}
	if wouldBlock > 0 {
		gd.Counts = append(gd.Counts, guardv1.DecisionCount{Generation: 1, Phase: "Input", Outcome: "wouldBlock", Category: "banned", Requests: wouldBlock})
	}
	if blocked > 0 {
		gd.Counts = append(gd.Counts, guardv1.DecisionCount{Generation: 1, Phase: "Input", Outcome: "blocked", Category: "banned", Requests: blocked})
	}
	return guardv1.DecisionsRequest{Incarnation: incarnation, Started: 1_700_000_000_000, Guardrails: []guardv1.GuardrailDecisions{gd},
		Samples: []guardv1.Sample{{Guardrail: ns + "/web-words", Outcome: "wouldBlock", RequestID: "req-1",
			Findings: []guardv1.SampleFinding{{Name: "banned", Score: 1, Threshold: 0.5}}}}}
}

func postDecisions(t *testing.T, url, tok string, req guardv1.DecisionsRequest) int {
	t.Helper()
	hc, err := cp.HTTPClientFor(caFile)
	must(t, err)
	body, _ := json.Marshal(req)
	hr, err := http.NewRequest(http.MethodPost, url+guardv1.DecisionsPath, bytes.NewReader(body))
	must(t, err)
	hr.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(hr)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func decisionsOf(t *testing.T, ns, name string) v1alpha1.DecisionCounts {
	t.Helper()
	g := &v1alpha1.Guardrail{}
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, g))
	if g.Status.Decisions == nil {
		return v1alpha1.DecisionCounts{}
	}
	return *g.Status.Decisions
}

// settled waits until the counts of ns/name satisfy ok, then checks that they still do
// several intervals later (nothing arrives twice late).
func settled(t *testing.T, ns, name string, ok func(v1alpha1.DecisionCounts) bool) v1alpha1.DecisionCounts {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok(decisionsOf(t, ns, name)) {
		if time.Now().After(deadline) {
			t.Fatalf("Guardrail %s: decisions %+v never reached what is expected", name, decisionsOf(t, ns, name))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(4 * decisionInterval)
	got := decisionsOf(t, ns, name)
	if !ok(got) {
		t.Fatalf("Guardrail %s: decisions moved on to %+v", name, got)
	}
	return got
}

func eventNotes(t *testing.T, ns, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	must(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Type+"/"+e.Reason+": "+e.Note)
		}
	}
	return out
}

func TestResentBatchesCountOnce(t *testing.T) {
	ns := fixture(t)
	tok := token(t, pod(t, ns, "web-1", "web"), guardv1.Audience)
	for _, url := range []string{baseURL, baseURL, secondURL} {
		if status := postDecisions(t, url, tok, cumulative(ns, "inc-1", 5, 0)); status != http.StatusNoContent {
			t.Fatalf("batch answered %d", status)
		}
	}
	got := settled(t, ns, "web-words", func(c v1alpha1.DecisionCounts) bool { return c.WouldBlock >= 5 })
	if got.WouldBlock != 5 {
		t.Errorf("the same cumulative batch posted 3 times (twice to one replica, once to the other) counted %d, want 5", got.WouldBlock)
	}
	if len(got.Categories) != 1 || got.Categories[0].Name != "banned" || got.Categories[0].Matches != 5 {
		t.Errorf("categories %+v, want banned: 5", got.Categories)
	}
	if status := postDecisions(t, secondURL, tok, cumulative(ns, "inc-1", 8, 1)); status != http.StatusNoContent {
		t.Fatalf("batch answered %d", status)
	}
	got = settled(t, ns, "web-words", func(c v1alpha1.DecisionCounts) bool { return c.WouldBlock >= 8 && c.Blocked >= 1 })
	if got.WouldBlock != 8 || got.Blocked != 1 {
		t.Errorf("after the cumulative 8/1: wouldBlock %d, blocked %d", got.WouldBlock, got.Blocked)
	}
	// The guard restarted: a new incarnation counts from zero, on top.
	if status := postDecisions(t, baseURL, tok, cumulative(ns, "inc-2", 2, 0)); status != http.StatusNoContent {
		t.Fatalf("batch answered %d", status)
	}
	got = settled(t, ns, "web-words", func(c v1alpha1.DecisionCounts) bool { return c.WouldBlock >= 10 })
	if got.WouldBlock != 10 {
		t.Errorf("after a new incarnation's 2: wouldBlock %d, want 10", got.WouldBlock)
	}
	var wouldBlock []string
	for _, e := range eventNotes(t, ns, "web-words") {
		if strings.HasPrefix(e, "Normal/WouldBlock: Would have blocked") {
			wouldBlock = append(wouldBlock, e)
		}
	}
	if len(wouldBlock) == 0 || !strings.Contains(wouldBlock[0], "pods web-1") || !strings.Contains(wouldBlock[0], "category banned") {
		t.Errorf("WouldBlock Events %q", wouldBlock)
	}
	t.Logf("events: %q", eventNotes(t, ns, "web-words"))
}

// TestTwoReplicasCountExactly: guards post growing cumulative batches, each to both
// replicas at once (a retry that lands elsewhere), concurrently: the counters are exact.
func TestTwoReplicasCountExactly(t *testing.T) {
	ns := fixture(t)
	const guards, batches = 4, 15
	writesBefore, start := statusWritesWritten(t), time.Now()
	var wg sync.WaitGroup
	var want int64
	errs := make(chan string, guards*batches*2)
	for i := range guards {
		tok := token(t, pod(t, ns, fmt.Sprintf("web-%d", i), "web"), guardv1.Audience)
		n := int64(0)
		var sent []guardv1.DecisionsRequest
		for b := range batches {
			n += int64(1 + (i+b)%3)
			sent = append(sent, cumulative(ns, fmt.Sprintf("guard-%d", i), n, 0))
		}
		want += n
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, req := range sent {
				var both sync.WaitGroup
				for _, url := range []string{baseURL, secondURL} {
					both.Add(1)
					go func() {
						defer both.Done()
						if status := postDecisions(t, url, tok, req); status != http.StatusNoContent {
							errs <- fmt.Sprintf("%s answered %d", url, status)
						}
					}()
				}
				both.Wait()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	got := settled(t, ns, "web-words", func(c v1alpha1.DecisionCounts) bool { return c.WouldBlock >= want })
	if got.WouldBlock != want {
		t.Errorf("%d guards × %d batches, each to two replicas: wouldBlock %d, want %d", guards, batches, got.WouldBlock, want)
	}
	t.Logf("wouldBlock %d from %d guards, %d batches each sent to both replicas", got.WouldBlock, guards, batches)
	// At most one status write per Guardrail per interval on each replica (+1 each for the
	// interval under way when the traffic began).
	writes, intervals := statusWritesWritten(t)-writesBefore, int(time.Since(start)/decisionInterval)
	t.Logf("%d status writes in %d intervals of %v, 2 replicas, %d batches", writes, intervals, decisionInterval, 2*guards*batches)
	if writes > 2*(intervals+1) {
		t.Errorf("%d status writes in %d intervals: more than one per interval per replica", writes, intervals)
	}
}

// statusWritesWritten reads guardrail_decisions_status_writes_total{result="written"}.
func statusWritesWritten(t *testing.T) int {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "guardrail_decisions_status_writes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "written" {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

func TestDecisionsForAnotherNamespaceAreRefused(t *testing.T) {
	a, b := fixture(t), fixture(t)
	tok := token(t, pod(t, a, "web-1", "web"), guardv1.Audience)
	if status := postDecisions(t, baseURL, tok, cumulative(b, "inc-1", 5, 0)); status != http.StatusForbidden {
		t.Errorf("a guard of %s posting for a Guardrail of %s: %d, want 403", a, b, status)
	}
	if status := postDecisions(t, baseURL, "", cumulative(a, "inc-1", 5, 0)); status != http.StatusUnauthorized {
		t.Errorf("a batch without a token: %d, want 401", status)
	}
	time.Sleep(4 * decisionInterval)
	if c := decisionsOf(t, b, "web-words"); c.WouldBlock != 0 {
		t.Errorf("namespace %s's Guardrail counted %d decisions of namespace %s's guard", b, c.WouldBlock, a)
	}
}

// TestATenantCannotResetTheClaim: what was counted of a guard is recorded on its Lease in
// the operator's namespace; a tenant that writes its pod's annotations — the claim's old
// home — makes nothing count twice.
func TestATenantCannotResetTheClaim(t *testing.T) {
	ns := fixture(t)
	ctx := context.Background()
	p := pod(t, ns, "web-1", "web")
	tok := token(t, p, guardv1.Audience)
	if status := postDecisions(t, baseURL, tok, cumulative(ns, "inc-1", 5, 0)); status != http.StatusNoContent {
		t.Fatalf("batch answered %d", status)
	}
	settled(t, ns, "web-words", func(c v1alpha1.DecisionCounts) bool { return c.WouldBlock >= 5 })
	l, err := leaseOf(t, p)
	must(t, err)
	if !strings.Contains(l.Annotations[guardv1.AnnotationDecisions], `"outcome":"wouldBlock"`) {
		t.Errorf("the guard's Lease does not record what was counted: %q", l.Annotations[guardv1.AnnotationDecisions])
	}
	// The tenant resets the claim where it used to be, and leaves a claim of nothing.
	must(t, k8s.Patch(ctx, p, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+guardv1.AnnotationDecisions+`":"{\"incarnation\":\"inc-1\",\"started\":1700000000000}"}}}`))))
	time.Sleep(500 * time.Millisecond) // the managers' caches see the edit
	for _, url := range []string{baseURL, secondURL} {
		if status := postDecisions(t, url, tok, cumulative(ns, "inc-1", 5, 0)); status != http.StatusNoContent {
			t.Fatalf("batch answered %d", status)
		}
	}
	if got := settled(t, ns, "web-words", func(c v1alpha1.DecisionCounts) bool { return c.WouldBlock >= 5 }); got.WouldBlock != 5 {
		t.Errorf("after the tenant reset its pod's annotation, the same batch counted %d, want 5", got.WouldBlock)
	}
}
