package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// texts returns the text of every part of a request, per message, after re-parsing.
func texts(t *testing.T, f Family, body []byte) [][]string {
	t.Helper()
	req, err := ParseRequest(f, body)
	if err != nil {
		t.Fatalf("rewritten body does not parse: %v\n%s", err, body)
	}
	var out [][]string
	for _, m := range req.Messages {
		var ts []string
		for _, p := range m.Parts {
			if p.Text != "" {
				ts = append(ts, p.Text)
			} else {
				ts = append(ts, "<"+p.Modality.String()+">")
			}
		}
		out = append(out, ts)
	}
	return out
}

func TestRewriteRequest(t *testing.T) {
	cases := []struct {
		name   string
		family Family
		body   string
		edit   func(r *Request)
		want   [][]string
	}{
		{
			name:   "a redacted chat string content replaces the message's text",
			family: FamilyChat,
			body:   `{"model":"gpt-4o","temperature":0.25,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"My card is 4111 1111 1111 1111"}]}`,
			edit:   func(r *Request) { r.Messages[1].Parts[0].Text = "My card is [REDACTED:card]" },
			want:   [][]string{{"Be brief."}, {"My card is [REDACTED:card]"}},
		},
		{
			name:   "a dropped chat image part is removed and a text part of the same message redacted",
			family: FamilyChat,
			body: `{"messages":[{"role":"user","content":[{"type":"text","text":"mail bob@example.com"},` +
				`{"type":"image_url","image_url":{"url":"https://x/y.png"}},{"type":"text","text":"thanks"}]}]}`,
			edit: func(r *Request) {
				r.Messages[0].Parts[0].Text = "mail [REDACTED:email]"
				r.Messages[0].Parts[1].Dropped = true
			},
			want: [][]string{{"mail [REDACTED:email]", "thanks"}},
		},
		{
			name:   "dropped chat messages are removed, the last first",
			family: FamilyChat,
			body:   `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"user","content":"d"}]}`,
			edit: func(r *Request) {
				r.Messages[1].Dropped = true
				r.Messages[2].Parts[0].Dropped = true
			},
			want: [][]string{{"a"}, {"d"}},
		},
		{
			name:   "Responses instructions and input items are rewritten in place",
			family: FamilyResponses,
			body: `{"model":"gpt-4.1","instructions":"key=abc123","input":[{"role":"user","content":[{"type":"input_text","text":"hello"}]},` +
				`{"type":"reasoning","id":"rs_1","summary":[]},{"type":"function_call_output","call_id":"c","output":"ssn 123-45-6789"}]}`,
			edit: func(r *Request) {
				r.Messages[0].Parts[0].Text = "key=[REDACTED:secret]"
				r.Messages[2].Parts[0].Text = "ssn [REDACTED:ssn]"
			},
			want: [][]string{{"key=[REDACTED:secret]"}, {"hello"}, {"ssn [REDACTED:ssn]"}},
		},
		{
			name:   "an Anthropic system block, tool result and text document are rewritten",
			family: FamilyMessages,
			body: `{"model":"claude","max_tokens":5,"system":[{"type":"text","text":"sys secret"}],"messages":[{"role":"user","content":[` +
				`{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"result secret"}]},` +
				`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc secret"}},{"type":"text","text":"keep"}]}]}`,
			edit: func(r *Request) {
				r.Messages[0].Parts[0].Text = "sys [X]"
				r.Messages[1].Parts[0].Text = "result [X]"
				r.Messages[1].Parts[1].Text = "doc [X]"
			},
			want: [][]string{{"sys [X]"}, {"result [X]", "doc [X]", "keep"}},
		},
		{
			name:   "an embeddings input string in an array is rewritten",
			family: FamilyEmbeddings,
			body:   `{"model":"e","input":["a@b.c","plain"]}`,
			edit:   func(r *Request) { r.Messages[0].Parts[0].Text = "[REDACTED:email]" },
			want:   [][]string{{"[REDACTED:email]", "plain"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseRequest(tc.family, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(&req)
			out, err := RewriteRequest([]byte(tc.body), &req)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(t, tc.family, out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q\n%s", got, tc.want, out)
			}
		})
	}
	t.Run("other members survive a rewrite with their exact values", func(t *testing.T) {
		body := `{"model":"gpt-4o","temperature":0.25,"seed":12345678901234567,"messages":[{"role":"user","content":"x <b>"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
		req, _ := ParseRequest(FamilyChat, []byte(body))
		req.Messages[0].Parts[0].Text = "y <b>"
		out, err := RewriteRequest([]byte(body), &req)
		if err != nil {
			t.Fatal(err)
		}
		var got, want map[string]json.RawMessage
		_ = json.Unmarshal(out, &got)
		_ = json.Unmarshal([]byte(body), &want)
		if string(got["seed"]) != "12345678901234567" || string(got["temperature"]) != "0.25" || string(got["tools"]) != string(want["tools"]) {
			t.Fatalf("got %s", out)
		}
		if string(got["messages"]) != `[{"role":"user","content":"y <b>"}]` {
			t.Fatalf("messages %s", got["messages"])
		}
	})
	t.Run("a request without edits is returned as it is", func(t *testing.T) {
		body := []byte(`{"messages":[{"role":"user","content":"x"}]}`)
		req, _ := ParseRequest(FamilyChat, body)
		out, err := RewriteRequest(body, &req)
		if err != nil || &out[0] != &body[0] {
			t.Fatalf("rewritten without edits: %v", err)
		}
	})
	t.Run("a text edit of a media part is refused", func(t *testing.T) {
		body := []byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"}}]}]}`)
		req, _ := ParseRequest(FamilyChat, body)
		req.Messages[0].Parts[0].Text = "x"
		if _, err := RewriteRequest(body, &req); !errors.Is(err, ErrNotRewritable) {
			t.Fatalf("got %v", err)
		}
	})
}
