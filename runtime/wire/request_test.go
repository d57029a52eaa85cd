package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

func TestParseRequest(t *testing.T) {
	cases := []struct {
		name   string
		family Family
		body   string
		want   Request
	}{
		{
			name:   "a chat request with string content, a system message and stream options",
			family: FamilyChat,
			body: `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}],
				"stream":true,"stream_options":{"include_usage":true},"n":2,"temperature":0.2}`,
			want: Request{Family: FamilyChat, Model: "gpt-4o", Stream: true, N: 2, IncludeUsage: true, Messages: []Message{
				{Role: "system", System: true, Parts: []Part{textPart("Be brief.")}},
				{Role: "user", Parts: []Part{textPart("Hello")}},
			}},
		},
		{
			name:   "a chat request with image, audio and file parts keeps media by reference",
			family: FamilyChat,
			body: `{"model":"gpt-4o","messages":[{"role":"user","content":[
				{"type":"text","text":"What is this?"},
				{"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"low"}},
				{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},
				{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},
				{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}},
				{"type":"file","file":{"file_id":"file-abc123"}}]}]}`,
			want: Request{Family: FamilyChat, Model: "gpt-4o", N: 1, Messages: []Message{{Role: "user", Parts: []Part{
				textPart("What is this?"),
				{Modality: classify.Image, URL: "https://example.com/cat.png"},
				{Modality: classify.Image, URL: "data:image/jpeg;base64,/9j/4AAQ", MIMEType: "image/jpeg"},
				{Modality: classify.Audio, URL: "data:audio/wav;base64,UklGRg==", MIMEType: "audio/wav"},
				{Modality: classify.File, URL: "data:application/pdf;base64,JVBERi0=", MIMEType: "application/pdf"},
				{Modality: classify.File, URL: "file-abc123"},
			}}}},
		},
		{
			name:   "a chat request with tools, a tool call in the history and its result",
			family: FamilyChat,
			body: `{"model":"gpt-4o","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}},
				"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{}}}],
				"messages":[{"role":"user","content":"Weather?"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
				{"role":"tool","tool_call_id":"call_1","content":"Sunny"}]}`,
			want: Request{Family: FamilyChat, Model: "gpt-4o", N: 1, Object: true,
				Tools: []Tool{{Type: "function", Name: "get_weather", Description: "Weather"}},
				Messages: []Message{
					{Role: "user", Parts: []Part{textPart("Weather?")}},
					{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
					{Role: "tool", Parts: []Part{{Modality: classify.Text, Text: "Sunny", ToolCallID: "call_1"}}},
				}},
		},
		{
			name:   "an unknown chat part type is an opaque part, not skipped",
			family: FamilyChat,
			body:   `{"messages":[{"role":"user","content":[{"type":"video_url","video_url":{"url":"x"}}]}]}`,
			want:   Request{Family: FamilyChat, N: 1, Messages: []Message{{Role: "user", Parts: []Part{opaquePart(classify.File, "")}}}},
		},
		{
			name:   "a Responses request with instructions and a string input",
			family: FamilyResponses,
			body:   `{"model":"gpt-4.1","instructions":"Talk like a pirate.","input":"Hi","stream":true,"text":{"format":{"type":"json_object"}}}`,
			want: Request{Family: FamilyResponses, Model: "gpt-4.1", Stream: true, N: 1, IncludeUsage: true, Object: true, Messages: []Message{
				{Role: "developer", System: true, Parts: []Part{textPart("Talk like a pirate.")}},
				{Role: "user", Parts: []Part{textPart("Hi")}},
			}},
		},
		{
			name:   "a Responses request with input items, images, files and a function call output",
			family: FamilyResponses,
			body: `{"model":"gpt-4.1","tools":[{"type":"function","name":"get_weather","description":"W","parameters":{}}],"input":[
				{"role":"user","content":[{"type":"input_text","text":"Look"},{"type":"input_image","image_url":"https://x/y.png"},{"type":"input_file","file_id":"file-1"}]},
				{"type":"reasoning","id":"rs_1","summary":[]},
				{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"},
				{"type":"function_call_output","call_id":"call_1","output":"Rain"},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It rains."}]}]}`,
			want: Request{Family: FamilyResponses, Model: "gpt-4.1", N: 1, IncludeUsage: true,
				Tools: []Tool{{Type: "function", Name: "get_weather", Description: "W"}},
				Messages: []Message{
					{Role: "user", Parts: []Part{textPart("Look"), {Modality: classify.Image, URL: "https://x/y.png"}, {Modality: classify.File, URL: "file-1"}}},
					{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: "{}"}}},
					{Role: "tool", Parts: []Part{{Modality: classify.Text, Text: "Rain", ToolCallID: "call_1"}}},
					{Role: "assistant", Parts: []Part{textPart("It rains.")}},
				}},
		},
		{
			name:   "an embeddings request with strings and token ids",
			family: FamilyEmbeddings,
			body:   `{"model":"text-embedding-3-small","input":["one","two",[1,2,3]]}`,
			want: Request{Family: FamilyEmbeddings, Model: "text-embedding-3-small", N: 1, Messages: []Message{
				// One message: a guardrail that judges the last message reads every input.
				{Role: "user", Parts: []Part{textPart("one"), textPart("two"), opaquePart(classify.Text, "")}},
			}},
		},
		{
			name:   "an embeddings request with a single string",
			family: FamilyEmbeddings,
			body:   `{"model":"text-embedding-3-small","input":"hello"}`,
			want: Request{Family: FamilyEmbeddings, Model: "text-embedding-3-small", N: 1, Messages: []Message{
				{Role: "user", Parts: []Part{textPart("hello")}},
			}},
		},
		{
			name:   "an Anthropic request with system blocks, an image, a document and tool use",
			family: FamilyMessages,
			body: `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,
				"system":[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],
				"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object"}}],
				"messages":[
				{"role":"user","content":[{"type":"text","text":"Look"},
					{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
					{"type":"document","source":{"type":"url","url":"https://x/a.pdf"}},
					{"type":"document","source":{"type":"text","media_type":"text/plain","data":"Plain notes"}}]},
				{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Sunny"}]}]}]}`,
			want: Request{Family: FamilyMessages, Model: "claude-sonnet-4-5", Stream: true, N: 1, IncludeUsage: true,
				Tools: []Tool{{Type: "function", Name: "get_weather", Description: "Weather"}},
				Messages: []Message{
					{Role: "system", System: true, Parts: []Part{textPart("You are terse.")}},
					{Role: "user", Parts: []Part{textPart("Look"),
						{Modality: classify.Image, URL: "data:image/png;base64,iVBORw0KGgo=", MIMEType: "image/png"},
						{Modality: classify.File, URL: "https://x/a.pdf"},
						textPart("Plain notes")}},
					{Role: "assistant", ToolCalls: []ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
					{Role: "user", Parts: []Part{{Modality: classify.Text, Text: "Sunny", ToolCallID: "toolu_1"}}},
				}},
		},
		{
			name:   "an Anthropic request with a string system and string content",
			family: FamilyMessages,
			body:   `{"model":"claude","system":"Be kind.","messages":[{"role":"user","content":"Hi"}]}`,
			want: Request{Family: FamilyMessages, Model: "claude", N: 1, IncludeUsage: true, Messages: []Message{
				{Role: "system", System: true, Parts: []Part{textPart("Be kind.")}},
				{Role: "user", Parts: []Part{textPart("Hi")}},
			}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRequest(tc.family, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got = withoutLocations(got); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// withoutLocations clears where parts live in the body (RewriteRequest tests them).
func withoutLocations(r Request) Request {
	for i := range r.Messages {
		m := &r.Messages[i]
		m.loc = loc{}
		for j := range m.Parts {
			m.Parts[j].loc, m.Parts[j].orig = loc{}, ""
		}
		for j := range m.ToolCalls {
			m.ToolCalls[j].loc, m.ToolCalls[j].orig, m.ToolCalls[j].raw = loc{}, "", false
		}
	}
	return r
}

func TestParseRequestMalformed(t *testing.T) {
	cases := []struct {
		name   string
		family Family
		body   string
	}{
		{"a body that is not JSON", FamilyChat, `{"messages":`},
		{"chat content that is a number", FamilyChat, `{"messages":[{"role":"user","content":42}]}`},
		{"Responses instructions that are not a string", FamilyResponses, `{"instructions":{"a":1},"input":"x"}`},
		{"Responses input that is a number", FamilyResponses, `{"input":7}`},
		{"an embeddings input of objects", FamilyEmbeddings, `{"input":[{"a":1}]}`},
		{"Anthropic content that is an object", FamilyMessages, `{"messages":[{"role":"user","content":{"type":"text"}}]}`},
		{"Anthropic tool results nested too deep", FamilyMessages, `{"messages":[{"role":"user","content":` +
			strings.Repeat(`[{"type":"tool_result","content":`, 8) + `"x"` + strings.Repeat(`}]`, 8) + `}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is malformed", func(t *testing.T) {
			if _, err := ParseRequest(tc.family, []byte(tc.body)); !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
		})
	}
}

func TestRoute(t *testing.T) {
	cases := []struct {
		method, path string
		want         Family
		ok           bool
	}{
		{"POST", "/v1/chat/completions", FamilyChat, true},
		{"POST", "/v1/responses", FamilyResponses, true},
		{"POST", "/v1/embeddings", FamilyEmbeddings, true},
		{"POST", "/v1/messages", FamilyMessages, true},
		{"GET", "/v1/models", 0, false},
		{"POST", "/v1/images/generations", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			f, ok := Route(tc.method, tc.path)
			if f != tc.want || ok != tc.ok {
				t.Fatalf("got %v %v", f, ok)
			}
		})
	}
}

func fuzzParse(f *testing.F, fam Family, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseRequest(fam, body)
		if err != nil {
			return
		}
		if countParts(req.Messages) > MaxParts || req.N < 1 {
			t.Fatalf("unbounded or invalid request: %d parts, n %d", countParts(req.Messages), req.N)
		}
		// Redact every text part and drop every other part: the rewritten body parses.
		k := 0
		for i := range req.Messages {
			for j := range req.Messages[i].Parts {
				p := &req.Messages[i].Parts[j]
				if k++; k%2 == 0 {
					p.Dropped = true
				} else if p.Modality == classify.Text && !p.Opaque {
					p.Text = "[REDACTED]"
				}
			}
		}
		out, err := RewriteRequest(body, &req)
		if err != nil {
			if !errors.Is(err, ErrNotRewritable) {
				t.Fatalf("rewrite: %v", err)
			}
			return
		}
		if _, err := ParseRequest(fam, out); err != nil {
			t.Fatalf("rewritten body does not parse: %v\n%s", err, out)
		}
	})
}

func FuzzParseChatRequest(f *testing.F) {
	fuzzParse(f, FamilyChat,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":3,"stream":true}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}},{"type":"input_audio","input_audio":{"data":"AA","format":"mp3"}},{"type":"file","file":{"file_data":"AA"}}]}]}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`)
}

func FuzzParseResponsesRequest(f *testing.F) {
	fuzzParse(f, FamilyResponses,
		`{"model":"m","input":"hi","instructions":"be"}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"u"}]},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}]}`)
}

func FuzzParseEmbeddingsRequest(f *testing.F) {
	fuzzParse(f, FamilyEmbeddings, `{"input":"a"}`, `{"input":["a",[1,2]]}`, `{"input":[1,2,3]}`)
}

func FuzzParseMessagesRequest(f *testing.F) {
	fuzzParse(f, FamilyMessages,
		`{"system":"s","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}},{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"x"}]}}]}]}]}`)
}
