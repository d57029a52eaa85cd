package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The Gemini API's input-only calls, in the shapes @google/genai and the REST API send.
const (
	geminiCountPath = "/v1beta/models/gemini-2.5-flash:countTokens"
	geminiEmbedPath = "/v1beta/models/gemini-embedding-001:embedContent"
	geminiBatchPath = "/v1beta/models/gemini-embedding-001:batchEmbedContents"
)

// geminiInputCalls are bodies of the three calls with text at every place the provider
// reads (text stands for what is placed there).
func geminiInputCalls(text string) []struct{ name, path, body string } {
	return []struct{ name, path, body string }{
		{"countTokens", geminiCountPath, `{"contents":[{"role":"user","parts":[{"text":"Tell me about ` + text + `"}]}]}`},
		{"countTokens generateContentRequest", geminiCountPath, `{"generateContentRequest":{"model":"models/gemini-2.5-flash",` +
			`"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"About ` + text + `"}]}]}}`},
		{"embedContent", geminiEmbedPath, `{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"Notes on ` + text + `"}]},"taskType":"RETRIEVAL_DOCUMENT"}`},
		{"embedContent title", geminiEmbedPath, `{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"Notes"}]},"title":"On ` + text + `"}`},
		{"batchEmbedContents first of two", geminiBatchPath, `{"requests":[` +
			`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"Notes on ` + text + `"}]}},` +
			`{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"Other notes"}]}}]}`},
	}
}

// A prompt a guardrail blocks is answered in Google's error shape, never sent, in every
// place the provider reads it (the first request of a batch too: an embedding's inputs
// are not a history, all of them are judged).
func TestGeminiInputCallsBlocked(t *testing.T) {
	h := newHarness(t, inputPolicy)
	for _, c := range geminiInputCalls("bluebird") {
		resp, body := h.post(t, c.path, c.body)
		var e struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
				Details []struct {
					Reason string `json:"reason"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusBadRequest || e.Error.Code != 400 ||
			e.Error.Status != "INVALID_ARGUMENT" || e.Error.Message != "Project Bluebird is not discussed here." ||
			len(e.Error.Details) != 1 || e.Error.Details[0].Reason != "CONTENT_POLICY_VIOLATION" || resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("%s: status %d: %s", c.name, resp.StatusCode, body)
		}
	}
	if n := len(h.p.Requests()); n != 0 {
		t.Fatalf("the provider received %d requests", n)
	}
	for _, label := range []string{"countTokens", "embedContent", "batchEmbedContents"} {
		if n := h.counter(t, "guard_requests_total", "family", label, "outcome", "blocked"); n == 0 {
			t.Errorf("guard_requests_total{family=%q,outcome=blocked} is 0", label)
		}
	}
}

// A redacted prompt reaches the provider rewritten in place; the answer (a count, an
// embedding) reaches the client as the provider sent it, with the client's key passed.
func TestGeminiInputCallsRedactedAndAnswered(t *testing.T) {
	const email = "ana.lima@example.org"
	h := newHarness(t, inputRedactPolicy)
	for _, c := range geminiInputCalls(email) {
		resp, body := h.post(t, c.path, c.body, "X-Goog-Api-Key", "AIzaSyFakeHeaderKey000000000000000000")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", c.name, resp.StatusCode, body)
		}
		got, ok := h.p.LastRequest()
		if !ok || strings.Contains(string(got.Body), "example.org") || !strings.Contains(string(got.Body), "[REDACTED") ||
			got.Path != c.path || got.Header.Get("X-Goog-Api-Key") != "AIzaSyFakeHeaderKey000000000000000000" {
			t.Fatalf("%s: the provider received %s %s", c.name, got.Path, got.Body)
		}
		var sent map[string]any
		if err := json.Unmarshal(got.Body, &sent); err != nil {
			t.Fatalf("%s: the provider received %s", c.name, got.Body)
		}
		answers := h.p.Responses()
		if last := answers[len(answers)-1]; !bytes.Equal(body, last.Body) {
			t.Fatalf("%s: the client received %s, the provider sent %s", c.name, body, last.Body)
		}
	}
	var batch struct {
		Embeddings []struct {
			Values []float64 `json:"values"`
		} `json:"embeddings"`
	}
	_, body := h.post(t, geminiBatchPath, `{"requests":[{"content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]}}]}`)
	if err := json.Unmarshal(body, &batch); err != nil || len(batch.Embeddings) != 2 || len(batch.Embeddings[0].Values) == 0 {
		t.Fatalf("batchEmbedContents answered %s", body)
	}
	if n := h.counter(t, "guard_requests_total", "family", "countTokens", "outcome", "allowed"); n != 2 {
		t.Fatalf("guard_requests_total{family=countTokens,outcome=allowed} = %v", n)
	}
}

// A body in the shape of two methods, or naming a member in both spellings, is refused
// before the provider is called; an upstream error passes through as it is.
func TestGeminiInputCallsRefusedAndUpstreamErrors(t *testing.T) {
	h := newHarness(t, inputPolicy)
	for _, c := range []struct{ path, body string }{
		{geminiCountPath, `{"contents":[{"parts":[{"text":"a"}]}],"content":{"parts":[{"text":"bluebird"}]}}`},
		{geminiEmbedPath, `{"content":{"parts":[{"text":"a"}]},"requests":[{"content":{"parts":[{"text":"bluebird"}]}}]}`},
		{geminiCountPath, `{"generateContentRequest":{"contents":[]},"generate_content_request":{"contents":[{"parts":[{"text":"bluebird"}]}]}}`},
	} {
		resp, body := h.post(t, c.path, c.body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"INVALID_ARGUMENT"`) {
			t.Errorf("%s %s: status %d: %s", c.path, c.body, resp.StatusCode, body)
		}
	}
	if n := len(h.p.Requests()); n != 0 {
		t.Fatalf("the provider received %d requests", n)
	}
	h.p.SetKeys("AIzaSyTheOnlyKeyTheProviderTakes00000")
	resp, body := h.post(t, geminiEmbedPath, `{"content":{"parts":[{"text":"a"}]}}`, "X-Goog-Api-Key", "AIzaSyAnotherKey000000000000000000000")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "UNAUTHENTICATED") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

// An answer that reports usage (usageMetadata) passes through as it is and its usage is
// the span's; one without reports none.
func TestGeminiInputUsage(t *testing.T) {
	col := otlptest.NewHTTP(t)
	tr := tracerTo(t, col, "http/protobuf")
	h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.Tracer = tr }))
	answer := `{"embeddings":[{"values":[0.1,-0.2]}],"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7}}`
	h.p.Enqueue(fakeprovider.Script{Raw: []byte(answer)})
	if resp, body := h.post(t, geminiBatchPath, `{"requests":[{"content":{"parts":[{"text":"a"}]}}]}`); resp.StatusCode != http.StatusOK || string(body) != answer {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if resp, body := h.post(t, "/v1beta/models/other-embedding:embedContent", `{"content":{"parts":[{"text":"a"}]}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := col.WaitSpans(2, 5*time.Second)
	with, ok := spanNamed(spans, "embeddings gemini-embedding-001")
	if !ok || otlptest.Attr(with.GetAttributes(), "gen_ai.usage.input_tokens").GetIntValue() != 7 {
		t.Fatalf("the span of the answer with usage: %v", with.Span)
	}
	without, ok := spanNamed(spans, "embeddings other-embedding")
	if !ok || otlptest.Attr(without.GetAttributes(), "gen_ai.usage.input_tokens") != nil {
		t.Fatalf("the span of the answer without usage: %v", without.Span)
	}
}
