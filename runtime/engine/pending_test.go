package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// tokenHint is the longest match of the tokens fake: "tk_" and up to 97 characters.
const tokenHint = 100

func tokenChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

// tokens is a fake span-capable detector shaped like the built-in credential detectors:
// "tk_" at a word start, then at least 8 and at most 97 letters or digits, as far as they
// go — so every prefix of a long token is itself a token. Without More the end of the
// text ends a token. With More the trailing run of word characters is pending: a token
// still arriving, or a beginning that could become one.
func tokens() *fake {
	return &fake{answer: func(_ context.Context, in classify.Input) (classify.Result, error) {
		s := in.Text
		res := classify.Result{Scores: []float64{0}, Open: len(s)}
		if in.More {
			for res.Open > 0 && tokenChar(s[res.Open-1]) {
				res.Open--
			}
		}
		for i := 0; i+3 <= len(s); i++ {
			if !strings.HasPrefix(s[i:], "tk_") || i > 0 && tokenChar(s[i-1]) {
				continue
			}
			j := i + 3
			for j < len(s) && j-i < tokenHint && tokenChar(s[j]) && s[j] != '_' {
				j++
			}
			if j-i-3 < 8 || j < len(s) && tokenChar(s[j]) || j > res.Open {
				continue
			}
			res.Scores[0] = 1
			res.Spans = append(res.Spans, classify.Span{Start: i, End: j, Category: 0})
			i = j
		}
		return res, nil
	}}
}

// tokenCase is prose with tokens of varying length planted at random offsets, split into
// deltas of one size.
type tokenCase struct {
	text, want string // want: the text with each token replaced by one marker
	toks       []string
	deltas     []string
	cadence    int
}

var proseWords = strings.Fields("the model said that a long answer is on its way, and then: " +
	"config values follow. Ünïcödé wörds, 日本語 too! (parenthesised) key=value; x-y")

func newTokenCase(rng *rand.Rand, ntok, size, cadence int) tokenCase {
	var text, want strings.Builder
	var toks []string
	words := 5 + rng.IntN(60)
	at := map[int]bool{}
	for range ntok {
		at[rng.IntN(words)] = true
	}
	for i := range words {
		if i > 0 {
			sep := []string{" ", "\n", ", ", " = ", ": \"", "\t"}[rng.IntN(6)]
			text.WriteString(sep)
			want.WriteString(sep)
		}
		if at[i] {
			body := make([]byte, 8+rng.IntN(53))
			for k := range body {
				body[k] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rng.IntN(62)]
			}
			tok := "tk_" + string(body)
			toks = append(toks, tok)
			text.WriteString(tok)
			want.WriteString("[REDACTED:token]")
			continue
		}
		w := proseWords[rng.IntN(len(proseWords))]
		text.WriteString(w)
		want.WriteString(w)
	}
	c := tokenCase{text: text.String(), want: want.String(), toks: toks, cadence: cadence}
	rs := []rune(c.text)
	for i := 0; i < len(rs); i += size {
		c.deltas = append(c.deltas, string(rs[i:min(i+size, len(rs))]))
	}
	return c
}

// withOutput adds the Output phase to a guardrail.
func withOutput(g *policy.Guardrail, _ *policy.Classifier) {
	g.Phases = g.Phases.With(policy.PhaseOutput)
}

func tokenGuard(action policy.Action, st policy.Streaming, opts ...guardrailOption) *world {
	w := &world{}
	c := w.classifier("builtin", tokens(), withCategories("token"), withSpans(tokenHint))
	w.guardrail("g", c, append([]guardrailOption{phases(), threshold(0.5, action, nil), streaming(st)}, opts...)...)
	return w
}

// run streams the case and returns the released text, the verdict, and, after each delta,
// how many bytes of the upstream text so far were still withheld.
func (c tokenCase) run(t *testing.T, s *Session) (string, *Verdict, []int) {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	var lag []int
	n := 0
	for _, d := range c.deltas {
		step, err := s.Delta(ctx, text0, d)
		if err != nil {
			t.Fatal(err)
		}
		collect(&out, step, text0)
		if step.Stop != nil {
			return out.String(), step.Stop, lag
		}
		n += len(d)
		lag = append(lag, n-out.Len())
	}
	step, err := s.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	collect(&out, step, text0)
	return out.String(), step.Stop, lag
}

// leaked returns an 8-byte piece of a token that the released text contains, or "".
func (c tokenCase) leaked(released string) string {
	for _, tok := range c.toks {
		for i := 0; i+8 <= len(tok); i++ {
			if strings.Contains(released, tok[i:i+8]) {
				return tok[i : i+8]
			}
		}
	}
	return ""
}

// TestPendingMatchesAreNeverReleasedInPart streams tokens of 11 to 63 characters, whose
// prefixes already match, planted at random offsets, for every delta size from 1 to 32,
// under every hold-back: no 8 characters of a token reach the client, a redacted token is
// one marker, and with nothing to find the client gets the upstream text byte for byte.
func TestPendingMatchesAreNeverReleasedInPart(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	holdBacks := []int{policy.HoldBackPending, 0, 5, policy.HoldBackUnbounded}
	for size := 1; size <= 32; size++ {
		for range 12 {
			cadence := []int{0, 0, 1 + rng.IntN(40)}[rng.IntN(3)]
			hb := holdBacks[rng.IntN(len(holdBacks))]
			st := policy.Streaming{EvaluateEveryChars: cadence, HoldBack: hb}
			if hb >= 0 {
				// A fixed hold-back covers text not judged yet; pending matches are held
				// whatever it is.
				st.HoldBack = hb + cadence
			}
			c := newTokenCase(rng, 1+rng.IntN(4), size, cadence)
			var opts []guardrailOption
			if rng.IntN(2) == 0 {
				opts = append(opts, withOutput)
			}
			name := fmt.Sprintf("delta %d, cadence %d, hold-back %d, %d options", size, cadence, st.HoldBack, len(opts))

			s, _ := tokenGuard(policy.ActionRedact, st, opts...).session()
			released, stop, _ := c.run(t, s)
			if stop != nil || released != c.want {
				t.Fatalf("%s: Redact released\n%q\nwant\n%q\n(deltas %q)", name, released, c.want, c.deltas)
			}

			s, _ = tokenGuard(policy.ActionBlock, st, opts...).session()
			released, stop, _ = c.run(t, s)
			first := strings.Index(c.text, c.toks[0])
			for _, tok := range c.toks[1:] {
				first = min(first, strings.Index(c.text, tok))
			}
			if stop == nil || stop.Kind != Blocked || !strings.HasPrefix(c.text, released) || len(released) > first {
				t.Fatalf("%s: Block released %q (stop %+v), a token starts at byte %d", name, released, stop, first)
			}
			if piece := c.leaked(released); piece != "" {
				t.Fatalf("%s: %q of a token reached the client", name, piece)
			}

			clean := newTokenCase(rng, 0, size, cadence)
			s, _ = tokenGuard(policy.ActionRedact, st, opts...).session()
			if released, stop, _ = clean.run(t, s); stop != nil || released != clean.text {
				t.Fatalf("%s: with nothing to find released %q, want %q", name, released, clean.text)
			}
		}
	}
}

// TestPendingHoldBackFollowsTheText: with the hold-back following pending matches and an
// evaluation on every delta, prose streams as it arrives: after each delta only the
// trailing run of word characters (a token could be arriving there) is withheld.
func TestPendingHoldBackFollowsTheText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for size := 1; size <= 32; size++ {
		c := newTokenCase(rng, 0, size, 0)
		s, _ := tokenGuard(policy.ActionRedact, policy.Streaming{HoldBack: policy.HoldBackPending}).session()
		released, stop, lag := c.run(t, s)
		if stop != nil || released != c.text {
			t.Fatalf("delta %d: released %q", size, released)
		}
		n := 0
		for i, d := range c.deltas {
			n += len(d)
			run := 0
			for run < n && tokenChar(c.text[n-1-run]) {
				run++
			}
			if lag[i] != run {
				t.Fatalf("delta %d: after %q withheld %d bytes, want the trailing word's %d", size, c.text[:n], lag[i], run)
			}
		}
	}
}

// TestPendingClassifierSeesUpstreamText: an entity is judged whole on upstream text even
// when evaluations saw parts of it, and a token whose prefix was seen earlier is redacted
// as one marker (the defect of issue 14: the tail of a token was released after its prefix
// was redacted).
func TestPendingClassifierSeesUpstreamText(t *testing.T) {
	f := tokens()
	w := &world{}
	c := w.classifier("builtin", f, withCategories("token"), withSpans(tokenHint))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionRedact, nil), streaming(policy.Streaming{HoldBack: policy.HoldBackPending}))
	s, _ := w.session()
	got, stop := stream(t, s, text0, "githubToken=tk_dxcx8weunmr0ida1hh3svh9qq and more", 3)
	if stop != nil || got != "githubToken=[REDACTED:token] and more" {
		t.Fatalf("released %q", got)
	}
	for _, in := range f.inputs {
		if strings.Contains(in.Text, "REDACTED") {
			t.Fatalf("the classifier was sent rewritten text %q", in.Text)
		}
	}
}

// TestPendingAnswerIsValidated: an Open outside the text is an invalid answer, and a span
// that ends after Open is pending (not redacted yet), whatever the classifier says.
func TestPendingAnswerIsValidated(t *testing.T) {
	t.Run("an Open past the text is an invalid answer", func(t *testing.T) {
		w := &world{}
		bad := &fake{answer: func(_ context.Context, in classify.Input) (classify.Result, error) {
			return classify.Result{Scores: []float64{0}, Open: len(in.Text) + 1}, nil
		}}
		c := w.classifier("builtin", bad, withCategories("token"), withSpans(10))
		w.guardrail("g", c, phases(), threshold(0.5, policy.ActionRedact, nil), streaming(policy.Streaming{HoldBack: policy.HoldBackPending}))
		s, rec := w.session()
		step, err := s.Delta(context.Background(), text0, "hello")
		if err != nil || step.Stop == nil || step.Stop.Code != classify.CodeInvalidAnswer {
			t.Fatalf("step %+v, err %v", step, err)
		}
		if len(rec.records) != 1 || rec.records[0].Code != classify.CodeInvalidAnswer {
			t.Fatalf("records %+v", rec.records)
		}
	})
	t.Run("a span past Open holds the text from its start", func(t *testing.T) {
		w := &world{}
		sloppy := &fake{answer: func(_ context.Context, in classify.Input) (classify.Result, error) {
			// Matches "secret" to the end and, with More, claims only part of it pending.
			res := classify.Result{Scores: []float64{0}, Open: len(in.Text)}
			if i := strings.Index(in.Text, "secret"); i >= 0 {
				res.Scores[0] = 1
				res.Spans = []classify.Span{{Start: i, End: len(in.Text)}}
				if in.More {
					res.Open = i + 2
				}
			}
			return res, nil
		}}
		c := w.classifier("builtin", sloppy, withCategories("token"), withSpans(10))
		w.guardrail("g", c, phases(), threshold(0.5, policy.ActionRedact, nil), streaming(policy.Streaming{HoldBack: policy.HoldBackPending}))
		s, _ := w.session()
		var out strings.Builder
		for _, d := range []string{"my secret", "value"} {
			step, _ := s.Delta(context.Background(), text0, d)
			if step.Stop != nil {
				t.Fatalf("stopped: %+v (a pending match is no match yet)", step.Stop)
			}
			collect(&out, step, text0)
		}
		if out.String() != "my " {
			t.Fatalf("released %q before the end, want only the text before the pending match", out.String())
		}
		step, _ := s.Finish(context.Background())
		collect(&out, step, text0)
		if out.String() != "my [REDACTED:token]" {
			t.Fatalf("released %q", out.String())
		}
	})
}

// A redaction still held back when the buffer is trimmed keeps its marker (mutation
// testing found the edits dropped with the released text: the entity went out in clear).
func TestTrimKeepsHeldRedactions(t *testing.T) {
	tok := "tk_" + strings.Repeat("Q7x", 12)
	text := strings.Repeat("words and more words. ", 182)[:4000] + " " + tok + " " + strings.Repeat("tail text ", 400)
	for _, st := range []policy.Streaming{
		{ChunkWindow: 1, HoldBack: 2000},
		{EvaluateEveryChars: 50, HoldBack: 2000},
		{HoldBack: policy.HoldBackPending},
	} {
		s, _ := tokenGuard(policy.ActionRedact, st, maxChars(100)).session()
		got, stop := stream(t, s, text0, text, 10)
		want := strings.Replace(text, tok, "[REDACTED:token]", 1)
		if stop != nil || got != want {
			t.Fatalf("%+v: the token went out as %q", st, got[3990:4060])
		}
	}
}

// The Output phase judges the whole output of a long stream: a match in its first
// characters is found even when the Stream guards keep only a short window (mutation
// testing found only the text still buffered judged).
func TestOutputPhaseJudgesTheWholeStream(t *testing.T) {
	text := "tk_abcdefgh12345678 starts this reply. " + strings.Repeat("and then it goes on for a while. ", 400)
	w := &world{}
	c := w.classifier("builtin", tokens(), withCategories("token"), withSpans(tokenHint))
	w.guardrail("output", c, phases(policy.PhaseOutput), threshold(0.5, policy.ActionBlock, nil))
	win := w.classifier("window", words("never"), withCategories("x"), withSpans(5))
	w.guardrail("stream", win, phases(), threshold(0.5, policy.ActionBlock, nil),
		streaming(policy.Streaming{EvaluateEveryChars: 10, HoldBack: 20}), maxChars(50))
	s, _ := w.session()
	if _, stop := stream(t, s, text0, text, 7); stop == nil || stop.Guardrail != "team/output" {
		t.Fatalf("the Output phase missed a match at the start of a %d-byte stream: %+v", len(text), stop)
	}
}

// The Classifier's own maxInputChars and timeout bound every evaluation, with or without
// the Guardrail's.
func TestClassifierLimitsApply(t *testing.T) {
	t.Run("maxInputChars", func(t *testing.T) {
		w := &world{}
		f := answering(classify.Result{Scores: []float64{0}})
		c := w.classifier("c", f, withCategories("x"))
		c.MaxInputChars = 10
		w.guardrail("g", c, threshold(0.5, policy.ActionBlock, nil))
		s, _ := w.session()
		if _, err := s.Input(context.Background(), []Message{user(strings.Repeat("abcdefghij", 10))}); err != nil {
			t.Fatal(err)
		}
		if got := f.texts(); len(got) != 1 || len(got[0]) != 10 {
			t.Fatalf("the classifier was sent %q, want 10 characters", got)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		w := &world{}
		slow := &fake{answer: func(ctx context.Context, _ classify.Input) (classify.Result, error) {
			<-ctx.Done()
			return classify.Result{}, ctx.Err()
		}}
		c := w.classifier("c", slow, withCategories("x"))
		c.Timeout = 20 * time.Millisecond
		w.guardrail("g", c, threshold(0.5, policy.ActionBlock, nil))
		s, _ := w.session()
		done := make(chan InputResult, 1)
		go func() {
			res, _ := s.Input(context.Background(), []Message{user("hello")})
			done <- res
		}()
		select {
		case res := <-done:
			if res.Stop == nil || res.Stop.Code != classify.CodeTimeout {
				t.Fatalf("stop %+v, want a TIMEOUT failure", res.Stop)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the classifier's timeout was not applied")
		}
	})
}

// A sentence ends at '.', '!' or '?' followed by whitespace, or at a newline: not inside
// "3.14" or "example.com".
func TestSentenceEndsNeedWhitespace(t *testing.T) {
	var w world
	f := answering(classify.Result{Scores: []float64{0}})
	c := w.classifier("judge", f, withCategories("harm"))
	w.guardrail("g", c, phases(), threshold(0.5, policy.ActionBlock, nil), streaming(policy.Streaming{Sentences: true}))
	s, _ := w.session()
	if _, stop := stream(t, s, text0, "Pi is 3.14 at example.com today. Next", 4); stop != nil {
		t.Fatal(stop)
	}
	want := []string{"Pi is 3.14 at example.com today.", "Pi is 3.14 at example.com today. Next"}
	if got := f.texts(); !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}
