package builtin

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestWindowedPatternsFindWhatFindAllFinds(t *testing.T) {
	texts := []string{
		"TCK-12345 and TCK-67890, not TCK-1234 or XTCK-12345",
		"ID:1234\nID:5678 trailing\nID:9999",
		"PRJ-ABC PRJ-ABCD prj-abc PRJ-XYZ.",
		"secret-42 SECRET-07 Secret-1",
		"AB123456CD654321 ab123456",
		"ünïcode TCK-00001 ☃ PRJ-ÄBC PRJ-QRS",
		"",
	}
	for _, src := range []string{`TCK-\d{5}`, `(?m)^ID:\d{4}$`, `\bPRJ-[A-Z]{3}\b`, `(?i)secret-\d{2}`, `[A-Z]{2}\d{6}`, `\bTCK-\d{5}\b`} {
		t.Run("the bounded, selective pattern "+src+" is matched in windows like FindAll", func(t *testing.T) {
			c, err := New(Config{Patterns: []Pattern{{Category: "p", Regex: src}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.windowed) != 1 {
				t.Fatalf("%s is not windowed", src)
			}
			re := regexp.MustCompile(src)
			for _, text := range texts {
				var want [][2]int
				for _, loc := range re.FindAllStringIndex(text, -1) {
					want = append(want, [2]int{loc[0], loc[1]})
				}
				var got [][2]int
				for _, sp := range spansIn(t, c, text) {
					got = append(got, [2]int{sp.Start, sp.End})
				}
				if !slices.Equal(got, want) {
					t.Errorf("%q: spans %v, FindAll %v", text, got, want)
				}
			}
		})
	}
}

func TestUnboundedPatternsRunOverTheWholeText(t *testing.T) {
	c, err := New(Config{Patterns: []Pattern{{Category: "acme", Regex: `ACME-\d+`}, {Category: "word", Regex: `\w{8}`}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.windowed) != 0 || len(c.global) != 2 {
		t.Fatalf("windowed %d, global %d; want 0 and 2", len(c.windowed), len(c.global))
	}
	long := "ACME-" + strings.Repeat("7", 300)
	got := spansIn(t, c, "id "+long+" end")
	if len(got) == 0 || got[0].Start != 3 || got[0].End != 3+len(long) {
		t.Errorf("spans %+v, want the whole %d-byte match", got, len(long))
	}
}

func TestKeywords(t *testing.T) {
	c, err := New(Config{Keywords: []KeywordSet{
		{Category: "animal", Words: []string{"cat", "new york city", "new york"}},
		{Category: "dessert", Words: []string{"crème brûlée"}},
		{Category: "brand", Words: []string{"ACME"}, CaseSensitive: true},
		{Category: "tag", Words: []string{"#internal"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		text string
		want []span
	}{
		{"a keyword matches as a whole word, ignoring case", "The Cat sat.", []span{{"animal", "Cat", 4}}},
		{"a keyword inside a longer word does not match", "concatenate cats catalogue", nil},
		{"a keyword next to an underscore or digit does not match", "cat_1 2cat cat9", nil},
		{"the longest keyword at a position wins", "I love New York City!", []span{{"animal", "New York City", 7}}},
		{"a phrase needs its exact spacing", "new  york", nil},
		{"non-ASCII keywords fold case", "Une CRÈME BRÛLÉE, svp", []span{{"dessert", "CRÈME BRÛLÉE", 4}}},
		{"a word boundary is Unicode-aware", "écat catà cat", []span{{"animal", "cat", 12}}},
		{"a case-sensitive keyword ignores other cases", "acme Acme ACME", []span{{"brand", "ACME", 10}}},
		{"a keyword that begins with punctuation matches after any byte", "see x#internal now", []span{{"tag", "#internal", 5}}},
		{"a keyword at the start and the end of the text matches", "cat", []span{{"animal", "cat", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spansOf(t, c, tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("spans of %q = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestOverlappingMatchesOfTwoDetectorsAreBothReported(t *testing.T) {
	c, err := New(Config{
		Detectors: []string{"email", "credit-card"},
		Patterns:  []Pattern{{Category: "corp-domain", Regex: `@example\.com`}},
		Keywords:  []KeywordSet{{Category: "visa", Words: []string{"4111"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := "mail ann@example.com, card 4111 1111 1111 1111"
	want := []span{
		{"email", "ann@example.com", 5},
		{"corp-domain", "@example.com", 8},
		{"visa", "4111", 27},
		{"credit-card", "4111 1111 1111 1111", 27},
	}
	if got := spansOf(t, c, text); !slices.Equal(got, want) {
		t.Errorf("spans = %v, want %v", got, want)
	}
}
