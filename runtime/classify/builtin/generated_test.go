package builtin

import (
	"context"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Values the engine's generated-entity property test (runtime/engine/entities_test.go)
// found missed: token bodies that begin with '-', random passwords whose case changes look
// like camelCase humps, and passwords that begin with '%'.
func TestGeneratedValuesAreFound(t *testing.T) {
	c, err := New(Config{Detectors: []string{"generic-secret", "openai-key", "gitlab-token", "private-key"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ text, want string }{
		{"key sk--fCSu0c9KCqC_vBbpUOlbK7lqGvvHb4hfZ4Fk0P_iicELoRBzxXn rotated", "sk--fCSu0c9KCqC_vBbpUOlbK7lqGvvHb4hfZ4Fk0P_iicELoRBzxXn"},
		{"token glpat--IVmYICVCNEs_FQijhAbsZ4brt-Xn expires", "glpat--IVmYICVCNEs_FQijhAbsZ4brt-Xn"},
		{"the password=PiAPK4eswIxdeKgyWfn0vjwGHVauBOWSkcaNuorkiNAivWfSt ok", "PiAPK4eswIxdeKgyWfn0vjwGHVauBOWSkcaNuorkiNAivWfSt"},
		{"api_key: zdiKie9iimpGF!drQdv ok", "zdiKie9iimpGF!drQdv"},
		{"the password=\"%SgbAYmip0!RjVlZ205tqP6QVCNyO6EktyRP\" ok", "%SgbAYmip0!RjVlZ205tqP6QVCNyO6EktyRP"},
	}
	for _, tc := range cases {
		res, _ := c.Classify(context.Background(), classify.Input{Text: tc.text})
		if len(res.Spans) != 1 || tc.text[res.Spans[0].Start:res.Spans[0].End] != tc.want {
			t.Errorf("%q: spans %v, want %q", tc.text, res.Spans, tc.want)
		}
	}
	for _, text := range []string{
		"password=%(db_password)s", "password=%DB_PASSWORD%", "password=getDatabaseConnectionString",
		"token=testRSA2048PrivateKey", "secret=ThisIsNotARealSecretValueAtAll", "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----",
	} {
		if res, _ := c.Classify(context.Background(), classify.Input{Text: text}); len(res.Spans) != 0 {
			t.Errorf("%q: spans %v, want none", text, res.Spans)
		}
	}
}
