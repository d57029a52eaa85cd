package intake

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

func batch(inc string, started int64, wouldBlock, blocked int64) *guardv1.DecisionsRequest {
	gd := guardv1.GuardrailDecisions{Guardrail: "shop/web", Last: 1_700_000_000_000, Matches: map[string]int64{"pii": wouldBlock + blocked}}
	if wouldBlock > 0 {
		gd.Counts = append(gd.Counts, guardv1.DecisionCount{Generation: 1, Phase: "Input", Outcome: "wouldBlock", Category: "pii", Requests: wouldBlock})
	}
	if blocked > 0 {
		gd.Counts = append(gd.Counts, guardv1.DecisionCount{Generation: 2, Phase: "Input", Outcome: "blocked", Category: "pii", Requests: blocked})
	}
	return &guardv1.DecisionsRequest{Incarnation: inc, Started: started, Guardrails: []guardv1.GuardrailDecisions{gd}}
}

func TestClaimCountsEachRequestOnce(t *testing.T) {
	type step struct {
		req                 *guardv1.DecisionsRequest
		wouldBlock, blocked int64
		stale               bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"the same batch twice counts once", []step{
			{batch("a", 1, 5, 0), 5, 0, false}, {batch("a", 1, 5, 0), 0, 0, false}}},
		{"a later batch adds its difference", []step{
			{batch("a", 1, 5, 0), 5, 0, false}, {batch("a", 1, 8, 2), 3, 2, false}}},
		{"an older batch arriving late adds nothing and lowers nothing", []step{
			{batch("a", 1, 8, 2), 8, 2, false}, {batch("a", 1, 5, 0), 0, 0, false}, {batch("a", 1, 9, 2), 1, 0, false}}},
		{"a new incarnation counts from zero", []step{
			{batch("a", 1, 8, 0), 8, 0, false}, {batch("b", 2, 3, 0), 3, 0, false}}},
		{"a dead incarnation's late batch is refused", []step{
			{batch("b", 2, 3, 0), 3, 0, false}, {batch("a", 1, 9, 0), 0, 0, true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var prev claimed
			for i, s := range tc.steps {
				deltas, next, err := claim(prev, s.req, testNow)
				if (err != nil) != s.stale {
					t.Fatalf("step %d: error %v, want stale %v", i, err, s.stale)
				}
				if err != nil {
					continue
				}
				var wb, b int64
				if d := deltas.guardrails["web"]; d != nil {
					wb, b = d.outcomes["wouldBlock"], d.outcomes["blocked"]
				}
				if wb != s.wouldBlock || b != s.blocked {
					t.Errorf("step %d: counted wouldBlock %d, blocked %d; want %d, %d", i, wb, b, s.wouldBlock, s.blocked)
				}
				prev = next
			}
		})
	}
}

func TestBatchesForAnotherNamespaceAreRefused(t *testing.T) {
	err := validateBatch(batch("a", 1, 1, 0), "other")
	r, ok := asRefusal(err)
	if !ok || r.status != 403 || r.reason != "other_namespace" {
		t.Errorf("got %v, want a 403 other_namespace refusal", err)
	}
	if err := validateBatch(batch("a", 1, 1, 0), "shop"); err != nil {
		t.Errorf("a batch of the guard's own namespace refused: %v", err)
	}
	bad := batch("not an id", 1, 1, 0)
	if _, ok := asRefusal(validateBatch(bad, "shop")); !ok {
		t.Error("an incarnation that is not an id was accepted")
	}
}

func TestStatusCountersAddUp(t *testing.T) {
	st := v1alpha1.GuardrailStatus{Decisions: &v1alpha1.DecisionCounts{WouldBlock: 4,
		Categories: []v1alpha1.CategoryCount{{Name: "pii", Matches: 4}}}}
	d := newDelta()
	d.outcomes["wouldBlock"], d.outcomes["allowed"] = 3, 7
	d.matches["pii"], d.matches["secrets"] = 3, 1
	d.last = time.Unix(1_700_000_000, 0)
	addDecisions(&st, d)
	c := st.Decisions
	if c.WouldBlock != 7 || c.Allowed != 7 || len(c.Categories) != 2 || c.Categories[0].Matches != 7 || c.Categories[1].Matches != 1 {
		t.Errorf("status %+v", c)
	}
	if st.LastDecisionTime == nil || !st.LastDecisionTime.Time.Equal(time.Unix(1_700_000_000, 0)) {
		t.Errorf("lastDecisionTime %v", st.LastDecisionTime)
	}
}

func TestEventMessagesSayWhatWhereAndWhoWithoutContent(t *testing.T) {
	p := &pendingDecisions{delta: newDelta(), since: time.Now().Add(-2 * time.Second),
		pods: map[string]struct{}{"web-7f9c": {}, "web-a": {}, "web-b": {}}, podsAll: 3,
		samples: map[guardv1.Outcome]guardv1.Sample{"blocked": {RequestID: "req-42", Findings: []guardv1.SampleFinding{{Name: "pii-email", Score: 0.97, Threshold: 0.5}}}}}
	p.outcomes["blocked"] = 12
	p.detail[detailKey{"blocked", "Input", "pii-email", ""}] = 12
	got := eventMessage("Blocked", "blocked", 12, p, 10*time.Second)
	want := "Blocked 12 requests in the last 10s (phase Input, category pii-email; pods web-7f9c, web-a, +1 more; e.g. request req-42: pii-email 0.97 ≥ 0.50)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if strings.Contains(got, "%!") {
		t.Error("a formatting error")
	}
}

func TestClassifierFiguresCountOnceAndGivePercentiles(t *testing.T) {
	figures := func(calls int64, timeouts int64, latency ...int64) *guardv1.DecisionsRequest {
		req := batch("a", 1, 1, 0)
		req.Classifiers = []guardv1.ClassifierCalls{{Classifier: "shop/judge", Calls: calls, Latency: latency}}
		if timeouts > 0 {
			req.Classifiers[0].Errors = map[string]int64{"TIMEOUT": timeouts}
		}
		return req
	}
	d1, prev, err := claim(claimed{}, figures(10, 1, 0, 0, 0, 0, 0, 9, 1), testNow)
	must(t, err)
	d2, prev, err := claim(prev, figures(10, 1, 0, 0, 0, 0, 0, 9, 1), testNow)
	must(t, err)
	d3, _, err := claim(prev, figures(14, 3, 0, 0, 0, 0, 0, 9, 5), testNow)
	must(t, err)
	if d1.classifiers["judge"].calls != 10 || d2.classifiers["judge"] != nil || d3.classifiers["judge"].calls != 4 ||
		d3.classifiers["judge"].errors["TIMEOUT"] != 2 {
		t.Errorf("calls counted %+v, %+v, %+v; want 10, none, 4 with 2 timeouts", d1.classifiers["judge"], d2.classifiers["judge"], d3.classifiers["judge"])
	}
	var st v1alpha1.ClassifierStatus
	addCalls(&st, d1.classifiers["judge"])
	addCalls(&st, d3.classifiers["judge"])
	if st.Calls.Total != 14 || st.Calls.Errors["TIMEOUT"] != 3 {
		t.Errorf("status %+v", st.Calls)
	}
	// The last window: 4 calls, all in the 100ms bucket.
	if st.Calls.LatencyP50.Duration != 100*time.Millisecond || st.Calls.LatencyP99.Duration != 100*time.Millisecond {
		t.Errorf("p50 %v, p99 %v; want 100ms", st.Calls.LatencyP50, st.Calls.LatencyP99)
	}
	if p, _ := percentile([]int64{0, 0, 0, 0, 0, 90, 9, 0, 0, 0, 0, 0, 0, 1}, 0.99); p != 100*time.Millisecond {
		t.Errorf("p99 of 90×50ms, 9×100ms, 1×>10s: %v, want 100ms", p)
	}
	if p, _ := percentile([]int64{0, 0, 0, 0, 0, 90, 9, 0, 0, 0, 0, 0, 0, 1}, 0.5); p != 50*time.Millisecond {
		t.Errorf("p50: %v, want 50ms", p)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFreeTextNeverPassesAsAName(t *testing.T) {
	for name, mutate := range map[string]func(*guardv1.DecisionsRequest){
		"a category": func(r *guardv1.DecisionsRequest) { r.Guardrails[0].Counts[0].Category = "my card is 4111 1111" },
		"a match":    func(r *guardv1.DecisionsRequest) { r.Guardrails[0].Matches = map[string]int64{"hello world": 1} },
		"a sampled finding": func(r *guardv1.DecisionsRequest) {
			r.Samples = []guardv1.Sample{{Findings: []guardv1.SampleFinding{{Name: "a prompt"}}}}
		},
		"a sampled request": func(r *guardv1.DecisionsRequest) { r.Samples = []guardv1.Sample{{RequestID: "what is my password?"}} },
	} {
		t.Run(name, func(t *testing.T) {
			req := batch("a", 1, 1, 0)
			mutate(req)
			if r, ok := asRefusal(validateBatch(req, "shop")); !ok || r.status != 400 {
				t.Errorf("free text in %s was accepted", name)
			}
		})
	}
}

// testNow is the manager's clock in the claim tests: a day after the batches' start.
var testNow = time.UnixMilli(1).Add(24 * time.Hour)

func TestForgedCountersAreRefusedAndNeverWrap(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	t.Run("two batches of MaxInt64 requests are refused, and nothing is counted", func(t *testing.T) {
		// The red team's batch: a pod POSTed requests=9223372036854775807 twice, and
		// BLOCKED read -1.
		forged := batch("a", start.UnixMilli(), 0, math.MaxInt64)
		if _, _, err := claim(claimed{}, forged, start.Add(10*time.Second)); !errors.Is(err, errImplausible) {
			t.Fatalf("claim of MaxInt64 requests: %v, want errImplausible", err)
		}
	})
	t.Run("a guard that decides as fast as any can is counted in full", func(t *testing.T) {
		prev := claimed{}
		var total int64
		for i := 1; i <= 6; i++ {
			now := start.Add(time.Duration(i) * 10 * time.Second)
			// 5,000 blocked a second for ten seconds per batch, cumulative.
			d, next, err := claim(prev, batch("a", start.UnixMilli(), 0, int64(i)*50_000), now)
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			total += d.guardrails["web"].outcomes["blocked"]
			prev = next
		}
		if total != 300_000 {
			t.Errorf("counted %d blocked, want 300000", total)
		}
	})
	t.Run("a batch adds at most what fits the time since the last one", func(t *testing.T) {
		_, prev, err := claim(claimed{}, batch("a", start.UnixMilli(), 0, 10), start.Add(10*time.Second))
		must(t, err)
		limit := plausibleLimit(10 * time.Second)
		if _, _, err := claim(prev, batch("a", start.UnixMilli(), 0, 10+limit+1), start.Add(20*time.Second)); !errors.Is(err, errImplausible) {
			t.Errorf("a batch adding %d in 10 s: %v, want errImplausible", limit+1, err)
		}
		if _, _, err := claim(prev, batch("a", start.UnixMilli(), 0, 10+limit), start.Add(20*time.Second)); err != nil {
			t.Errorf("a batch adding exactly the limit: %v", err)
		}
	})
	t.Run("a start in the future is refused", func(t *testing.T) {
		if _, _, err := claim(claimed{}, batch("a", start.Add(time.Hour).UnixMilli(), 0, 1), start); !errors.Is(err, errImplausible) {
			t.Errorf("claim: %v, want errImplausible", err)
		}
	})
	t.Run("status counters saturate instead of wrapping", func(t *testing.T) {
		st := v1alpha1.GuardrailStatus{Decisions: &v1alpha1.DecisionCounts{Blocked: math.MaxInt64 - 1,
			Categories: []v1alpha1.CategoryCount{{Name: "pii", Matches: math.MaxInt64}}}}
		d := newDelta()
		d.outcomes["blocked"] = 5
		d.matches["pii"] = 5
		addDecisions(&st, d)
		if st.Decisions.Blocked != math.MaxInt64 || st.Decisions.Categories[0].Matches != math.MaxInt64 {
			t.Errorf("blocked %d, pii matches %d; want both MaxInt64", st.Decisions.Blocked, st.Decisions.Categories[0].Matches)
		}
		var cs v1alpha1.ClassifierStatus
		addCalls(&cs, &callDelta{calls: math.MaxInt64})
		addCalls(&cs, &callDelta{calls: math.MaxInt64})
		if cs.Calls.Total != math.MaxInt64 {
			t.Errorf("classifier calls %d, want MaxInt64", cs.Calls.Total)
		}
		big := newDelta()
		big.outcomes["blocked"] = math.MaxInt64
		big.add(big)
		if big.outcomes["blocked"] != math.MaxInt64 {
			t.Errorf("a pending delta wrapped to %d", big.outcomes["blocked"])
		}
	})
}
