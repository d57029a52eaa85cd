package proxy

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// TestContentOutsideDeltasIsJudged: content that an upstream sends outside the delta
// events (Anthropic's message_start carrying content blocks; a Responses
// response.completed whose output text never streamed as deltas) would be handed to the app
// by the SDKs' accumulators (anthropic Message.Accumulate copies the
// message_start message; openai-go Response.OutputText reads the completed output).
// Such content never reaches the client: Anthropic's is refused as malformed (a recorded
// failure), and Responses' final events repeat only what the client received.
func TestContentOutsideDeltasIsJudged(t *testing.T) {
	for _, tc := range []struct{ name, path, body, raw string }{
		{"an Anthropic message_start with content", "/v1/messages",
			`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"about bluebird\"}],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		{"a Responses completion whose text never streamed", "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`,
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[{\"id\":\"i\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"about bluebird\"}]}]}}\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, streamPolicy)
			h.p.Enqueue(fakeprovider.Script{Raw: []byte(tc.raw)})
			_, b := h.post(t, tc.path, tc.body)
			if strings.Contains(string(b), "bluebird") {
				t.Errorf("content reached the client unjudged:\n%s", b)
			}
		})
	}
}
