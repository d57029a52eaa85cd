package engine

import (
	"context"
	"strings"
	"testing"
)

// FuzzRestoreStreamedEqualsWhole: whatever a model writes — placeholders whole, split,
// mangled, invented, escaped, next to each other — a stream cut anywhere releases exactly
// what restoring the whole answer gives, and never a value the answer did not name.
func FuzzRestoreStreamedEqualsWhole(f *testing.F) {
	f.Add("Dear <EMAIL_1>, <email_2> and <EMAIL_9>", uint8(3))
	f.Add("<EMAIL_1<EMAIL_2><<PERSON_1>>< EMAIL_1 ><EMAIL_01>", uint8(1))
	f.Add(`{"to":"\u003cEMAIL_1\u003e","x":"\u003CPERSON_1"}`, uint8(5))
	f.Add("<<<<EMAIL_", uint8(2))
	f.Fuzz(func(t *testing.T, answer string, size uint8) {
		if !validUTF8(answer) {
			return
		}
		ctx := context.Background()
		s, _ := pseudoWorld().session()
		if _, err := s.Input(ctx, []Message{user("Write to " + jo + " and " + ann + ", cc Ann Lee.")}); err != nil {
			t.Fatal(err)
		}
		whole := s.vault.restore(answer, false)
		got, v := stream(t, s, text0, answer, 1+int(size)%16)
		if v != nil || got != whole {
			t.Fatalf("streamed %q, whole %q", got, whole)
		}
		lower := strings.ToLower(answer)
		for value, placeholder := range map[string]string{jo: "<email_1>", ann: "<email_2>", "Ann Lee": "<person_1>"} {
			if strings.Count(got, value) > strings.Count(answer, value)+strings.Count(lower, placeholder) {
				t.Fatalf("%q appears more often than the answer names it", value)
			}
		}
	})
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
