package main

import "testing"

// make dev waits until the demo's guard enforces every Guardrail that selects it; a sample
// that selects other pods (0/0) is not waited for, and nothing selected is not enforced.
func TestEnforcedAll(t *testing.T) {
	for s, want := range map[string]bool{
		"pseudonymize-personal-data=0/0 redact-pii-secrets=1/1 stop-streamed-secrets=1/1": true,
		"redact-pii-secrets=1/1 stop-streamed-secrets=0/1":                                false,
		"redact-pii-secrets=/1":          false,
		"pseudonymize-personal-data=0/0": false,
		"a=/":                            false,
		"":                               false,
	} {
		if got := enforcedAll(s); got != want {
			t.Errorf("enforcedAll(%q) = %v, want %v", s, got, want)
		}
	}
}
