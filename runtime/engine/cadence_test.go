package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// letters returns n characters of varied text.
func letters(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteByte(byte('a' + i%26))
	}
	return b.String()
}

func TestCadenceCallCounts(t *testing.T) {
	allow := classify.Result{Scores: []float64{0}}
	cases := []struct {
		name   string
		chars  int
		delta  int
		st     policy.Streaming
		output bool
		max    int
		// want are the texts sent, as [from, to) ranges of the upstream text.
		want [][2]int
	}{
		{name: "a 1000-character stream in 10-character deltas at cadence 100 makes 10 calls and no terminal one",
			chars: 1000, delta: 10, st: policy.Streaming{EvaluateEveryChars: 100},
			want: ranges(0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)},
		{name: "a 1005-character stream makes 10 cadence calls and a terminal call on the residue",
			chars: 1005, delta: 10, st: policy.Streaming{EvaluateEveryChars: 100},
			want: append(ranges(0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000), [2]int{0, 1005})},
		{name: "deltas that do not divide the cadence evaluate when the growth first reaches it",
			chars: 100, delta: 30, st: policy.Streaming{EvaluateEveryChars: 50},
			want: ranges(0, 60, 100)},
		{name: "cadence 0 evaluates every delta",
			chars: 30, delta: 10, st: policy.Streaming{},
			want: ranges(0, 10, 20, 30)},
		{name: "the Output phase adds one call on the whole channel at its end",
			chars: 1000, delta: 10, st: policy.Streaming{EvaluateEveryChars: 100}, output: true,
			want: append(ranges(0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000), [2]int{0, 1000})},
		{name: "maxInputChars sends the last characters of the accumulated text",
			chars: 400, delta: 10, st: policy.Streaming{EvaluateEveryChars: 100}, max: 150,
			want: [][2]int{{0, 100}, {50, 200}, {150, 300}, {250, 400}}},
		{name: "maxEvaluations 3 stops cadence calls at 3 and still runs the terminal one",
			chars: 1000, delta: 10, st: policy.Streaming{EvaluateEveryChars: 100, MaxEvaluations: 3},
			want: append(ranges(0, 100, 200, 300), [2]int{0, 1000})},
		{name: "chunkWindow sends the last deltas",
			chars: 40, delta: 10, st: policy.Streaming{ChunkWindow: 2},
			want: [][2]int{{0, 10}, {0, 20}, {10, 30}, {20, 40}}},
		{name: "chunkWindow with a cadence sends the last deltas when the cadence is due",
			chars: 60, delta: 10, st: policy.Streaming{ChunkWindow: 2, EvaluateEveryChars: 30},
			want: [][2]int{{10, 30}, {40, 60}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w world
			f := answering(allow)
			c := w.classifier("judge", f, withCategories("harm"))
			opts := []guardrailOption{phases(), threshold(0.5, policy.ActionBlock, nil), streaming(tc.st), maxChars(tc.max)}
			if tc.output {
				opts = append(opts, func(g *policy.Guardrail, _ *policy.Classifier) { g.Phases = g.Phases.With(policy.PhaseOutput) })
			}
			w.guardrail("g", c, opts...)
			s, _ := w.session()
			text := letters(tc.chars)
			released, stop := stream(t, s, text0, text, tc.delta)
			if stop != nil || released != text {
				t.Fatalf("stop %v, released %d of %d characters", stop, len(released), len(text))
			}
			var want []string
			for _, r := range tc.want {
				want = append(want, text[r[0]:r[1]])
			}
			if got := f.texts(); !slices.Equal(got, want) {
				t.Errorf("calls: got %d %v, want %d %v", len(got), lengths(got), len(want), lengths(want))
			}
		})
	}
}

// ranges turns cumulative ends into [0, end) ranges.
func ranges(ends ...int) [][2]int {
	var out [][2]int
	for _, e := range ends[1:] {
		out = append(out, [2]int{ends[0], e})
	}
	return out
}

func lengths(ss []string) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = len(s)
	}
	return out
}

func TestCursorsOfTwoChannelsAreIndependent(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	c := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{EvaluateEveryChars: 100}))
	s, _ := w.session()
	ctx := context.Background()
	// 60 characters on each channel, interleaved: neither reaches 100 on its own.
	for i := 0; i < 6; i++ {
		for _, ch := range []content.Channel{text0, reasoning0} {
			if _, err := s.Delta(ctx, ch, letters(10)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := f.calls(); n != 0 {
		t.Fatalf("120 characters over two channels made %d calls, want 0", n)
	}
	for i := 0; i < 4; i++ {
		if _, err := s.Delta(ctx, text0, letters(10)); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.texts(); len(got) != 1 || len(got[0]) != 100 {
		t.Fatalf("the text channel reaching 100 made calls %v, want one of 100 characters", lengths(got))
	}
	if _, err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	// Finish classifies the reasoning residue (60) only: the text channel is at its cursor.
	if got := f.texts(); len(got) != 2 || len(got[1]) != 60 {
		t.Fatalf("calls after Finish %v, want [100 60]", lengths(got))
	}
}

func TestObjectChannelClassifiesEverySnapshot(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	c := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{EvaluateEveryChars: 1000}))
	s, _ := w.session()
	ctx := context.Background()
	snaps := []string{`{"a":`, `{"a":1`, `{"a":1,"b":2}`}
	var released []string
	for _, snap := range snaps {
		step, err := s.Snapshot(ctx, object0, snap)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range step.Release {
			if !ch.Replace {
				t.Errorf("an object chunk must replace the previous snapshot")
			}
			released = append(released, string(ch.Text))
		}
	}
	if _, err := s.EndChannel(ctx, object0); err != nil {
		t.Fatal(err)
	}
	if got := f.texts(); !slices.Equal(got, snaps) {
		t.Errorf("classified %q, want every snapshot %q (the cadence does not apply)", got, snaps)
	}
	if !slices.Equal(released, snaps) {
		t.Errorf("released %q, want each snapshot once judged", released)
	}
}

func TestObjectChannelRespectsMaxEvaluations(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	c := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{MaxEvaluations: 2}))
	s, rec := w.session()
	ctx := context.Background()
	for _, snap := range []string{`{`, `{"a"`, `{"a":1`, `{"a":1}`} {
		if _, err := s.Snapshot(ctx, object0, snap); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.EndChannel(ctx, object0); err != nil {
		t.Fatal(err)
	}
	if got, want := f.texts(), []string{`{`, `{"a"`, `{"a":1}`}; !slices.Equal(got, want) {
		t.Errorf("classified %q, want the first two and the final snapshot %q", got, want)
	}
	last := rec.records[len(rec.records)-1]
	if !last.Partial || last.Outcome != guardv1.OutcomeAllowed {
		t.Errorf("the terminal record is %+v, want allowed and partial", last)
	}
}

func TestMaxEvaluationsRecordsPartialInspection(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	c := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil),
		streaming(policy.Streaming{EvaluateEveryChars: 100, MaxEvaluations: 3}))
	s, rec := w.session()
	if _, stop := stream(t, s, text0, letters(1000), 10); stop != nil {
		t.Fatal(stop)
	}
	var got []string
	for _, r := range rec.records {
		got = append(got, string(r.Outcome)+partialMark(r.Partial))
	}
	want := []string{"allowed", "allowed", "allowed", "notInspected(partial)", "allowed(partial)"}
	if !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
}

func partialMark(p bool) string {
	if p {
		return "(partial)"
	}
	return ""
}

func TestSentencesSendCompleteSentencesWithOneOfOverlap(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	c := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{Sentences: true}))
	s, _ := w.session()
	text := "One. Two is here! Three? Four"
	if _, stop := stream(t, s, text0, text, 3); stop != nil {
		t.Fatal(stop)
	}
	want := []string{"One.", "One. Two is here!", " Two is here! Three?", " Three? Four"}
	if got := f.texts(); !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}

func TestSentencesCutALongSentenceAtMaxInputChars(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	c := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{Sentences: true}), maxChars(40))
	s, _ := w.session()
	text := letters(100)
	if _, stop := stream(t, s, text0, text, 10); stop != nil {
		t.Fatal(stop)
	}
	// Cut at 40 and 80 pending characters, the overlap is the previous cut; then the rest.
	want := []string{text[0:40], text[40:80], text[60:100]}
	if got := f.texts(); !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v", lengths(got), lengths(want))
	}
}

// TestWindowsAfterTrimming streams far past the buffer's trim size and checks that every
// text sent is still the right window of the upstream text.
func TestWindowsAfterTrimming(t *testing.T) {
	const n, d = 40000, 7
	text := letters(n)
	cases := []struct {
		name   string
		st     policy.Streaming
		max    int
		output bool
		// want returns the expected text of an evaluation after the delta [start, end).
		want func(start, end int) string
	}{
		{name: "the last maxInputChars characters of a cumulative stream", st: policy.Streaming{EvaluateEveryChars: 50, HoldBack: 10}, max: 300,
			want: func(_, end int) string { return text[max(0, end-300):end] }},
		{name: "the last chunkWindow deltas", st: policy.Streaming{ChunkWindow: 3, HoldBack: 10}, max: 100,
			want: func(start, end int) string { return text[max(0, start-2*d):end] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w world
			f := answering(classify.Result{Scores: []float64{0}})
			c := w.classifier("judge", f, withCategories("harm"))
			w.guardrail("g", c, phases(policy.PhaseOutput), threshold(0.5, policy.ActionBlock, nil), streaming(tc.st), maxChars(tc.max))
			s, _ := w.session()
			ctx := context.Background()
			for i := 0; i < n; i += d {
				before := f.calls()
				if _, err := s.Delta(ctx, text0, text[i:min(i+d, n)]); err != nil {
					t.Fatal(err)
				}
				if f.calls() > before {
					if got, want := f.texts()[before], tc.want(i, min(i+d, n)); got != want {
						t.Fatalf("at %d sent %d characters %.20q…, want %d %.20q…", i+d, len(got), got, len(want), want)
					}
				}
			}
			if len(s.chans[text0].t.buf) > 8<<10 {
				t.Fatalf("the buffer was not trimmed: %d bytes", len(s.chans[text0].t.buf))
			}
			if _, err := s.EndChannel(ctx, text0); err != nil {
				t.Fatal(err)
			}
			texts := f.texts()
			if got := texts[len(texts)-1]; tc.max > 0 && got != text[:tc.max] {
				t.Errorf("the Output phase judged %.20q…, want the first %d characters", got, tc.max)
			}
		})
	}
}

// Each guardrail's chunkWindow counts its own number of deltas, when guardrails with
// different windows share a channel (the channel keeps the largest).
func TestChunkWindowsOfTwoGuardrails(t *testing.T) {
	const d = 7
	text := letters(40 * d)
	var w world
	windows := []int{2, 5}
	var fakes []*fake
	for i, k := range windows {
		f := answering(classify.Result{Scores: []float64{0}})
		fakes = append(fakes, f)
		name := fmt.Sprintf("g%d", i)
		w.guardrail(name, w.classifier("judge-"+name, f, withCategories("harm")), phases(), threshold(0.5, policy.ActionBlock, nil),
			streaming(policy.Streaming{ChunkWindow: k, HoldBack: 10}))
	}
	s, _ := w.session()
	ctx := context.Background()
	for i := 0; i < len(text); i += d {
		before := []int{fakes[0].calls(), fakes[1].calls()}
		if _, err := s.Delta(ctx, text0, text[i:i+d]); err != nil {
			t.Fatal(err)
		}
		for j, f := range fakes {
			if f.calls() == before[j] {
				t.Fatalf("guardrail %d was not called after delta %d", j, i/d)
			}
			if got, want := f.texts()[before[j]], text[max(0, i-(windows[j]-1)*d):i+d]; got != want {
				t.Fatalf("after delta %d guardrail %d (chunkWindow %d) was sent %q, want %q", i/d, j, windows[j], got, want)
			}
		}
	}
}

// A delta completing several sentences at once is judged whole, and the next window
// overlaps it by its last sentence only.
func TestSentencesOverlapByTheLastSentenceOfAWindow(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	c := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{Sentences: true}))
	s, _ := w.session()
	if _, stop := stream(t, s, text0, "One. Two. Three. Four. Five", 17, 10); stop != nil {
		t.Fatal(stop)
	}
	want := []string{"One. Two. Three.", " Three. Four.", " Four. Five"}
	if got := f.texts(); !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}
