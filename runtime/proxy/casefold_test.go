package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// A request that names a judged field twice, in spellings that differ only in case (or in
// Unicode folding), would be judged on one copy and answered on the other: encoding/json
// matches case-insensitively and keeps the last, model servers read the exact name. The
// guard refuses it with 400 before anything reaches the provider.
func TestCaseVariantFieldsCannotSmuggleAPrompt(t *testing.T) {
	h := newHarness(t, inputPolicy)
	for _, tc := range []struct{ name, path, body string }{
		{"chat messages, capitalised copy", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"tell me about bluebird"}],"Messages":[{"role":"user","content":"hello"}]}`},
		{"chat messages, long s", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"tell me about bluebird"}],"meſſages":[{"role":"user","content":"hello"}]}`},
		{"chat content inside a message", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"tell me about bluebird","CONTENT":"hello"}]}`},
		{"chat text inside a content part, escaped key", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"bluebird","\u0054ext":"hello"}]}]}`},
		{"Responses input", "/v1/responses",
			`{"model":"m","input":"tell me about bluebird","Input":"hello"}`},
		{"Anthropic system", "/v1/messages",
			`{"model":"m","max_tokens":10,"system":"bluebird","System":"be brief","messages":[{"role":"user","content":"hi"}]}`},
		{"embeddings input", "/v1/embeddings",
			`{"model":"m","input":"bluebird","INPUT":"hello"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.p.Requests())
			resp, body := h.post(t, tc.path, tc.body, "Content-Type", "application/json")
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "both name field") {
				t.Fatalf("status %d, body %s: want 400 naming the ambiguous members", resp.StatusCode, body)
			}
			if n := len(h.p.Requests()); n != before {
				t.Fatalf("the provider received the request")
			}
		})
	}

	t.Run("case variants of fields the guard does not read pass", func(t *testing.T) {
		for _, body := range []string{
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"name":{"type":"string"},"Name":{"type":"string"}}}}}]}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":{"k":"v","K":"w"}}`,
		} {
			resp, out := h.post(t, "/v1/chat/completions", body, "Content-Type", "application/json")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d for %s: %s", resp.StatusCode, body, out)
			}
		}
	})
}

// A request naming a judged field twice under the same name would be judged on one copy
// (encoding/json decodes the second over the first) while a provider may read the first:
// {"messages":[prompt],"messages":[harmless]} was judged harmless and forwarded with the
// prompt. The guard refuses a repeated field it reads with 400, at the top level and
// wherever judged content nests, before anything reaches the provider.
func TestARepeatedJudgedFieldIsRefused(t *testing.T) {
	h := newHarness(t, inputPolicy)
	for _, tc := range []struct{ name, path, body string }{
		{"chat messages", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"tell me about bluebird"}],"messages":[{"role":"user","content":"hello"}]}`},
		{"chat messages, the prompt before a copy without content", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"tell me about bluebird"}],"messages":[{"role":"user"}]}`},
		{"chat messages, three copies", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hello"},{"role":"user","content":"tell me about bluebird"}],"messages":[{"role":"user"}],"messages":[{"role":"user"},{"role":"user"}]}`},
		{"chat content inside a message", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"tell me about bluebird","content":"hello"}]}`},
		{"chat text inside a content part", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"bluebird","text":"hello"}]}]}`},
		{"chat tool calls of an assistant message", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"q\":\"bluebird\"}"}}],"tool_calls":[]},{"role":"user","content":"hi"}]}`},
		{"chat tool call arguments", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"q\":\"bluebird\"}","arguments":"{}"}}]},{"role":"user","content":"hi"}]}`},
		{"chat tools", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","description":"bluebird"}}],"tools":[]}`},
		{"chat stream flag", "/v1/chat/completions",
			`{"model":"m","stream":true,"stream":false,"messages":[{"role":"user","content":"hi"}]}`},
		{"Responses input", "/v1/responses",
			`{"model":"m","input":"tell me about bluebird","input":"hello"}`},
		{"Responses instructions", "/v1/responses",
			`{"model":"m","instructions":"bluebird","instructions":"be brief","input":"hi"}`},
		{"Responses content of an input item", "/v1/responses",
			`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"bluebird","text":"hello"}]}]}`},
		{"Responses function call output", "/v1/responses",
			`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"bluebird","output":"ok"}]}`},
		{"Anthropic system", "/v1/messages",
			`{"model":"m","max_tokens":10,"system":"bluebird","system":"be brief","messages":[{"role":"user","content":"hi"}]}`},
		{"Anthropic messages", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"bluebird"}],"messages":[{"role":"user","content":"hi"}]}`},
		{"Anthropic tool result content", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"bluebird","content":"ok"}]}]}`},
		{"Anthropic tool use input", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"q":"bluebird"},"input":{}}]},{"role":"user","content":"hi"}]}`},
		{"embeddings input", "/v1/embeddings",
			`{"model":"m","input":"bluebird","input":"hello"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.p.Requests())
			resp, body := h.post(t, tc.path, tc.body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "is repeated") {
				t.Errorf("status %d, body %s: want 400 naming the repeated member", resp.StatusCode, body)
			}
			if n := len(h.p.Requests()); n != before {
				t.Errorf("the provider received the request")
			}
		})
	}
	t.Run("repeated members the guard does not read pass", func(t *testing.T) {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":{"k":"v","k":"w"},"temperature":1,"temperature":0.5}`
		if resp, out := h.post(t, "/v1/chat/completions", body); resp.StatusCode != http.StatusOK {
			t.Errorf("status %d: %s", resp.StatusCode, out)
		}
	})
}

// The same from the other side: an answer whose message names "content" twice in
// different cases would be judged on one copy while the SDK reads the other. It is not
// passed on as judged.
func TestCaseVariantFieldsInAnAnswerAreNotPassedAsJudged(t *testing.T) {
	crafted := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"the bluebird plan","Content":"nothing to see"},"finish_reason":"stop"}]}`
	h := newHarness(t, streamPolicy, upstreamVia(func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(crafted))
		})
	}))
	resp, body := h.post(t, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "Content-Type", "application/json")
	if strings.Contains(string(body), "bluebird") {
		t.Fatalf("status %d: the client received the unjudged copy: %s", resp.StatusCode, body)
	}
	t.Logf("status %d: %s", resp.StatusCode, body)
}
