package wire

import (
	"strings"
	"testing"
)

// The arguments of tool calls in a request's history are rewritten in place, in every
// family's spelling — a string holding JSON for chat (function and custom calls, the
// legacy function_call) and Responses, the JSON object itself for Anthropic — and every
// other byte of the body is kept.
func TestRewriteRequestToolCallArguments(t *testing.T) {
	cases := []struct {
		name   string
		family Family
		body   string
		want   string
	}{
		{"chat tool_calls", FamilyChat,
			`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"send","arguments":"{\"to\":\"jo@example.com\"}"}},` +
				`{"id":"c2","type":"custom","custom":{"name":"note","input":"to jo@example.com"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`,
			`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"send","arguments":"{\"to\":\"<EMAIL_1>\"}"}},` +
				`{"id":"c2","type":"custom","custom":{"name":"note","input":"to <EMAIL_1>"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`},
		{"chat function_call", FamilyChat,
			`{"messages":[{"role":"assistant","function_call":{"name":"send","arguments":"{\"to\":\"jo@example.com\"}"}}]}`,
			`{"messages":[{"role":"assistant","function_call":{"name":"send","arguments":"{\"to\":\"<EMAIL_1>\"}"}}]}`},
		{"Responses function_call", FamilyResponses,
			`{"input":[{"type":"function_call","call_id":"c1","name":"send","arguments":"{\"to\":\"jo@example.com\"}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`,
			`{"input":[{"type":"function_call","call_id":"c1","name":"send","arguments":"{\"to\":\"<EMAIL_1>\"}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`},
		{"Anthropic tool_use", FamilyMessages,
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"Sending."},{"type":"tool_use","id":"t1","name":"send","input":{"to":"jo@example.com","n":1}}]}]}`,
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"Sending."},{"type":"tool_use","id":"t1","name":"send","input":{"to":"<EMAIL_1>","n":1}}]}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseRequest(tc.family, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for i := range req.Messages {
				for j := range req.Messages[i].ToolCalls {
					c := &req.Messages[i].ToolCalls[j]
					c.Arguments = strings.ReplaceAll(c.Arguments, "jo@example.com", "<EMAIL_1>")
				}
			}
			got, err := RewriteRequest([]byte(tc.body), &req)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	t.Run("Anthropic input that is no longer JSON is refused, not sent", func(t *testing.T) {
		body := `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"send","input":{"to":"x"}}]}]}`
		req, err := ParseRequest(FamilyMessages, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Messages[0].ToolCalls[0].Arguments = `{"to":`
		if _, err := RewriteRequest([]byte(body), &req); err == nil {
			t.Fatal("an invalid input object was written")
		}
	})
}
