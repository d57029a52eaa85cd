package builtin

import (
	"context"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// FuzzClassify: whatever the text, Classify does not panic or fail, its spans are non-empty,
// within the text and sorted by Start then End, their categories exist, and a category scores
// 1 exactly when it has a span.
func FuzzClassify(f *testing.F) {
	for _, s := range loadCorpus(f) {
		f.Add(s.Text)
	}
	f.Add("")
	f.Add("\xff\xfe@\x00::\xe2\x80\x99")
	c, err := New(Config{
		Detectors: DetectorNames(),
		Patterns:  []Pattern{{Category: "ticket", Regex: `\bTCK-\d{5}\b`}, {Category: "acme", Regex: `(?i)acme-\d+`}},
		Keywords:  []KeywordSet{{Category: "fruit", Words: []string{"kiwi", "crème", "#tag"}}},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Scores) != len(c.Categories()) {
			t.Fatalf("%d scores for %d categories", len(r.Scores), len(c.Categories()))
		}
		has := make([]bool, len(r.Scores))
		for k, sp := range r.Spans {
			if sp.Start < 0 || sp.End > len(text) || sp.Start >= sp.End {
				t.Fatalf("span %+v out of bounds of %d bytes", sp, len(text))
			}
			if sp.Category < 0 || sp.Category >= len(r.Scores) {
				t.Fatalf("span %+v has no category", sp)
			}
			if k > 0 {
				p := r.Spans[k-1]
				if p.Start > sp.Start || p.Start == sp.Start && p.End > sp.End {
					t.Fatalf("spans not sorted: %+v before %+v", p, sp)
				}
			}
			has[sp.Category] = true
		}
		for i, s := range r.Scores {
			if (s == 1) != has[i] || s != 0 && s != 1 {
				t.Fatalf("category %d scores %v, has span %v", i, s, has[i])
			}
		}
	})
}
