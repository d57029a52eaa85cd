package telemetry

import (
	"reflect"
	"sync"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

func rec(g string, p policy.Phase, o guardv1.Outcome, cats ...string) engine.Record {
	r := engine.Record{Guardrail: g, Generation: 1, Phase: p, Outcome: o}
	for _, c := range cats {
		r.Findings = append(r.Findings, engine.Finding{Kind: engine.FindingCategory, Name: c, Score: 1, Threshold: 0.5})
	}
	return r
}

type outcomeAt struct {
	guardrail string
	outcome   guardv1.Outcome
	phase     policy.Phase
}

func TestARequestCountsOncePerGuardrailAndOutcome(t *testing.T) {
	in, out := policy.PhaseInput, policy.PhaseOutput
	stream := policy.PhaseStream
	cases := []struct {
		name    string
		records []engine.Record
		want    []outcomeAt
		matches []Match
	}{
		{"an allowed request counts once as allowed",
			[]engine.Record{rec("ns/a", in, guardv1.OutcomeAllowed), rec("ns/a", out, guardv1.OutcomeAllowed)},
			[]outcomeAt{{"ns/a", guardv1.OutcomeAllowed, in}}, nil},
		{"a stream judged many times that would be blocked counts one wouldBlock, at its first phase",
			[]engine.Record{rec("ns/a", in, guardv1.OutcomeAllowed), rec("ns/a", stream, guardv1.OutcomeWouldBlock, "pii"),
				rec("ns/a", stream, guardv1.OutcomeWouldBlock, "pii"), rec("ns/a", out, guardv1.OutcomeWouldBlock, "pii")},
			[]outcomeAt{{"ns/a", guardv1.OutcomeWouldBlock, stream}}, []Match{{"ns/a", "pii"}}},
		{"two outcomes of one request both count, allowed does not",
			[]engine.Record{rec("ns/a", in, guardv1.OutcomeWarned, "rude"), rec("ns/a", out, guardv1.OutcomeBlocked, "pii", "rude")},
			[]outcomeAt{{"ns/a", guardv1.OutcomeWarned, in}, {"ns/a", guardv1.OutcomeBlocked, out}},
			[]Match{{"ns/a", "rude"}, {"ns/a", "pii"}}},
		{"each guardrail counts on its own",
			[]engine.Record{rec("ns/a", in, guardv1.OutcomeAllowed), rec("ns/b", in, guardv1.OutcomeWouldBlock, "pii")},
			[]outcomeAt{{"ns/a", guardv1.OutcomeAllowed, in}, {"ns/b", guardv1.OutcomeWouldBlock, in}}, []Match{{"ns/b", "pii"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tel := New(nil)
			var got []RequestDecisions
			var mu sync.Mutex
			tel.OnRequest(func(rd RequestDecisions) {
				mu.Lock()
				rd.Decisions, rd.Matches = append([]engine.Record(nil), rd.Decisions...), append([]Match(nil), rd.Matches...)
				got = append(got, rd)
				mu.Unlock()
			})
			r := tel.Begin()
			for _, x := range tc.records {
				r.Record(x)
			}
			r.Done()
			if len(got) != 1 {
				t.Fatalf("the sink got %d calls, want 1", len(got))
			}
			var outs []outcomeAt
			for _, d := range got[0].Decisions {
				outs = append(outs, outcomeAt{d.Guardrail, d.Outcome, d.Phase})
			}
			if !reflect.DeepEqual(outs, tc.want) {
				t.Errorf("decisions %v, want %v", outs, tc.want)
			}
			if !reflect.DeepEqual(got[0].Matches, tc.matches) {
				t.Errorf("matches %v, want %v", got[0].Matches, tc.matches)
			}
		})
	}
}

func TestWithoutASinkNothingIsKept(t *testing.T) {
	tel := New(nil)
	r := tel.Begin()
	r.Record(rec("ns/a", policy.PhaseInput, guardv1.OutcomeBlocked, "pii"))
	if len(r.first) != 0 || len(r.matches) != 0 {
		t.Error("a request kept records with nobody listening")
	}
	r.Done()
}
