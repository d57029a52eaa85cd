package engine

import (
	"context"
	"testing"
)

// BenchmarkDeltaRestoring is the cost of one 10-character delta of prose on a session that
// pseudonymized its prompt, so every release is scanned for placeholders (no stream
// guardrail: the restoration is the only thing that can withhold), with a placeholder
// split across two deltas every tenth delta.
func BenchmarkDeltaRestoring(b *testing.B) {
	s, _ := pseudoWorld().session()
	ctx := context.Background()
	if _, err := s.Input(ctx, []Message{user("Write to " + jo + " and " + ann + ".")}); err != nil {
		b.Fatal(err)
	}
	deltas := []string{"0123456789", "abcdefghij", "klmnopqrst", "uvwxyz0123", "45 <EMAIL_", "1> 6789abc",
		"defghijklm", "nopqrstuvw", "xyz0123456", "789abcdefg"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Delta(ctx, text0, deltas[i%len(deltas)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
