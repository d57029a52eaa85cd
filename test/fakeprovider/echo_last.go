package fakeprovider

import (
	"encoding/json"
	"strings"
)

// EchoTool is the name of the tool call EchoLast answers with when the request declares
// tools.
const EchoTool = "echo"

// EchoLast returns a handler (WithHandler) that answers each request, in every family,
// with the text of its last message — "You said: " and the text, in deltas of size
// bytes. When the request declares tools it calls EchoTool instead, with the arguments
// {"note": text} in deltas of size bytes, encoded as encoding/json does by default ('<'
// and '>' as \u003c and \u003e, as some SDKs and servers write them). It is the provider
// of the guard's round-trip tests: whatever the guard changed in the prompt comes back in
// the answer, exactly.
func EchoLast(size int) func(*Request) Script {
	return func(r *Request) Script {
		text, tools := lastText(r)
		if !tools {
			return Script{Choices: []Choice{{Deltas: Chunks("You said: "+text, size)}}}
		}
		args, _ := json.Marshal(map[string]string{"note": text})
		deltas := []Delta{ToolCall("", EchoTool)}
		for _, d := range Chunks(string(args), size) {
			deltas = append(deltas, ToolArgs(d.Text))
		}
		return Script{Choices: []Choice{{Deltas: deltas}}}
	}
}

// lastText returns the text of the request's last message (chat messages, Responses
// input — a message's content or a tool output —, Anthropic messages; a string or the
// text parts joined, tool results included) and whether it declares tools.
func lastText(r *Request) (string, bool) {
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input json.RawMessage   `json:"input"`
		Tools []json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(r.Body, &body)
	tools := len(body.Tools) > 0
	if len(body.Input) > 0 {
		var s string
		if json.Unmarshal(body.Input, &s) == nil {
			return s, tools
		}
		var items []struct {
			Content json.RawMessage `json:"content"`
			Output  json.RawMessage `json:"output"` // a function_call_output item
		}
		_ = json.Unmarshal(body.Input, &items)
		if n := len(items); n > 0 {
			if len(items[n-1].Content) == 0 {
				return contentText(items[n-1].Output), tools
			}
			return contentText(items[n-1].Content), tools
		}
		return "", tools
	}
	if n := len(body.Messages); n > 0 {
		return contentText(body.Messages[n-1].Content), tools
	}
	return "", tools
}

// contentText reads a message content: a string, or parts whose text is joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"` // an Anthropic tool_result block
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		if len(p.Content) > 0 {
			b.WriteString(contentText(p.Content))
		}
	}
	return b.String()
}
