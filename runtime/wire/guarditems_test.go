package wire

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// FuzzGuardItemIDCarriesItsText: whatever text a block's message has, its id gives it back,
// and a reference to it becomes an assistant message with exactly that text.
func FuzzGuardItemIDCarriesItsText(f *testing.F) {
	f.Add("Project Bluebird is not discussed here.")
	f.Add("kept answer\n\nreason with \"quotes\" and ü")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			t.Skip() // the texts are decoded JSON strings, always UTF-8
		}
		got, ok := guardItemText(guardItemID(text))
		if !ok || got != text {
			t.Fatalf("id of %q gives %q, %v", text, got, ok)
		}
		body := []byte(`{"input":[{"type":"item_reference","id":` + string(jsonx.Quote(guardItemID(text))) + `}]}`)
		out, err := ResolveGuardItems(body)
		if err != nil {
			t.Fatal(err)
		}
		var req struct {
			Input []struct {
				Role    string `json:"role"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"input"`
		}
		if err := json.Unmarshal(out, &req); err != nil || len(req.Input) != 1 || req.Input[0].Role != "assistant" ||
			len(req.Input[0].Content) != 1 {
			t.Fatalf("rewritten to %s (%v)", out, err)
		}
	})
}
