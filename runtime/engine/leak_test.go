package engine

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// secret is what the built-in-like classifier detects; its length is its hold-back hint.
const secret = "SECRET-4111-Ω"

var secretLen = utf8.RuneCountInString(secret)

// leakCase is one random stream: text split into deltas, a cadence.
type leakCase struct {
	text    string
	deltas  []string
	cadence int
	at      int // rune offset of the planted secret, -1 when none
}

// newLeakCase builds text from base (made safe: it cannot contain the secret), plants the
// secret at a position derived from at when plant is set, and splits it at random.
func newLeakCase(base string, at int, plant bool, cadence int, seed uint64) leakCase {
	base = strings.ToValidUTF8(base, "?")
	base = strings.Map(func(r rune) rune {
		if strings.ContainsRune(secret, r) {
			return 'x'
		}
		return r
	}, base)
	rs := []rune(base)
	c := leakCase{cadence: cadence, at: -1}
	if plant {
		c.at = at % (len(rs) + 1)
		rs = append(rs[:c.at], append([]rune(secret), rs[c.at:]...)...)
	}
	c.text = string(rs)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	for i := 0; i < len(rs); {
		n := min(1+rng.IntN(20), len(rs)-i)
		c.deltas = append(c.deltas, string(rs[i:i+n]))
		i += n
	}
	return c
}

// randomCase draws a leak case from rng.
func randomCase(rng *rand.Rand, plant bool) leakCase {
	alphabet := []rune("abc déf ghi. jkl! 日本 mno?\n")
	rs := make([]rune, rng.IntN(300))
	for i := range rs {
		rs[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return newLeakCase(string(rs), rng.IntN(400), plant, rng.IntN(60), rng.Uint64())
}

// run streams the case on text0 and returns the released text, whether anything was
// released before the end, and the verdict.
func (c leakCase) run(t *testing.T, s *Session) (released string, early bool, stop *Verdict) {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	for _, d := range c.deltas {
		step, err := s.Delta(ctx, text0, d)
		if err != nil {
			t.Fatal(err)
		}
		collect(&out, step, text0)
		if step.Stop != nil {
			return out.String(), out.Len() > 0, step.Stop
		}
	}
	early = out.Len() > 0
	step, err := s.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	collect(&out, step, text0)
	return out.String(), early, step.Stop
}

func secretGuard(action policy.Action, st policy.Streaming, opts ...guardrailOption) *world {
	w := &world{}
	c := w.classifier("builtin", words(secret), withCategories("secret"), withSpans(secretLen))
	w.guardrail("g", c, append([]guardrailOption{phases(), threshold(0.5, action, nil), streaming(st)}, opts...)...)
	return w
}

// checkBlockLeaksNothing: in Enforce mode with hold-back >= cadence + the classifier's
// hint, no character of a blocked match is released.
func checkBlockLeaksNothing(t *testing.T, c leakCase) {
	w := secretGuard(policy.ActionBlock, policy.Streaming{EvaluateEveryChars: c.cadence, HoldBack: c.cadence + secretLen})
	s, _ := w.session()
	released, _, stop := c.run(t, s)
	if stop == nil || stop.Kind != Blocked {
		t.Fatalf("the secret at %d was not blocked (cadence %d)", c.at, c.cadence)
	}
	if !strings.HasPrefix(c.text, released) || utf8.RuneCountInString(released) > c.at {
		t.Fatalf("released %d characters, the secret starts at %d (cadence %d, deltas %q)",
			utf8.RuneCountInString(released), c.at, c.cadence, c.deltas)
	}
}

// checkRedactLeaksNothing: with Redact, the client receives the text with the secret
// replaced by a marker, exactly.
func checkRedactLeaksNothing(t *testing.T, c leakCase) {
	w := secretGuard(policy.ActionRedact, policy.Streaming{EvaluateEveryChars: c.cadence, HoldBack: c.cadence + secretLen})
	s, _ := w.session()
	released, _, stop := c.run(t, s)
	want := strings.Replace(c.text, secret, "[REDACTED:secret]", 1)
	if stop != nil || released != want {
		t.Fatalf("released %q, want %q (cadence %d, deltas %q)", released, want, c.cadence, c.deltas)
	}
}

// checkUnboundedHoldsEverything: with Unbounded, nothing is released before the terminal
// evaluation passes, and then everything.
func checkUnboundedHoldsEverything(t *testing.T, c leakCase) {
	w := secretGuard(policy.ActionBlock, policy.Streaming{EvaluateEveryChars: c.cadence, HoldBack: policy.HoldBackUnbounded})
	s, _ := w.session()
	released, early, stop := c.run(t, s)
	switch {
	case early:
		t.Fatalf("released text before the channel ended")
	case c.at >= 0 && (stop == nil || released != ""):
		t.Fatalf("released %q with the secret, stop %+v", released, stop)
	case c.at < 0 && (stop != nil || released != c.text):
		t.Fatalf("released %q, want the whole text", released)
	}
}

// checkReportReleasesEverything: in Report mode the client receives the upstream text
// exactly, as it arrives, whatever the guardrail would have done.
func checkReportReleasesEverything(t *testing.T, c leakCase, action policy.Action) {
	w := secretGuard(action, policy.Streaming{EvaluateEveryChars: c.cadence, HoldBack: policy.HoldBackUnbounded}, reportMode())
	s, _ := w.session()
	released, _, stop := c.run(t, s)
	if stop != nil || released != c.text {
		t.Fatalf("Report mode released %q, want %q", released, c.text)
	}
}

// checkAllowedReleasesEverything: when everything is allowed, the client receives the
// upstream text exactly, whatever the hold-back, cadence, window or segmentation.
func checkAllowedReleasesEverything(t *testing.T, c leakCase, rng *rand.Rand) {
	st := policy.Streaming{EvaluateEveryChars: c.cadence, HoldBack: rng.IntN(40), MaxEvaluations: rng.IntN(4)}
	switch rng.IntN(4) {
	case 0:
		st.ChunkWindow = 1 + rng.IntN(4)
	case 1:
		st.Sentences = true
	case 2:
		st.HoldBack = policy.HoldBackUnbounded
	}
	w := secretGuard(policy.ActionBlock, st, maxChars(rng.IntN(3)*50))
	w.guardrails[0].Phases = w.guardrails[0].Phases.With(policy.PhaseOutput)
	s, _ := w.session()
	released, _, stop := c.run(t, s)
	if stop != nil || released != c.text {
		t.Fatalf("released %q, want %q (streaming %+v)", released, c.text, st)
	}
}

func TestZeroLeakProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		planted := randomCase(rng, true)
		clean := randomCase(rng, false)
		checkBlockLeaksNothing(t, planted)
		checkRedactLeaksNothing(t, planted)
		checkUnboundedHoldsEverything(t, planted)
		checkUnboundedHoldsEverything(t, clean)
		checkReportReleasesEverything(t, planted, policy.ActionBlock)
		checkReportReleasesEverything(t, planted, policy.ActionRedact)
		checkAllowedReleasesEverything(t, clean, rng)
	}
}

func FuzzZeroLeak(f *testing.F) {
	f.Add("hello world, this is a stream of text", uint16(7), uint8(10), uint64(1))
	f.Add("", uint16(0), uint8(0), uint64(2))
	f.Add("日本語のテキスト。もっと。", uint16(3), uint8(1), uint64(3))
	f.Add(strings.Repeat("long text ", 40), uint16(399), uint8(100), uint64(4))
	f.Fuzz(func(t *testing.T, base string, at uint16, cadence uint8, seed uint64) {
		planted := newLeakCase(base, int(at), true, int(cadence), seed)
		checkBlockLeaksNothing(t, planted)
		checkRedactLeaksNothing(t, planted)
		checkUnboundedHoldsEverything(t, planted)
		checkReportReleasesEverything(t, planted, policy.ActionBlock)
		clean := newLeakCase(base, 0, false, int(cadence), seed)
		checkUnboundedHoldsEverything(t, clean)
		checkAllowedReleasesEverything(t, clean, rand.New(rand.NewPCG(seed, 9)))
	})
}
