package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// streamGuard adds a guardrail judging the Stream phase only, with a words classifier.
func streamGuard(w *world, name string, action policy.Action, st policy.Streaming, ws ...string) *fake {
	f := words(ws...)
	ids := make([]string, len(ws))
	for i := range ws {
		ids[i] = "cat" + string(rune('a'+i))
	}
	c := w.classifier(name, f, append([]classifierOption{withCategories(ids...)}, withSpans(0))...)
	w.guardrail(name, c, phases(), threshold(0.5, action, nil), streaming(st))
	return f
}

func TestHoldBack(t *testing.T) {
	t.Run("the last holdBackChars characters are withheld until the channel ends", func(t *testing.T) {
		var w world
		streamGuard(&w, "g", policy.ActionBlock, policy.Streaming{EvaluateEveryChars: 5, HoldBack: 8}, "bad")
		s, _ := w.session()
		ctx := context.Background()
		var released strings.Builder
		for i := 0; i < 4; i++ {
			step, _ := s.Delta(ctx, text0, "abcde")
			collect(&released, step, text0)
			if want := max(0, 5*(i+1)-8); released.Len() != want {
				t.Fatalf("after %d characters released %d, want %d", 5*(i+1), released.Len(), want)
			}
		}
		step, _ := s.EndChannel(ctx, text0)
		collect(&released, step, text0)
		if released.String() != strings.Repeat("abcde", 4) {
			t.Fatalf("released %q at the end", released.String())
		}
	})
	t.Run("the effective hold-back is the maximum over the Enforce guardrails", func(t *testing.T) {
		var w world
		streamGuard(&w, "a", policy.ActionBlock, policy.Streaming{HoldBack: 3}, "x")
		streamGuard(&w, "b", policy.ActionBlock, policy.Streaming{HoldBack: 7}, "x")
		streamGuard(&w, "c", policy.ActionBlock, policy.Streaming{HoldBack: 50}, "x")
		w.guardrails[2].Mode = policy.ModeReport
		if got := w.engine().HoldBack(); got != 7 {
			t.Fatalf("hold-back %d, want 7 (a Report guardrail withholds nothing)", got)
		}
		streamGuard(&w, "d", policy.ActionBlock, policy.Streaming{HoldBack: policy.HoldBackUnbounded}, "x")
		if got := w.engine().HoldBack(); got != policy.HoldBackUnbounded {
			t.Fatalf("hold-back %d, want Unbounded", got)
		}
	})
	t.Run("Unbounded releases nothing before the terminal evaluation passes", func(t *testing.T) {
		var w world
		f := streamGuard(&w, "g", policy.ActionBlock, policy.Streaming{EvaluateEveryChars: 10, HoldBack: policy.HoldBackUnbounded}, "bad")
		s, _ := w.session()
		ctx := context.Background()
		for i := 0; i < 10; i++ {
			if step, _ := s.Delta(ctx, text0, "0123456789"); len(step.Release) != 0 {
				t.Fatalf("released %q before the end", step.Release[0].Text)
			}
		}
		step, _ := s.EndChannel(ctx, text0)
		if len(step.Release) != 1 || len(step.Release[0].Text) != 100 || f.calls() != 10 {
			t.Fatalf("at the end released %d chunks after %d calls, want the whole channel", len(step.Release), f.calls())
		}
	})
	t.Run("text below the cadence is classified at the channel end before it is released", func(t *testing.T) {
		var w world
		streamGuard(&w, "g", policy.ActionBlock, policy.Streaming{EvaluateEveryChars: 100, HoldBack: 100}, "bad")
		s, _ := w.session()
		released, stop := stream(t, s, text0, "all good here, bad", 4)
		if stop == nil || stop.Guardrail != "team/g" || released != "" {
			t.Fatalf("released %q, stop %+v: want the block and nothing released", released, stop)
		}
	})
	t.Run("a released chunk never splits a character", func(t *testing.T) {
		var w world
		streamGuard(&w, "g", policy.ActionBlock, policy.Streaming{HoldBack: 3}, "bad")
		s, _ := w.session()
		ctx := context.Background()
		text := "héllo wörld — ünïcödé ✓ 日本語のテキスト"
		for _, r := range text {
			step, _ := s.Delta(ctx, text0, string(r))
			for _, c := range step.Release {
				if !utf8.Valid(c.Text) {
					t.Fatalf("released invalid UTF-8 %q", c.Text)
				}
				if n := utf8.RuneCount(c.Text); n != 1 {
					t.Fatalf("released %d characters for one delta of one", n)
				}
			}
		}
	})
}

func TestStreamActions(t *testing.T) {
	cases := []struct {
		name     string
		action   policy.Action
		st       policy.Streaming
		text     string
		released string
		stop     string
		outcomes []string
	}{
		{name: "Block ends the stream with the verdict and releases nothing more",
			action: policy.ActionBlock, st: policy.Streaming{EvaluateEveryChars: 4, HoldBack: 8}, text: "hello there bad words",
			// Evaluations at 4, 8, 12 pass; "bad" completes at 16. 12-8 = 4 characters were out.
			released: "hell", stop: "blocked:g says no",
			outcomes: []string{"team/g:Stream:allowed", "team/g:Stream:allowed", "team/g:Stream:allowed", "team/g:Stream:blocked"}},
		{name: "Strip drops the held-back chunk and the stream continues",
			action: policy.ActionStrip, st: policy.Streaming{EvaluateEveryChars: 4, HoldBack: 8}, text: "hello there bad words and more",
			// At 16 the held "o there bad " is dropped; the rest streams on.
			released: "hellwords and more",
			outcomes: []string{"team/g:Stream:allowed", "team/g:Stream:allowed", "team/g:Stream:allowed",
				"team/g:Stream:stripped", "team/g:Stream:allowed", "team/g:Stream:allowed", "team/g:Stream:allowed", "team/g:Stream:allowed"}},
		{name: "Redact replaces matched spans in held text",
			action: policy.ActionRedact, st: policy.Streaming{EvaluateEveryChars: 4, HoldBack: 8}, text: "hello there bad words",
			released: "hello there [REDACTED:cata] words",
			// Later evaluations see the marker, not the word, and pass.
			outcomes: []string{"team/g:Stream:allowed", "team/g:Stream:allowed", "team/g:Stream:allowed",
				"team/g:Stream:redacted", "team/g:Stream:allowed", "team/g:Stream:allowed"}},
		{name: "Warn releases everything and records the warning",
			action: policy.ActionWarn, st: policy.Streaming{HoldBack: 2}, text: "bad",
			released: "bad", outcomes: []string{"team/g:Stream:warned"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w world
			streamGuard(&w, "g", tc.action, tc.st, "bad")
			s, rec := w.session()
			released, stop := stream(t, s, text0, tc.text, 4)
			if released != tc.released || verdictString(stop) != tc.stop {
				t.Errorf("released %q stop %q, want %q %q", released, verdictString(stop), tc.released, tc.stop)
			}
			if got := outcomes(rec); !slices.Equal(got, tc.outcomes) {
				t.Errorf("records %v, want %v", got, tc.outcomes)
			}
		})
	}
}

func TestOutputPhaseAtChannelEnd(t *testing.T) {
	cases := []struct {
		name     string
		ch       content.Channel
		action   policy.Action
		released string
		stop     string
		outcome  string
	}{
		{name: "Block at the end of a streamed answer stops the stream", ch: text0, action: policy.ActionBlock,
			released: "this is ", stop: "blocked:g says no", outcome: "team/g:Output:blocked"},
		{name: "Strip of a streamed answer escalates to Block: it is the whole final output", ch: text0, action: policy.ActionStrip,
			released: "this is ", stop: "blocked:g says no", outcome: "team/g:Output:blocked(escalated)"},
		{name: "Strip of streamed reasoning drops what is still held", ch: reasoning0, action: policy.ActionStrip,
			released: "this is ", outcome: "team/g:Output:stripped"},
		{name: "Redact at the end rewrites what is still held", ch: text0, action: policy.ActionRedact,
			released: "this is [REDACTED:bad]", outcome: "team/g:Output:redacted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w world
			c := w.classifier("c", words("bad"), withCategories("bad"), withSpans(0))
			w.guardrail("h", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{HoldBack: 3}))
			w.guardrails[0].Categories = nil // a stream guardrail that holds back and matches nothing
			w.guardrails[0].Rules = nil
			w.guardrail("g", c, phases(policy.PhaseOutput), threshold(0.5, tc.action, nil))
			s, rec := w.session()
			released, stop := stream(t, s, tc.ch, "this is bad", 1)
			if released != tc.released || verdictString(stop) != tc.stop {
				t.Errorf("released %q stop %q, want %q %q", released, verdictString(stop), tc.released, tc.stop)
			}
			got := outcomes(rec)
			if len(got) == 0 || got[len(got)-1] != tc.outcome {
				t.Errorf("records %v, want the last %s", got, tc.outcome)
			}
		})
	}
}

func TestReportModeStream(t *testing.T) {
	var w world
	streamGuard(&w, "g", policy.ActionBlock, policy.Streaming{EvaluateEveryChars: 2, HoldBack: 50}, "bad")
	w.guardrails[0].Mode = policy.ModeReport
	s, rec := w.session()
	text := "some bad text and more bad text"
	ctx := context.Background()
	var released strings.Builder
	for _, r := range text {
		step, err := s.Delta(ctx, text0, string(r))
		if err != nil || step.Stop != nil {
			t.Fatal(err, step.Stop)
		}
		collect(&released, step, text0)
		if !strings.HasPrefix(text, released.String()) || len(step.Release) == 0 {
			t.Fatalf("Report mode withheld or changed text: %q", released.String())
		}
	}
	if released.String() != text {
		t.Fatalf("released %q", released.String())
	}
	if !slices.Contains(outcomes(rec), "team/g:Stream:wouldBlock") {
		t.Errorf("records %v, want a wouldBlock", outcomes(rec))
	}
}

func TestStreamComposition(t *testing.T) {
	var w world
	redactor := words("4111")
	w.guardrail("redact", w.classifier("builtin", redactor, withCategories("card"), withSpans(4)),
		phases(), threshold(0.5, policy.ActionRedact, nil), streaming(policy.Streaming{EvaluateEveryChars: 8, HoldBack: 12}))
	checkers := []*fake{words("zzz"), words("zzz")}
	for i, f := range checkers {
		name := []string{"b-check", "a-check"}[i]
		w.guardrail(name, w.classifier(name, f, withCategories("x")), phases(), threshold(0.5, policy.ActionWarn, nil),
			streaming(policy.Streaming{EvaluateEveryChars: 8}))
	}
	s, rec := w.session()
	released, stop := stream(t, s, text0, "pay with 4111 today", 4)
	if stop != nil || released != "pay with [REDACTED:card] today" {
		t.Fatalf("released %q stop %+v", released, stop)
	}
	for _, f := range checkers {
		for _, text := range f.texts() {
			if strings.Contains(text, "4111") {
				t.Errorf("a checker saw %q: it must see the sanitized text", text)
			}
		}
	}
	var order []string
	for _, r := range rec.records {
		order = append(order, strings.TrimPrefix(r.Guardrail, "team/"))
	}
	want := []string{"redact", "a-check", "b-check", "redact", "a-check", "b-check", "redact", "a-check", "b-check"}
	if !slices.Equal(order, want) {
		t.Errorf("records in order %v, want the sanitizer then the others by key each round %v", order, want)
	}
}
