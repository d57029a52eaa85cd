package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// instant answers at once with a fixed result, so that a benchmark measures the engine.
type instant struct{ res classify.Result }

func (c instant) Classify(context.Context, classify.Input) (classify.Result, error) {
	return c.res, nil
}

func benchWorld(n int, st policy.Streaming, backend policy.Backend) *world {
	w := &world{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("g%d", i)
		c := w.classifier(name, instant{classify.Result{Scores: []float64{0, 0}}}, withCategories("a", "b"))
		c.Backend = backend
		w.guardrail(name, c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(st), maxChars(500))
	}
	return w
}

// BenchmarkDeltaNoEvaluation is the cost of one 10-character delta through three stream
// guardrails when no cadence is due: append, hold-back, release.
func BenchmarkDeltaNoEvaluation(b *testing.B) {
	w := benchWorld(3, policy.Streaming{EvaluateEveryChars: 1 << 30, HoldBack: 64}, policy.BackendWebhook)
	s, _ := w.session()
	ctx := context.Background()
	for range 10 { // past the hold-back
		if _, err := s.Delta(ctx, text0, "0123456789"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		step, err := s.Delta(ctx, text0, "0123456789")
		if err != nil || step.Stop != nil || len(step.Release) != 1 {
			b.Fatal(err, step)
		}
	}
}

// BenchmarkEvaluationDispatch is the cost of one streaming evaluation with an instant
// classifier: window (the last 500 characters), call, validation, judgment, record,
// release. ns/op is per delta, ns/evaluation per evaluation. With three remote
// guardrails, two evaluations of each delta run on their own goroutines; built-in ones
// run on the calling goroutine.
func BenchmarkEvaluationDispatch(b *testing.B) {
	for _, bc := range []struct {
		n       int
		backend policy.Backend
	}{{1, policy.BackendBuiltin}, {3, policy.BackendBuiltin}, {1, policy.BackendWebhook}, {3, policy.BackendWebhook}} {
		b.Run(fmt.Sprintf("guardrails=%d/backend=%s", bc.n, bc.backend), func(b *testing.B) {
			w := benchWorld(bc.n, policy.Streaming{HoldBack: 64}, bc.backend)
			s := w.engine().NewSession(Options{Record: func(Record) {}})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				step, err := s.Delta(ctx, text0, "0123456789")
				if err != nil || step.Stop != nil {
					b.Fatal(err, step)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.n), "ns/evaluation")
		})
	}
}
