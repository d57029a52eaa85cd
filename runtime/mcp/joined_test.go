package mcp

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestRedactionsInFindsTheSpansAMarkerReplaced(t *testing.T) {
	const m = "[REDACTED:secret]"
	for _, c := range []struct {
		name, orig, red string
		want            []redaction
	}{
		{"unchanged", "plain text", "plain text", nil},
		{"in the middle", "key ghp_abc ok", "key " + m + " ok", []redaction{{4, 11, m}}},
		{"whole text", "ghp_abc", m, []redaction{{0, 7, m}}},
		{"at the start", "ghp_abc ok", m + " ok", []redaction{{0, 7, m}}},
		{"at the end", "key ghp_abc", "key " + m, []redaction{{4, 11, m}}},
		{"two", "a X1 b X2 c", "a " + m + " b " + m + " c", []redaction{{2, 4, m}, {7, 9, m}}},
		{"adjacent", "a X1X2 c", "a " + m + "[REDACTED:email] c", []redaction{{2, 3, m}, {3, 6, "[REDACTED:email]"}}},
		{"an earlier redaction quoted as text", "was " + m + " now X9", "was " + m + " now " + m, []redaction{{26, 28, m}}},
		{"a span that begins like a marker", "[REDACTED:secret]X", m, []redaction{{0, 18, m}}},
		{"text that looks like a marker's start", "a [REDACTED: no end X1", "a [REDACTED: no end " + m, []redaction{{20, 22, m}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := redactionsIn(c.orig, c.red)
			if !ok || !slices.Equal(got, c.want) {
				t.Fatalf("redactionsIn = %v, %v; want %v", got, ok, c.want)
			}
		})
	}
	for _, red := range []string{"key ok", "key " + m + " changed", "other " + m} {
		if got, ok := redactionsIn("key ghp_abc ok", red); ok {
			t.Errorf("%q is not a redaction of the text, aligned as %v", red, got)
		}
	}
}

// TestRedactionsPlacedInThePartsJoinToTheJudgedText: whatever the spans and however the
// text is cut into parts, the parts as placed join to the redacted text, and no part
// keeps a byte of a span.
func TestRedactionsPlacedInThePartsJoinToTheJudgedText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 41))
	const alphabet = "ab[]:RDEACT -_x" // marker characters, to make alignment ambiguous
	for range 5000 {
		orig := make([]byte, rng.IntN(40))
		for i := range orig {
			orig[i] = alphabet[rng.IntN(len(alphabet))]
		}
		// Disjoint spans, each replaced by a marker.
		var spans []redaction
		var red strings.Builder
		for i := 0; i < len(orig); {
			if rng.IntN(4) == 0 {
				e := i + 1 + rng.IntN(min(6, len(orig)-i))
				mk := []string{"[REDACTED:secret]", "[REDACTED:a]"}[rng.IntN(2)]
				spans = append(spans, redaction{i, e, mk})
				red.WriteString(mk)
				i = e
				continue
			}
			red.WriteByte(orig[i])
			i++
		}
		found, ok := redactionsIn(string(orig), red.String())
		if !ok {
			t.Fatalf("no alignment of %q with %q (spans %v)", orig, red.String(), spans)
		}
		// Cut the text into 1 to 4 parts at random.
		cuts := []int{0}
		for range rng.IntN(4) {
			cuts = append(cuts, rng.IntN(len(orig)+1))
		}
		cuts = append(cuts, len(orig))
		slices.Sort(cuts)
		var parts []string
		for i := 1; i < len(cuts); i++ {
			parts = append(parts, string(orig[cuts[i-1]:cuts[i]]))
		}
		placed := placeRedactions(parts, found)
		if got := strings.Join(placed, ""); got != red.String() {
			t.Fatalf("parts %q placed as %q join to %q, want %q", parts, placed, got, red.String())
		}
	}
}

// TestPlacingASpanAcrossPartsLeavesItsMarkerWhereItStarts and removes the rest; spans that
// overlap merge under the marker of the first.
func TestPlacingASpanAcrossPartsLeavesItsMarkerWhereItStarts(t *testing.T) {
	const m = "[REDACTED:github-token]"
	parts := []string{"key gh", "p_", "abc ok"}
	got := placeRedactions(parts, []redaction{{4, 11, m}})
	if want := []string{"key " + m, "", " ok"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	got = placeRedactions(parts, []redaction{{6, 8, "[REDACTED:b]"}, {4, 11, m}, {10, 12, "[REDACTED:c]"}})
	if want := []string{"key " + m, "", "ok"}; !slices.Equal(got, want) {
		t.Fatalf("overlapping: got %q, want %q", got, want)
	}
}

// TestAlignmentGivesUpOnAResultBuiltToBacktrack within its bound.
func TestAlignmentGivesUpOnAResultBuiltToBacktrack(t *testing.T) {
	m := "[REDACTED:a]"
	orig := strings.Repeat("x", 20000)
	red := strings.Repeat(m, 3000) + "y"
	if _, ok := redactionsIn(orig, red); ok {
		t.Fatal("aligned a text that is not a redaction of the original")
	}
}
