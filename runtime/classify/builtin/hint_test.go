package builtin

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// streamingPrefix are the detectors whose match runs to the end of the text while the secret
// is still arriving; their hint covers what they must see before they match, not the match.
var streamingPrefix = map[string]bool{"private-key": true, "jwt": true}

// longPrefix are the detectors whose long matches (past the hint: a 1Password service
// account token, a Fly.io token, a base64-encoded key in a Kubernetes Secret) are streaming
// prefixes too, while their bounded matches fit the hint.
var longPrefix = map[string]bool{"generic-secret": true}

// positives returns, per detector, the corpus snippets that must match it.
func positives(t *testing.T) map[string][]string {
	out := map[string][]string{}
	for _, s := range loadCorpus(t) {
		for _, w := range s.Want {
			out[w] = append(out[w], s.Text)
		}
	}
	return out
}

// only returns a classifier with one detector.
func only(t *testing.T, name string) *Classifier {
	t.Helper()
	c, err := New(Config{Detectors: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func spansIn(t *testing.T, c *Classifier, text string) []classify.Span {
	t.Helper()
	r, err := c.Classify(context.Background(), classify.Input{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return r.Spans
}

// TestEveryPositiveMatchFitsTheHint: for every detector, every match in its positive corpus
// examples is at most HoldBackHint characters long, so a hold-back of the hint covers it
// whole. The streaming-prefix detectors instead must match once the hint's worth of
// characters from the start of the match has arrived.
func TestEveryPositiveMatchFitsTheHint(t *testing.T) {
	for name, texts := range positives(t) {
		c := only(t, name)
		h := c.HoldBackHint()
		for _, text := range texts {
			for _, sp := range spansIn(t, c, text) {
				n := utf8.RuneCountInString(text[sp.Start:sp.End])
				if streamingPrefix[name] || longPrefix[name] && n > h {
					end := min(len(text), sp.Start+h)
					if len(spansIn(t, c, text[:end])) == 0 {
						t.Errorf("%s: the first %d characters of %q do not match", name, h, text[sp.Start:sp.End])
					}
					continue
				}
				if n > h {
					t.Errorf("%s: match %q is %d characters, hint is %d", name, text[sp.Start:sp.End], n, h)
				}
			}
		}
	}
}

// TestHoldBackNeverReleasesPartOfAMatch simulates the engine's hold-back on every
// positive corpus example, cut at every byte: after a passing evaluation of text[:t], the
// client may receive all but the last HoldBackHint characters. Whenever that released part
// reaches into a match of the whole text, the evaluation of text[:t] must itself have found
// a match covering the first byte of that match — so no byte of a secret, card number or
// address is released before it can be redacted.
func TestHoldBackNeverReleasesPartOfAMatch(t *testing.T) {
	for name, texts := range positives(t) {
		c := only(t, name)
		h := c.HoldBackHint()
		for _, text := range texts {
			for _, full := range spansIn(t, c, text) {
				for cut := full.Start + 1; cut <= len(text); cut++ {
					if !utf8.RuneStart(text[cut%len(text)]) && cut < len(text) {
						continue
					}
					prefix := text[:cut]
					released := releasedBytes(prefix, h)
					if released <= full.Start {
						continue
					}
					covered := false
					for _, sp := range spansIn(t, c, prefix) {
						covered = covered || sp.Start <= full.Start && full.Start < sp.End
					}
					if !covered {
						t.Errorf("%s: with hold-back %d, %q is released while %q is not matched",
							name, h, prefix[full.Start:released], text[full.Start:full.End])
						break
					}
				}
			}
		}
	}
}

// releasedBytes is how many bytes of text the engine releases when it withholds the last h
// characters.
func releasedBytes(text string, h int) int {
	n := len(text)
	for k := 0; k < h && n > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(text[:n])
		n -= size
	}
	return n
}

// TestASplitCardOrSecretIsMatchedOrNot feeds every prefix of a card number and of secrets
// alone: a prefix may match or not (a partial value after "TOKEN=" is already a generic
// secret, which is what a stream needs), but it never panics, never reports a span outside
// the prefix, and never reports a span that does not overlap a match of the whole text.
func TestASplitCardOrSecretIsMatchedOrNot(t *testing.T) {
	c := allDetectors(t)
	for _, text := range []string{
		"card 4111 1111 1111 1111 ok",
		"export GITHUB_TOKEN=" + withChecksum("gh"+"p_"+fakeFrom(alphaB62, 36, 3)) + "\n",
		"aws_secret_access_key = " + fakeBase64(40, 4) + "\n",
		"Bearer " + fakeJWT(5) + " done",
		fakePEM("RSA ", 6),
	} {
		full := spansIn(t, c, text)
		if len(full) == 0 {
			t.Fatalf("%q does not match", text)
		}
		for cut := 0; cut <= len(text); cut++ {
			for _, sp := range spansIn(t, c, text[:cut]) {
				if sp.Start < 0 || sp.End > cut || sp.Start >= sp.End {
					t.Errorf("prefix %q: span %+v out of bounds", text[:cut], sp)
				}
				overlaps := false
				for _, f := range full {
					overlaps = overlaps || sp.Start < f.End && f.Start < sp.End
				}
				if !overlaps {
					t.Errorf("prefix %q: %s match %q is not part of any match of the whole text",
						text[:cut], c.categories[sp.Category], text[sp.Start:sp.End])
				}
			}
		}
	}
}
