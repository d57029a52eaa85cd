package builtin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

func TestNewRejectsInvalidConfigNamingTheItem(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error, one per offending item
	}{
		{
			name: "an unknown detector is named by its index and name",
			cfg:  Config{Detectors: []string{"email", "passport"}},
			want: []string{`detectors[1]: unknown detector "passport"`},
		},
		{
			name: "a regex that does not compile is named by its index",
			cfg: Config{Patterns: []Pattern{
				{Category: "a", Regex: `ok`}, {Category: "b", Regex: `fine`}, {Category: "c", Regex: `(unclosed`},
			}},
			want: []string{"patterns[2].regex: error parsing regexp: missing closing )"},
		},
		{
			name: "a regex that matches the empty string is rejected",
			cfg:  Config{Patterns: []Pattern{{Category: "digits", Regex: `\d*`}}},
			want: []string{"patterns[0].regex: matches the empty string"},
		},
		{
			name: "a pattern category that is not a DNS label is rejected",
			cfg:  Config{Patterns: []Pattern{{Category: "Project_Code", Regex: `PRJ-\d{4}`}}},
			want: []string{`patterns[0].category: "Project_Code" is not a lowercase DNS label`},
		},
		{
			name: "an empty word list is rejected",
			cfg:  Config{Keywords: []KeywordSet{{Category: "fruit", Words: []string{"apple"}}, {Category: "veg"}}},
			want: []string{"keywords[1].words: must not be empty"},
		},
		{
			name: "a blank word is named by its index",
			cfg:  Config{Keywords: []KeywordSet{{Category: "fruit", Words: []string{"apple", " "}}}},
			want: []string{"keywords[0].words[1]: must not be blank"},
		},
		{
			name: "every offending item is reported at once",
			cfg: Config{
				Detectors: []string{"nope"},
				Patterns:  []Pattern{{Category: "x", Regex: `[`}},
				Keywords:  []KeywordSet{{Category: "", Words: []string{"a"}}},
			},
			want: []string{"detectors[0]", "patterns[0].regex", "keywords[0].category"},
		},
		{
			name: "a configuration with nothing to detect is rejected",
			cfg:  Config{},
			want: []string{"no detectors, patterns or keywords"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if err == nil {
				t.Fatalf("New() = %v, want an error", c)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestCategoriesAreInAuthoredOrderWithoutDuplicates(t *testing.T) {
	c, err := New(Config{
		Detectors: []string{"jwt", "email", "jwt"},
		Patterns:  []Pattern{{Category: "ticket", Regex: `TCK-\d{5}`}, {Category: "email", Regex: `\w+@corp`}},
		Keywords:  []KeywordSet{{Category: "codename", Words: []string{"bluebird"}}, {Category: "ticket", Words: []string{"jira"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"jwt", "email", "ticket", "codename"}
	if got := c.Categories(); !slices.Equal(got, want) {
		t.Errorf("Categories() = %v, want %v", got, want)
	}
}

func TestHoldBackHintIsTheLongestPossibleMatch(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want int
	}{
		{"an SSN counts the words before it that say it is one", Config{Detectors: []string{"us-ssn"}}, numberContext},
		{"a card number counts the identifier words before it", Config{Detectors: []string{"credit-card"}}, numberContext},
		{"an IBAN is at most 42 characters", Config{Detectors: []string{"iban"}}, 42},
		{"an AWS secret key counts its key name", Config{Detectors: []string{"aws-secret-key"}}, assignContext},
		// A PEM block counts its header, not its block; the longest bounded private-key match
		// is a minisign secret key (8 + 240 characters).
		{"a private key counts its longest bounded key, not a PEM block", Config{Detectors: []string{"private-key"}}, 248},
		{"an AWS access key id is 20 characters", Config{Detectors: []string{"aws-access-key"}}, 20},
		{"the default packs are bounded by the longest window of injection signals", Config{Detectors: defaultPacks()}, max(maxGenericSecret, injectionHint)},
		{"the secrets pack is bounded by the longest secret value", Config{Detectors: Packs()["secrets"]}, maxGenericSecret},
		{"a bounded pattern counts its longest match", Config{Patterns: []Pattern{{Category: "t", Regex: `TCK-\d{5}(-[A-Z]{2})?`}}}, 12},
		{"an unbounded pattern is capped at 256", Config{Patterns: []Pattern{{Category: "t", Regex: `ACME-\d+`}}}, 256},
		{"a keyword counts characters, not bytes", Config{Keywords: []KeywordSet{{Category: "k", Words: []string{"crème brûlée", "tart"}}}}, 12},
		{"prompt injection counts its longest phrase with the widest gaps", Config{Detectors: []string{"prompt-injection"}}, injectionHint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.HoldBackHint(); got != tt.want {
				t.Errorf("HoldBackHint() = %d, want %d", got, tt.want)
			}
		})
	}
	// The pack's window of signals (320 bytes) and its look-back, not its phrases, set its
	// hint; a stream that judges it re-sends that much before its pending text.
	if injectionHint <= 0 || injectionHint > 512 {
		t.Errorf("injection hint %d is out of range", injectionHint)
	}
}

func TestPacksCoverEveryDetectorOnce(t *testing.T) {
	seen := map[string]string{}
	for pack, names := range Packs() {
		for _, n := range names {
			if prev, ok := seen[n]; ok {
				t.Errorf("detector %q is in packs %q and %q", n, prev, pack)
			}
			seen[n] = pack
		}
	}
	for _, n := range DetectorNames() {
		if _, ok := seen[n]; !ok {
			t.Errorf("detector %q is in no pack", n)
		}
		if err := validCategory(n); err != nil {
			t.Errorf("detector name: %v", err)
		}
	}
	if len(seen) != len(DetectorNames()) {
		t.Errorf("packs name %d detectors, DetectorNames has %d", len(seen), len(DetectorNames()))
	}
	Packs()["pii"][0] = "mutated"
	if Packs()["pii"][0] != "email" {
		t.Error("Packs() returned shared state")
	}
}

func TestClassifyResultShape(t *testing.T) {
	c, err := New(Config{Detectors: []string{"email", "phone"}, Keywords: []KeywordSet{{Category: "fruit", Words: []string{"kiwi"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a text without matches scores every category 0 and has no spans", func(t *testing.T) {
		r, err := c.Classify(context.Background(), classify.Input{Text: "nothing to see here"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Scores, []float64{0, 0, 0}) || r.Spans != nil || r.Refusals != nil || r.Answers != nil {
			t.Errorf("Classify() = %+v", r)
		}
	})
	t.Run("a match scores its category 1 and leaves the others 0", func(t *testing.T) {
		r, err := c.Classify(context.Background(), classify.Input{Text: "a kiwi for ann@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Scores, []float64{1, 0, 1}) || len(r.Spans) != 2 {
			t.Errorf("Classify() = %+v", r)
		}
	})
	t.Run("non-text parts are ignored", func(t *testing.T) {
		in := classify.Input{Parts: []classify.Part{{Modality: classify.Image, URL: "https://example.com/ann@example.com.png"}}}
		r, err := c.Classify(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Scores, []float64{0, 0, 0}) {
			t.Errorf("Scores = %v", r.Scores)
		}
	})
}

func TestClassifyHonoursTheContext(t *testing.T) {
	c := allDetectors(t)
	t.Run("a cancelled context ends the call with its error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Classify(ctx, classify.Input{Text: "ann@example.com"})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("an expired deadline is a timeout", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		_, err := c.Classify(ctx, classify.Input{Text: benchProse(200 << 10)})
		if classify.CodeOf(err) != classify.CodeTimeout {
			t.Errorf("CodeOf(%v) = %s, want TIMEOUT", err, classify.CodeOf(err))
		}
	})
}

func TestANoMatchCallAllocatesOnlyTheScores(t *testing.T) {
	c, err := New(Config{Detectors: defaultPacks()})
	if err != nil {
		t.Fatal(err)
	}
	in := classify.Input{Text: benchProse(16 << 10)}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := c.Classify(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("a call on prose allocates %.0f times, want at most 1 (the Scores slice)", allocs)
	}
	in.More = true
	allocs = testing.AllocsPerRun(20, func() {
		if _, err := c.Classify(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("a streaming call on prose allocates %.0f times, want at most 1 (the Scores slice)", allocs)
	}
}

func TestProseHasNoMatches(t *testing.T) {
	// The benchmark's no-match figure is only honest if its prose really matches nothing.
	c := allDetectors(t)
	text := benchProse(64 << 10)
	if got := matched(t, c, text); len(got) > 0 {
		t.Errorf("benchmark prose matches %v", got)
	}
	withMatches := matched(t, c, benchText(64<<10))
	for _, d := range []string{"email", "phone", "credit-card", "iban", "us-ssn", "ip-address", "aws-access-key",
		"github-token", "aws-secret-key", "prompt-injection", "generic-secret", "jwt"} {
		if !slices.Contains(withMatches, d) {
			t.Errorf("benchmark text with matches has no %s match", d)
		}
	}
}

func TestClassifyIsSafeForConcurrentUse(t *testing.T) {
	c, err := New(Config{
		Detectors: DetectorNames(),
		Patterns:  []Pattern{{Category: "ticket", Regex: `\bTCK-\d{5}\b`}, {Category: "acme", Regex: `ACME-\d+`}},
		Keywords:  []KeywordSet{{Category: "fruit", Words: []string{"kiwi"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := benchText(8<<10) + " TCK-12345 ACME-99 kiwi"
	want, err := c.Classify(context.Background(), classify.Input{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for range 4 {
		go func() {
			for range 20 {
				got, err := c.Classify(context.Background(), classify.Input{Text: text})
				if err == nil && !slices.Equal(got.Spans, want.Spans) {
					err = errors.New("spans differ between concurrent calls")
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
