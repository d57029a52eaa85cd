package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// countTokens, embedContent and batchEmbedContents are FamilyGeminiInput, under every
// version; other methods of a model are not routed.
func TestGeminiInputRoutes(t *testing.T) {
	for path, want := range map[string]Family{
		"/v1beta/models/gemini-2.5-flash:countTokens":           FamilyGeminiInput,
		"/v1/models/gemini-embedding-001:embedContent":          FamilyGeminiInput,
		"/v1alpha/models/text-embedding-004:batchEmbedContents": FamilyGeminiInput,
		"/v1beta/models/gemini-2.5-flash:generateContent":       FamilyGemini,
		"/v1beta/models/gemini-2.5-flash:predict":               0,
		"/v1beta/models/gemini-2.5-flash:embedContentX":         0,
		"/v1beta/models/a/b:embedContent":                       0,
	} {
		f, ok := Route("POST", path)
		if f != want || ok != (want != 0) {
			t.Errorf("Route(%q) = %v, %v; want %v", path, f, ok, want)
		}
		if want == FamilyGeminiInput && (!f.Gemini() || !f.InputOnly()) {
			t.Errorf("%q: Gemini %v, InputOnly %v", path, f.Gemini(), f.InputOnly())
		}
	}
}

// Every text the provider reads of the three requests is judged, and a redaction of each
// is written back in place, the rest of the body as it was.
func TestGeminiInputParseAndRewrite(t *testing.T) {
	const mail = "ana.lima@example.org"
	for name, c := range map[string]struct {
		body  string
		texts int
	}{
		"countTokens contents": {`{"contents":[{"role":"user","parts":[{"text":"Hi"},{"text":"mail ` + mail + `"}]}]}`, 2},
		"countTokens generateContentRequest": {`{"generateContentRequest":{"model":"models/gemini-2.5-flash",` +
			`"systemInstruction":{"parts":[{"text":"Mail ` + mail + `"}]},"contents":[{"parts":[{"text":"to ` + mail + `"}]}]}}`, 2},
		"countTokens generate_content_request": {`{"generate_content_request":{"contents":[{"parts":[{"text":"to ` + mail + `"}]}]}}`, 1},
		"embedContent": {`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"write ` + mail + `"}]},` +
			`"taskType":"RETRIEVAL_DOCUMENT","title":"About ` + mail + `","outputDimensionality":8}`, 2},
		"batchEmbedContents": {`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"one ` + mail + `"}]}},` +
			`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"two"},{"text":"three ` + mail + `"}]},"title":"t ` + mail + `"}]}`, 4},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := ParseRequest(FamilyGeminiInput, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			texts := 0
			for i := range req.Messages {
				for j := range req.Messages[i].Parts {
					p := &req.Messages[i].Parts[j]
					texts++
					p.Text = strings.ReplaceAll(p.Text, mail, "[REDACTED:email]")
				}
			}
			if strings.Contains(name, "Embed") && len(req.Messages) != 1 {
				t.Fatalf("an embedding request is %d messages, want one (all of it is the last)", len(req.Messages))
			}
			if texts != c.texts {
				t.Fatalf("%d texts judged, want %d: %+v", texts, c.texts, req.Messages)
			}
			out, err := RewriteRequest([]byte(c.body), &req)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(c.body, mail, "[REDACTED:email]")
			var got, exp any
			if json.Unmarshal(out, &got) != nil || json.Unmarshal([]byte(want), &exp) != nil {
				t.Fatalf("rewritten %s", out)
			}
			if g, _ := json.Marshal(got); string(g) != string(mustMarshal(exp)) {
				t.Fatalf("rewritten\n %s\nwant\n %s", out, want)
			}
		})
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// A member the provider reads under one spelling and the guard could judge under the
// other is refused, as in generateContent, and so is a body in the shape of two methods.
func TestGeminiInputRefusesTwoSpellings(t *testing.T) {
	for _, body := range []string{
		`{"generateContentRequest":{"contents":[]},"generate_content_request":{"contents":[{"parts":[{"text":"x"}]}]}}`,
		`{"generateContentRequest":{"systemInstruction":{"parts":[]},"system_instruction":{"parts":[{"text":"x"}]}}}`,
		`{"content":{"parts":[{"text":"a","Text":"b"}]}}`,
		`{"requests":[{"content":{"parts":[{"inlineData":{"data":"eA=="},"inline_data":{"data":"eA=="}}]}}]}`,
		// A member named twice: the provider reads one of them.
		`{"content":{"parts":[{"text":"a"}]},"content":{"parts":[{"text":"bluebird"}]}}`,
		`{"requests":[{"title":"a","title":"bluebird"}]}`,
		// The members of two methods: the provider reads one of them.
		`{"contents":[{"parts":[{"text":"a"}]}],"content":{"parts":[{"text":"b"}]}}`,
		`{"contents":[{"parts":[{"text":"a"}]}],"generateContentRequest":{"contents":[]}}`,
		`{"title":"a","requests":[{"content":{"parts":[{"text":"b"}]}}]}`,
	} {
		if _, err := ParseRequest(FamilyGeminiInput, []byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", body, err)
		}
	}
}
