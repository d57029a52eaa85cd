package builtin

import (
	"context"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// A JWT cut off by the end of the text — after its header's dot, inside a payload that
// starts like a JSON object, or after the payload — is a token still arriving: pending while
// more may come (Open at its start), matched to the end when the text is over. What cannot
// be a token's start is neither.
func TestJWTCutOffByTheEndOfTheText(t *testing.T) {
	c := only(t, "jwt")
	h := "eyJhbGciOiJIUzI1NiJ9"
	for n, token := range map[string]bool{
		h + ".":                 true,
		h + ".e":                true,
		h + ".ey":               true,
		h + ".ew":               true,
		h + ".eyJz.abc":         true,
		h + ".eyJzdWIiOiIxIn0.": true,
		h + "=.":                true,
		h + "==.":               true,
		"eyJhbGciOi.":           true,
		h:                       false,
		h + ".ex":               false,
		h + ".a":                false,
		h + ".eyJ.abc":          false,
		h + "===.":              false,
		"eyJhbGciO.":            false,
		"x" + h + ".":           false,
		"." + h + ".":           false,
		"/" + h + ".":           false,
		"+" + h + ".":           false,
		"-" + h + ".":           false,
	} {
		text := "token: " + n
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Spans) == 1 && res.Spans[0].Start == 7 && res.Spans[0].End == len(text); got != token || !token && len(res.Spans) > 0 {
			t.Errorf("%q at the end of the text: spans %v, want a token to the end: %v", n, res.Spans, token)
		}
		res, err = c.Classify(context.Background(), classify.Input{Text: text, More: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Spans) != 0 || res.Open != 7 {
			t.Errorf("%q while more may come: spans %v, open %d, want none pending from 7", n, res.Spans, res.Open)
		}
	}
}
