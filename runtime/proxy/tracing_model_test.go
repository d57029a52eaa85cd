package proxy

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The call's span names the model that answered (gen_ai.response.model), as the answer
// names it (OpenAI's and Anthropic's model, Gemini's modelVersion), streamed and not, in
// every family; the Gemini API's input-only calls are spans of their own operations.
func TestTracesNameTheModelThatAnswered(t *testing.T) {
	col := otlptest.NewHTTP(t)
	tr := tracerTo(t, col, "http/protobuf")
	h := newHarness(t, streamPolicy, withConfig(func(c *Config) { c.Tracer = tr }))
	calls := []struct{ span, path, body, answered string }{
		{"chat chat-whole", "/v1/chat/completions", `{"model":"chat-whole","messages":[{"role":"user","content":"hi"}]}`, "chat-whole-2025-01-01"},
		{"chat chat-stream", "/v1/chat/completions", `{"model":"chat-stream","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "chat-stream-2025-01-01"},
		{"chat resp-whole", "/v1/responses", `{"model":"resp-whole","input":"hi"}`, "resp-whole-2025-01-01"},
		{"chat resp-stream", "/v1/responses", `{"model":"resp-stream","stream":true,"input":"hi"}`, "resp-stream-2025-01-01"},
		{"chat claude-whole", "/v1/messages", `{"model":"claude-whole","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "claude-whole-20250101"},
		{"chat claude-stream", "/v1/messages", `{"model":"claude-stream","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "claude-stream-20250101"},
		{"generate_content gemini-whole", "/v1beta/models/gemini-whole:generateContent", geminiPrompt, "gemini-whole-001"},
		{"generate_content gemini-stream", "/v1beta/models/gemini-stream:streamGenerateContent?alt=sse", geminiPrompt, "gemini-stream-001"},
	}
	for _, c := range calls {
		h.p.Enqueue(fakeprovider.Script{Model: c.answered, Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts("Hello", " there.")}}})
		if resp, body := h.post(t, c.path, c.body); resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(c.answered)) {
			t.Fatalf("%s: %d %s", c.span, resp.StatusCode, body)
		}
	}
	if resp, body := h.post(t, geminiCountPath, `{"contents":[{"parts":[{"text":"hi"}]}]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("countTokens: %d %s", resp.StatusCode, body)
	}
	if resp, body := h.post(t, geminiEmbedPath, `{"content":{"parts":[{"text":"hi"}]}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("embedContent: %d %s", resp.StatusCode, body)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := col.WaitSpans(len(calls)+2, 5*time.Second)
	for _, c := range calls {
		s, ok := spanNamed(spans, c.span)
		if !ok {
			t.Errorf("no span %q among %d", c.span, len(spans))
			continue
		}
		if got := otlptest.Str(s.GetAttributes(), "gen_ai.response.model"); got != c.answered {
			t.Errorf("%s: gen_ai.response.model = %q, want %q", c.span, got, c.answered)
		}
	}
	for name, op := range map[string]string{"count_tokens gemini-2.5-flash": "count_tokens", "embeddings gemini-embedding-001": "embeddings"} {
		s, ok := spanNamed(spans, name)
		if !ok || otlptest.Str(s.GetAttributes(), "gen_ai.operation.name") != op ||
			otlptest.Str(s.GetAttributes(), "gen_ai.provider.name") != "gcp.gemini" ||
			otlptest.Str(s.GetAttributes(), "guardrail.request.outcome") != "allowed" ||
			otlptest.Attr(s.GetAttributes(), "gen_ai.response.model") != nil {
			t.Errorf("the span %q: %v", name, s.Span)
		}
	}
}
