package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// benchInjection runs the prompt-injection pack alone on text.
func benchInjection(b *testing.B, text string, more bool) {
	c, err := New(Config{Detectors: []string{"prompt-injection"}})
	if err != nil {
		b.Fatal(err)
	}
	in := classify.Input{Text: text, More: more}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Classify(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInjectionProse64KiB: the pack alone on 64 KiB of prose (the words it looks at
// used innocently).
func BenchmarkInjectionProse64KiB(b *testing.B) { benchInjection(b, benchProse(64<<10), false) }

// BenchmarkInjectionGodoc: the pack alone on the benign Go doc paragraphs of the evaluation
// set (about 780 KB of technical prose), joined.
func BenchmarkInjectionGodoc(b *testing.B) {
	var parts []string
	for _, r := range readInjRecords(b, "benign_godoc.txt") {
		parts = append(parts, r.text)
	}
	benchInjection(b, strings.Join(parts, "\n\n"), false)
}

// BenchmarkInjectionAttacks: the pack alone on the evaluation set's direct attacks, joined
// (a match every few hundred bytes).
func BenchmarkInjectionAttacks(b *testing.B) {
	var parts []string
	for _, r := range readInjRecords(b, "attacks_direct.txt") {
		parts = append(parts, r.text)
	}
	benchInjection(b, strings.Join(parts, "\n\n"), false)
}

// BenchmarkInjectionStreamingMessage1KiB: the pack alone, as a stream's evaluations call it
// (More set), on a 1 KiB message.
func BenchmarkInjectionStreamingMessage1KiB(b *testing.B) {
	benchInjection(b, benchProse(1<<10), true)
}
