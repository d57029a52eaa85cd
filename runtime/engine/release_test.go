package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
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

// A span-capable classifier may report a match that lies wholly past its Open (text it
// also calls pending): the engine holds the match back with the rest of the pending text,
// whether the guardrail judges categories or only rules, and releases the settled text.
func TestMatchPastOpenIsPending(t *testing.T) {
	const text = "abc defghij"
	past := &fake{answer: func(_ context.Context, in classify.Input) (classify.Result, error) {
		res := classify.Result{Spans: []classify.Span{{Start: 6, End: 10}}, Open: len(in.Text)}
		if in.More {
			res.Open = 3
		}
		return res, nil
	}}
	scored := &fake{answer: func(ctx context.Context, in classify.Input) (classify.Result, error) {
		res, err := past.answer(ctx, in)
		res.Scores = []float64{1}
		return res, err
	}}
	cases := []struct {
		name   string
		fake   *fake
		opt    guardrailOption
		blocks bool // the terminal evaluation blocks
	}{
		{"category rules: the match counts only once settled", scored, threshold(0.5, policy.ActionBlock, nil), true},
		{"rules only, a result without scores", past, rule("r", "false", policy.ActionBlock, ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{}
			c := w.classifier("builtin", tc.fake, withCategories("token"), withSpans(4))
			w.guardrail("g", c, phases(), tc.opt, streaming(policy.Streaming{HoldBack: policy.HoldBackPending}))
			s, _ := w.session()
			step, err := s.Delta(context.Background(), text0, text)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			collect(&out, step, text0)
			if step.Stop != nil || out.String() != "abc" {
				t.Fatalf("released %q, verdict %+v; want the settled %q and no verdict", out.String(), step.Stop, "abc")
			}
			end, err := s.EndChannel(context.Background(), text0)
			if err != nil {
				t.Fatal(err)
			}
			if (end.Stop != nil) != tc.blocks || end.Stop != nil && end.Stop.Kind != Blocked {
				t.Fatalf("verdict %+v, want blocked %v", end.Stop, tc.blocks)
			}
		})
	}
}

// Text that a Strip dropped is released as nothing: no chunk at all, not an empty one.
func TestStrippedTextReleasesNoChunk(t *testing.T) {
	w := &world{}
	c := w.classifier("c", words("bad"), withCategories("x"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionStrip, nil), streaming(policy.Streaming{}))
	s, _ := w.session()
	step, err := s.Delta(context.Background(), text0, "so bad")
	if err != nil || step.Stop != nil {
		t.Fatalf("err %v, stop %+v", err, step.Stop)
	}
	if len(step.Release) != 0 {
		t.Fatalf("released %d chunks (%q), want none", len(step.Release), step.Release[0].Text)
	}
}

// A channel whose text is all settled ends without another evaluation: nothing is pending
// for the end to decide.
func TestSettledChannelEndsWithoutTerminalEvaluation(t *testing.T) {
	f := tokens()
	w := &world{}
	c := w.classifier("builtin", f, withCategories("token"), withSpans(tokenHint))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionRedact, nil), streaming(policy.Streaming{HoldBack: policy.HoldBackPending}))
	s, _ := w.session()
	released, v := stream(t, s, text0, "hello world.", 12)
	if v != nil || released != "hello world." {
		t.Fatalf("released %q, verdict %+v", released, v)
	}
	if n := f.calls(); n != 1 {
		t.Fatalf("%d classifier calls, want 1: the end has nothing left to judge", n)
	}
}
