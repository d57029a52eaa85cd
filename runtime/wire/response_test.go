package wire

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
)

const chatResponseBody = `{"id":"chatcmpl-123","object":"chat.completion","created":1741569952,"model":"gpt-4o-2024-08-06",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Call 555-0100.","refusal":null,"annotations":[],` +
	`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"dial","arguments":"{\"n\":\"555-0100\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29},"service_tier":"default","system_fingerprint":"fp_1"}`

const responsesResponseBody = `{"id":"resp_1","object":"response","created_at":1741476542,"status":"completed","error":null,"incomplete_details":null,"model":"gpt-4.1",` +
	`"output":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Thinking."}]},` +
	`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello there.","annotations":[]}]},` +
	`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{}","status":"completed"}],` +
	`"usage":{"input_tokens":36,"output_tokens":87,"total_tokens":123}}`

const messagesResponseBody = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
	`"content":[{"type":"thinking","thinking":"Hmm.","signature":"sig"},{"type":"text","text":"Sure."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":20}}`

func TestDecodeResponse(t *testing.T) {
	cases := []struct {
		name   string
		family Family
		body   string
		want   Response
	}{
		{
			name: "a chat completion with text and a tool call", family: FamilyChat, body: chatResponseBody,
			want: Response{Contents: []Content{
				{Channel: content.Channel{Kind: content.Text}, Text: "Call 555-0100."},
				{Channel: content.Channel{Kind: content.ToolCall}, Text: `{"n":"555-0100"}`, ID: "call_1", Name: "dial"},
			}, Finish: []string{"tool_calls"}, Usage: Usage{InputTokens: 19, OutputTokens: 10}, Model: "gpt-4o-2024-08-06"},
		},
		{
			name: "a Responses response with reasoning, a message and a function call numbered in order", family: FamilyResponses, body: responsesResponseBody,
			want: Response{Contents: []Content{
				{Channel: content.Channel{Kind: content.Reasoning, Index: 0}, Text: "Thinking."},
				{Channel: content.Channel{Kind: content.Text, Index: 1}, Text: "Hello there."},
				{Channel: content.Channel{Kind: content.ToolCall, Index: 2}, Text: "{}", ID: "call_1", Name: "get_weather"},
			}, Finish: []string{"completed"}, Usage: Usage{InputTokens: 36, OutputTokens: 87}, Model: "gpt-4.1"},
		},
		{
			name: "an Anthropic message with thinking, text and tool use by block index", family: FamilyMessages, body: messagesResponseBody,
			want: Response{Contents: []Content{
				{Channel: content.Channel{Kind: content.Reasoning, Index: 0}, Text: "Hmm."},
				{Channel: content.Channel{Kind: content.Text, Index: 1}, Text: "Sure."},
				{Channel: content.Channel{Kind: content.ToolCall, Index: 2}, Text: `{"city":"Paris"}`, ID: "toolu_1", Name: "get_weather"},
			}, Finish: []string{"tool_use"}, Usage: Usage{InputTokens: 10, OutputTokens: 20}, Model: "claude-sonnet-4-5"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeResponse(tc.family, nil, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRewriteResponse(t *testing.T) {
	t.Run("a redacted chat text replaces the content and keeps every other field", func(t *testing.T) {
		out, err := RewriteResponse(FamilyChat, []byte(chatResponseBody), []Content{{Channel: content.Channel{Kind: content.Text}, Text: "Call [REDACTED:phone]."}}, "")
		if err != nil {
			t.Fatal(err)
		}
		r, _ := DecodeResponse(FamilyChat, nil, out)
		if r.Contents[0].Text != "Call [REDACTED:phone]." || r.Contents[1].Text != `{"n":"555-0100"}` || r.Finish[0] != "tool_calls" {
			t.Fatalf("got %s", out)
		}
		if !strings.Contains(string(out), `"system_fingerprint":"fp_1"`) || !strings.Contains(string(out), `"annotations":[]`) {
			t.Fatalf("fields lost: %s", out)
		}
	})
	t.Run("a dropped Responses reasoning part is removed and the text replaced", func(t *testing.T) {
		out, err := RewriteResponse(FamilyResponses, []byte(responsesResponseBody), []Content{
			{Channel: content.Channel{Kind: content.Reasoning, Index: 0}, Dropped: true},
			{Channel: content.Channel{Kind: content.Text, Index: 1}, Text: "Hi."},
		}, "")
		if err != nil {
			t.Fatal(err)
		}
		r, _ := DecodeResponse(FamilyResponses, nil, out)
		if len(r.Contents) != 2 || r.Contents[0].Text != "Hi." {
			t.Fatalf("got %+v\n%s", r, out)
		}
	})
	t.Run("a redacted Responses text loses its logprobs, which repeat the original", func(t *testing.T) {
		body := `{"output":[{"type":"message","content":[{"type":"output_text","annotations":[],"logprobs":[{"token":"secret","logprob":0}],"text":"secret"}]}]}`
		out, err := RewriteResponse(FamilyResponses, []byte(body), []Content{{Channel: content.Channel{Kind: content.Text}, Text: "[REDACTED:x]"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "secret") || !strings.Contains(string(out), `"logprobs":[]`) {
			t.Fatalf("got %s", out)
		}
	})
	t.Run("an Anthropic text is replaced and the finish reason set", func(t *testing.T) {
		out, err := RewriteResponse(FamilyMessages, []byte(messagesResponseBody), []Content{{Channel: content.Channel{Kind: content.Text, Index: 1}, Text: "Fine."}}, "end_turn")
		if err != nil {
			t.Fatal(err)
		}
		r, _ := DecodeResponse(FamilyMessages, nil, out)
		if r.Contents[1].Text != "Fine." || r.Finish[0] != "end_turn" || r.Contents[0].Text != "Hmm." {
			t.Fatalf("got %+v", r)
		}
	})
}

func TestBlockResponse(t *testing.T) {
	t.Run("a blocked chat completion carries the reason with finish_reason content_filter", func(t *testing.T) {
		out, err := BlockResponse(FamilyChat, []byte(chatResponseBody), "Not allowed.", nil)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			ID      string `json:"id"`
			Choices []struct {
				Message      map[string]any `json:"message"`
				FinishReason string         `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.ID != "chatcmpl-123" || r.Choices[0].Message["content"] != "Not allowed." ||
			r.Choices[0].FinishReason != "content_filter" || r.Choices[0].Message["tool_calls"] != nil || r.Usage == nil {
			t.Fatalf("got %s", out)
		}
	})
	t.Run("a blocked Responses response is incomplete for content_filter with one message", func(t *testing.T) {
		out, err := BlockResponse(FamilyResponses, []byte(responsesResponseBody), "Not allowed.", nil)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := DecodeResponse(FamilyResponses, nil, out)
		if len(r.Contents) != 1 || r.Contents[0].Text != "Not allowed." || r.Finish[0] != "content_filter" || strings.Contains(string(out), "get_weather") {
			t.Fatalf("got %+v\n%s", r, out)
		}
	})
	t.Run("a blocked Anthropic message is a refusal with the reason as its only text and its explanation", func(t *testing.T) {
		out, err := BlockResponse(FamilyMessages, []byte(messagesResponseBody), "Not allowed.", nil)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := DecodeResponse(FamilyMessages, nil, out)
		if len(r.Contents) != 1 || r.Contents[0].Text != "Not allowed." || r.Finish[0] != "refusal" {
			t.Fatalf("got %+v\n%s", r, out)
		}
		var m struct {
			StopDetails map[string]any `json:"stop_details"`
		}
		if err := json.Unmarshal(out, &m); err != nil || m.StopDetails["type"] != "refusal" || m.StopDetails["explanation"] != "Not allowed." ||
			m.StopDetails["category"] != nil {
			t.Fatalf("stop_details %v (%v)\n%s", m.StopDetails, err, out)
		}
	})
	t.Run("text kept before blocked tool calls precedes the reason after a blank line, per choice", func(t *testing.T) {
		body := strings.Replace(chatResponseBody, `"choices":[{"index":0,`,
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"},{"index":1,`, 1)
		out, err := BlockResponse(FamilyChat, []byte(body), "Not allowed.", map[int]string{1: "Call [REDACTED:phone]."})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := DecodeResponse(FamilyChat, &Request{}, out)
		got := map[int]string{}
		for _, c := range r.Contents {
			got[c.Channel.Choice] += c.Text
		}
		if got[0] != "Not allowed." || got[1] != "Call [REDACTED:phone].\n\nNot allowed." || len(r.Contents) != 2 {
			t.Fatalf("contents %v\n%s", got, out)
		}
		for _, family := range []Family{FamilyResponses, FamilyMessages} {
			body := map[Family]string{FamilyResponses: responsesResponseBody, FamilyMessages: messagesResponseBody}[family]
			out, err := BlockResponse(family, []byte(body), "Not allowed.", map[int]string{0: "Checking."})
			if err != nil {
				t.Fatal(err)
			}
			r, _ := DecodeResponse(family, &Request{}, out)
			if len(r.Contents) != 1 || r.Contents[0].Text != "Checking.\n\nNot allowed." {
				t.Errorf("%s: %+v\n%s", family, r.Contents, out)
			}
		}
	})
	t.Run("a body that is not JSON is malformed", func(t *testing.T) {
		if _, err := BlockResponse(FamilyChat, []byte("<html>"), "x", nil); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestErrorBodies(t *testing.T) {
	cases := []struct {
		name   string
		family Family
		err    APIError
		status int
		want   string
		// retry is the x-should-retry header expected: "false" for policy verdicts, none
		// for the errors the SDKs retry by their own rules.
		retry string
	}{
		{
			name: "an input block on an OpenAI route is a 400 content_policy_violation with the guardrail", family: FamilyChat,
			err: Blocked("No secrets, please.", "team-a/secrets"), status: 400, retry: "false",
			want: `{"error":{"message":"No secrets, please.","type":"invalid_request_error","param":null,"code":"content_policy_violation","guardrail":"team-a/secrets"}}`,
		},
		{
			name: "an input block on the Anthropic route is Anthropic's error shape", family: FamilyMessages,
			err: Blocked("No secrets, please.", "team-a/secrets"), status: 400, retry: "false",
			want: `{"type":"error","error":{"type":"invalid_request_error","message":"No secrets, please.","details":{"error_code":"content_policy_violation"},"guardrail":"team-a/secrets"}}`,
		},
		{
			name: "a fail-closed failure on an OpenAI route is a 500 policy_evaluation_failed", family: FamilyResponses,
			err: Failed("team-a/judge"), status: 500, retry: "false",
			want: `{"error":{"message":"policy evaluation failed","type":"server_error","param":null,"code":"policy_evaluation_failed","guardrail":"team-a/judge"}}`,
		},
		{
			name: "a fail-closed failure on the Anthropic route is an api_error", family: FamilyMessages,
			err: Failed("team-a/judge"), status: 500, retry: "false",
			want: `{"type":"error","error":{"type":"api_error","message":"policy evaluation failed","details":{"error_code":"policy_evaluation_failed"},"guardrail":"team-a/judge"}}`,
		},
		{
			name: "an unreachable provider is a 502 the SDKs retry as they would the provider's own", family: FamilyMessages,
			err: APIError{Status: 502, Type: "server_error", Code: "upstream_unreachable", Message: "unreachable"}, status: 502,
			want: `{"type":"error","error":{"type":"api_error","message":"unreachable","details":{"error_code":"upstream_unreachable"}}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			if err := WriteError(rec, tc.family, tc.err); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tc.status || rec.Body.String() != tc.want || rec.Header().Get("Content-Type") != "application/json" ||
				rec.Header().Get("X-Should-Retry") != tc.retry {
				t.Fatalf("got %d %s %v", rec.Code, rec.Body.String(), rec.Header())
			}
		})
	}
}
