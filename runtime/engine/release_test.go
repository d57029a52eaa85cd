package engine

import (
	"context"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// A guard that follows pending matches but whose classifier has no backend cannot report
// pending text: it withholds everything it has not judged, and the evaluation that fails
// stops the stream before any of it is released.
func TestPendingGuardWithoutBackendWithholdsUnjudgedText(t *testing.T) {
	w := &world{}
	c := w.classifier("builtin", nil, withCategories("token"), withSpans(tokenHint))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil),
		streaming(policy.Streaming{EvaluateEveryChars: 100, HoldBack: policy.HoldBackPending}))
	s, _ := w.session()
	step, err := s.Delta(context.Background(), text0, "below the cadence")
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Release) > 0 {
		t.Fatalf("released %q before it was judged", step.Release[0].Text)
	}
	released, v := stream(t, s, text0, " and the rest", 4)
	if released != "" || v == nil || v.Kind != Failed {
		t.Fatalf("released %q, verdict %+v; want nothing released and a failure", released, v)
	}
}
