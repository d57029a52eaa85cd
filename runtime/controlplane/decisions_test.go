package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

func decided(g string, gen int64, o guardv1.Outcome, cat, reqID string) telemetry.RequestDecisions {
	r := engine.Record{Guardrail: g, Generation: gen, Phase: policy.PhaseInput, Outcome: o, IDs: engine.IDs{RequestID: reqID}}
	rd := telemetry.RequestDecisions{End: time.Now()}
	if cat != "" {
		r.Findings = []engine.Finding{{Kind: engine.FindingCategory, Name: cat, Score: 0.9, Threshold: 0.5}}
		rd.Matches = []telemetry.Match{{Guardrail: g, Name: cat}}
	}
	rd.Decisions = []engine.Record{r}
	return rd
}

func total(req guardv1.DecisionsRequest, g string, outcome guardv1.Outcome) (n int64) {
	for _, gd := range req.Guardrails {
		if gd.Guardrail != g {
			continue
		}
		for _, c := range gd.Counts {
			if c.Outcome == outcome {
				n += c.Requests
			}
		}
	}
	return n
}

func TestTotalsStayExactWhenTheBreakdownIsFull(t *testing.T) {
	a := NewAggregator()
	// Every request a new generation: far more keys than the aggregator keeps.
	const n = 3 * guardv1.MaxDecisionKeys
	for i := range n {
		a.Add(decided("ns/g", int64(i+1), guardv1.OutcomeWouldBlock, "pii", ""))
	}
	req, _ := a.Batch()
	if got := total(req, "ns/g", "wouldBlock"); got != n {
		t.Errorf("wouldBlock %d, want %d", got, n)
	}
	if len(req.Guardrails[0].Counts) > guardv1.MaxDecisionKeys+1 {
		t.Errorf("%d keys kept, want at most %d", len(req.Guardrails[0].Counts), guardv1.MaxDecisionKeys+1)
	}
	if req.Merged != n-guardv1.MaxDecisionKeys {
		t.Errorf("merged %d, want %d", req.Merged, n-guardv1.MaxDecisionKeys)
	}
	if req.Guardrails[0].Matches["pii"] != n {
		t.Errorf("matches %v", req.Guardrails[0].Matches)
	}
}

func TestSamplesCarryIDsNeverText(t *testing.T) {
	a := NewAggregator()
	a.Add(decided("ns/g", 1, guardv1.OutcomeBlocked, "pii", "req-1"))
	a.Add(decided("ns/g", 1, guardv1.OutcomeBlocked, "pii", "my secret prompt text"))
	a.Add(decided("ns/g", 1, guardv1.OutcomeAllowed, "", "req-3"))
	req, _ := a.Batch()
	if len(req.Samples) != 2 || req.Samples[0].RequestID != "req-1" || req.Samples[1].RequestID != "" {
		t.Errorf("samples %+v: want the two blocks, the second without its free-text request id", req.Samples)
	}
	for range 2 * guardv1.MaxSamples {
		a.Add(decided("ns/g", 1, guardv1.OutcomeBlocked, "pii", "r"))
	}
	if req, _ = a.Batch(); len(req.Samples) != guardv1.MaxSamples {
		t.Errorf("%d samples kept, want %d", len(req.Samples), guardv1.MaxSamples)
	}
}

// TestAFailedSendIsSupersededByTheNext: the operator is down for a batch; the next one
// carries everything, and nothing is sent when nothing changed.
func TestAFailedSendIsSupersededByTheNext(t *testing.T) {
	var mu sync.Mutex
	var got []guardv1.DecisionsRequest
	fail := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != guardv1.DecisionsPath || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		var req guardv1.DecisionsRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, req)
		if fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := NewAggregator()
	r := &Reporter{URL: srv.URL, TokenFile: tok, Agg: a, HTTPClient: srv.Client()}
	ctx := context.Background()
	for i := range 3 {
		a.Add(decided("ns/g", 1, guardv1.OutcomeWouldBlock, "pii", fmt.Sprint("r", i)))
	}
	if err := r.Flush(ctx); err == nil {
		t.Fatal("a refused batch reported as delivered")
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	for i := range 2 {
		a.Add(decided("ns/g", 1, guardv1.OutcomeWouldBlock, "pii", fmt.Sprint("s", i)))
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d batches sent, want 2 (nothing new after the second)", len(got))
	}
	if n := total(got[1], "ns/g", "wouldBlock"); n != 5 || got[1].Incarnation != got[0].Incarnation {
		t.Errorf("second batch: wouldBlock %d under incarnation %s, want the cumulative 5 under %s", n, got[1].Incarnation, got[0].Incarnation)
	}
}

// BenchmarkDecisionPath is what the decisions add to a guarded request: the per-request
// fold, two evaluations recorded, and the aggregator's count at the request's end.
func BenchmarkDecisionPath(b *testing.B) {
	tel := telemetry.New(nil)
	a := NewAggregator()
	tel.OnRequest(a.Add)
	tel.OnEvaluation(a.Evaluated)
	in := engine.Record{Guardrail: "ns/g", Generation: 1, Classifier: "ns/c", Phase: policy.PhaseInput,
		Outcome: guardv1.OutcomeWouldBlock, Duration: time.Millisecond,
		Findings: []engine.Finding{{Kind: engine.FindingCategory, Name: "pii", Score: 1, Threshold: 0.5}}}
	out := in
	out.Phase, out.Outcome, out.Findings = policy.PhaseOutput, guardv1.OutcomeAllowed, nil
	b.ReportAllocs()
	for b.Loop() {
		r := tel.Begin()
		r.Record(in)
		r.Record(out)
		r.Done()
	}
}

// BenchmarkTelemetryOnly is the same two records without decisions going anywhere: the
// baseline of BenchmarkDecisionPath.
func BenchmarkTelemetryOnly(b *testing.B) {
	tel := telemetry.New(nil)
	in := engine.Record{Guardrail: "ns/g", Generation: 1, Classifier: "ns/c", Phase: policy.PhaseInput,
		Outcome: guardv1.OutcomeWouldBlock, Duration: time.Millisecond,
		Findings: []engine.Finding{{Kind: engine.FindingCategory, Name: "pii", Score: 1, Threshold: 0.5}}}
	out := in
	out.Phase, out.Outcome, out.Findings = policy.PhaseOutput, guardv1.OutcomeAllowed, nil
	b.ReportAllocs()
	for b.Loop() {
		r := tel.Begin()
		r.Record(in)
		r.Record(out)
		r.Done()
	}
}
