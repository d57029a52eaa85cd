package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/test/load/workload"
)

// loadTexts returns the guard's load test's prompt (2 KB of prose) and answer (200 words),
// which the guard classifies with the three packs on every non-streamed chat call
// (test/load/workload, the texts of test/load/cmd/guardload).
func loadTexts() (prompt, answer string) {
	return workload.Prose(2048), strings.Join(workload.AnswerWords(200), " ")
}

// BenchmarkClassifyLoadChat classifies the load's prompt and answer with the three packs: one
// operation is what the guard's packs do for one non-streamed chat call.
func BenchmarkClassifyLoadChat(b *testing.B) {
	c, err := New(Config{Detectors: defaultPacks()})
	if err != nil {
		b.Fatal(err)
	}
	prompt, answer := loadTexts()
	ctx := context.Background()
	b.SetBytes(int64(len(prompt) + len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range [2]string{prompt, answer} {
			if _, err := c.Classify(ctx, classify.Input{Text: text}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
