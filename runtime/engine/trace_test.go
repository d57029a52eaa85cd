package engine

import (
	"context"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// traced keeps what a session's tracer sees.
type traced struct {
	recs   []Record
	starts []time.Time
}

func (t *traced) Evaluation(rec Record, start time.Time) {
	t.recs = append(t.recs, rec)
	t.starts = append(t.starts, start)
}

// The tracer sees every record the session emits, with when its evaluation started.
func TestTraceSeesEvaluations(t *testing.T) {
	w := benchWorld(2, policy.Streaming{HoldBack: 64}, policy.BackendBuiltin)
	var recorded []Record
	tr := &traced{}
	s := w.engine().NewSession(Options{Record: func(r Record) { recorded = append(recorded, r) }, Trace: tr})
	before := time.Now()
	if _, err := s.Delta(context.Background(), text0, "0123456789"); err != nil {
		t.Fatal(err)
	}
	if len(tr.recs) == 0 || len(tr.recs) != len(recorded) {
		t.Fatalf("the tracer saw %d records, the recorder %d", len(tr.recs), len(recorded))
	}
	for i, rec := range tr.recs {
		if rec.Guardrail != recorded[i].Guardrail || rec.Outcome != recorded[i].Outcome {
			t.Errorf("record %d: traced %+v, recorded %+v", i, rec, recorded[i])
		}
		if tr.starts[i].Before(before) || tr.starts[i].After(time.Now()) {
			t.Errorf("record %d: start %v is not the evaluation's", i, tr.starts[i])
		}
	}
}

// BenchmarkEvaluationTrace is BenchmarkEvaluationDispatch's one built-in guardrail without
// a tracer (tracing off: Options.Trace nil) and with one that does nothing: the hook's cost.
func BenchmarkEvaluationTrace(b *testing.B) {
	for _, bc := range []struct {
		name  string
		trace Tracer
	}{{"off", nil}, {"hook", nopTracer{}}} {
		b.Run(bc.name, func(b *testing.B) {
			w := benchWorld(1, policy.Streaming{HoldBack: 64}, policy.BackendBuiltin)
			s := w.engine().NewSession(Options{Record: func(Record) {}, Trace: bc.trace})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if step, err := s.Delta(ctx, text0, "0123456789"); err != nil || step.Stop != nil {
					b.Fatal(err, step)
				}
			}
		})
	}
}

type nopTracer struct{}

func (nopTracer) Evaluation(Record, time.Time) {}
