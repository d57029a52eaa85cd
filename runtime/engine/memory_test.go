package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// TestMemoryIsBoundedByHoldBackAndWindows streams 1 MB through configurations whose
// retained text is bounded (doc.go, "Memory") and checks that the channel's buffer, its
// edits and its head stay within a bound that does not depend on the stream's length; and
// that the configurations documented as unbounded do keep the whole channel.
func TestMemoryIsBoundedByHoldBackAndWindows(t *testing.T) {
	const bounded, unbounded = 1 << 20, 128 << 10 // a whole-channel evaluation costs O(length)
	// Sentences of 50 characters, a secret every ~1000.
	sentence := strings.Repeat("word ", 9) + "end. "
	cases := []struct {
		name      string
		st        policy.Streaming
		action    policy.Action
		maxChars  int
		output    bool
		report    bool
		unbounded bool
		noPeriods bool
		// remote: the classifier returns no spans, so it is sent its whole window.
		remote bool
	}{
		{name: "cumulative with maxInputChars", st: policy.Streaming{EvaluateEveryChars: 100, HoldBack: 64}, maxChars: 500},
		{name: "cumulative with maxInputChars and redactions", st: policy.Streaming{EvaluateEveryChars: 100, HoldBack: 64}, maxChars: 500, action: policy.ActionRedact},
		{name: "chunkWindow", st: policy.Streaming{ChunkWindow: 4, HoldBack: 32}},
		{name: "Sentences with maxInputChars", st: policy.Streaming{Sentences: true, HoldBack: 200}, maxChars: 300},
		{name: "Sentences with maxInputChars and no sentence end", st: policy.Streaming{Sentences: true, HoldBack: 200}, maxChars: 300, noPeriods: true},
		{name: "maxEvaluations reached, the terminal window bounded by maxInputChars", st: policy.Streaming{EvaluateEveryChars: 10, MaxEvaluations: 3, HoldBack: 16}, maxChars: 500},
		{name: "the Output phase with maxInputChars keeps only the head", st: policy.Streaming{EvaluateEveryChars: 100, HoldBack: 64}, maxChars: 1000, output: true},
		{name: "Report mode", st: policy.Streaming{EvaluateEveryChars: 100, HoldBack: 5000}, maxChars: 500, report: true},
		{name: "a span-capable classifier without maxInputChars is judged incrementally", st: policy.Streaming{EvaluateEveryChars: 100, HoldBack: policy.HoldBackPending}, action: policy.ActionRedact},
		{name: "cumulative without maxInputChars keeps the whole channel", st: policy.Streaming{EvaluateEveryChars: 100}, unbounded: true, remote: true},
		{name: "Unbounded hold-back keeps the whole channel", st: policy.Streaming{EvaluateEveryChars: 100, HoldBack: policy.HoldBackUnbounded}, maxChars: 500, unbounded: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			action := tc.action
			if action == policy.ActionAllow {
				action = policy.ActionBlock
			}
			opts := []guardrailOption{maxChars(tc.maxChars)}
			if tc.output {
				opts = append(opts, func(g *policy.Guardrail, _ *policy.Classifier) { g.Phases = g.Phases.With(policy.PhaseOutput) })
			}
			if tc.report {
				opts = append(opts, reportMode())
			}
			w := secretGuard(action, tc.st, opts...)
			if tc.remote {
				w = &world{}
				c := w.classifier("remote", words(secret), withCategories("secret"))
				w.guardrail("g", c, append([]guardrailOption{phases(), threshold(0.5, action, nil), streaming(tc.st)}, opts...)...)
			}
			s, _ := w.session()
			ctx := context.Background()
			src := sentence
			if tc.noPeriods {
				src = strings.ReplaceAll(src, ".", ",")
			}
			total := bounded
			if tc.unbounded {
				total = unbounded
			}
			peak, peakEdits := 0, 0
			for n, i := 0, 0; n < total; i++ {
				d := src[(i*10)%len(src):][:min(10, len(src)-(i*10)%len(src))]
				if tc.action == policy.ActionRedact && i%100 == 0 {
					d = secret
				}
				step, err := s.Delta(ctx, text0, d)
				if err != nil || step.Stop != nil {
					t.Fatal(err, step.Stop)
				}
				n += len(d)
				c := s.chans[text0]
				peak, peakEdits = max(peak, cap(c.t.buf)), max(peakEdits, len(c.t.edits))
			}
			c := s.chans[text0]
			if tc.unbounded {
				if len(c.t.buf) < total {
					t.Fatalf("kept %d bytes, want the whole channel", len(c.t.buf))
				}
				return
			}
			// Retained: hold-back, window or maxInputChars (< 5000 characters here), at most
			// doubled before a trim, plus a delta; the allocator may round capacities up.
			if peak > 24<<10 || peakEdits > 20 || len(c.head) > 1000 {
				t.Fatalf("peak buffer %d bytes, %d edits, head %d: not bounded", peak, peakEdits, len(c.head))
			}
			if step, err := s.Finish(ctx); err != nil || step.Stop != nil {
				t.Fatal(err, step.Stop)
			}
		})
	}
}
