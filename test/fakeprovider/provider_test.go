package fakeprovider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// The tests read the provider's output with the guard's own wire decoders: the two are
// written independently, so agreement checks both.

func post(t *testing.T, p *Provider, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, p.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := p.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// streamed is what a client reconstructs of a stream.
type streamed struct {
	text     map[content.Channel]string
	calls    map[content.Channel]string
	names    map[content.Channel]string
	finishes []string
	usage    wire.Usage
	errors   []string
	done     bool
	events   int
}

func decodeStream(t *testing.T, fam wire.Family, req *wire.Request, body []byte) streamed {
	t.Helper()
	req.Family, req.Stream = fam, true
	st := wire.NewStream(req)
	s := streamed{text: map[content.Channel]string{}, calls: map[content.Channel]string{}, names: map[content.Channel]string{}}
	r := sse.NewReader(bytes.NewReader(body), 0)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return s
		}
		if err != nil {
			t.Fatal(err)
		}
		s.events++
		items, err := st.Decode(nil, &ev)
		if err != nil {
			t.Fatalf("event %q: %v", ev.Raw, err)
		}
		for _, it := range items {
			switch it.Kind {
			case wire.ItemDelta:
				if it.Channel.Kind == content.ToolCall {
					s.calls[it.Channel] += it.Text
				} else {
					s.text[it.Channel] += it.Text
				}
			case wire.ItemToolCallStart:
				s.names[it.Channel] = it.Name
			case wire.ItemFinish:
				s.finishes = append(s.finishes, it.Text)
			case wire.ItemUsage:
				s.usage = it.Usage
			case wire.ItemError:
				s.errors = append(s.errors, it.Text)
			case wire.ItemTerminator:
				s.done = true
			}
		}
	}
}

func toolScript() Script {
	return Script{Choices: []Choice{{Deltas: []Delta{
		Reasoning("Need "), Reasoning("weather."), Text("Let me "), Text("check."),
		ToolCall("", "get_weather"), ToolArgs(`{"city":`), ToolArgs(`"Paris"}`),
	}}}, Usage: Usage{InputTokens: 7, OutputTokens: 9}}
}

func TestChatCompletions(t *testing.T) {
	t.Run("a non-streamed completion carries the script's text and tool call and the request is recorded", func(t *testing.T) {
		p := New()
		defer p.Close()
		p.Enqueue(toolScript())
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather?"}]}`
		resp, b := post(t, p, "/v1/chat/completions", body, "Authorization", "Bearer sk-test")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%d %v", resp.StatusCode, resp.Header)
		}
		r, err := wire.DecodeResponse(wire.FamilyChat, nil, b)
		if err != nil {
			t.Fatal(err)
		}
		want := []wire.Content{
			{Channel: content.Channel{Kind: content.Text}, Text: "Let me check."},
			{Channel: content.Channel{Kind: content.Reasoning}, Text: "Need weather."},
			{Channel: content.Channel{Kind: content.ToolCall}, Text: `{"city":"Paris"}`, ID: "call_fake_0", Name: "get_weather"},
		}
		if len(r.Contents) != 3 || r.Contents[0] != want[0] || r.Contents[1] != want[1] || r.Contents[2] != want[2] || r.Finish[0] != "tool_calls" || r.Usage.InputTokens != 7 {
			t.Fatalf("got %+v\n%s", r, b)
		}
		got, _ := p.LastRequest()
		if got.Header.Get("Authorization") != "Bearer sk-test" || string(got.Body) != body || got.Path != "/v1/chat/completions" {
			t.Fatalf("recorded %+v", got)
		}
		if sent := p.Responses()[0]; !bytes.Equal(sent.Body, b) || sent.Status != 200 {
			t.Fatalf("recorded response differs from what the client received")
		}
	})
	t.Run("a stream with two choices, a tool call and usage decodes into the script", func(t *testing.T) {
		p := New(WithDefault(Script{Choices: []Choice{
			{Deltas: Texts("Hel", "lo")},
			{Deltas: []Delta{ToolCall("call_9", "lookup"), ToolArgs(`{"q":`), ToolArgs(`1}`)}},
		}}))
		defer p.Close()
		resp, b := post(t, p, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"n":2,"stream_options":{"include_usage":true}}`)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatal(resp.Header)
		}
		s := decodeStream(t, wire.FamilyChat, &wire.Request{N: 2, IncludeUsage: true}, b)
		call := content.Channel{Choice: 1, Kind: content.ToolCall}
		if s.text[content.Channel{}] != "Hello" || s.calls[call] != `{"q":1}` || s.names[call] != "lookup" ||
			strings.Join(s.finishes, ",") != "stop,tool_calls" || s.usage.OutputTokens != 5 || !s.done {
			t.Fatalf("decoded %+v\n%s", s, b)
		}
		sent := p.Responses()[0]
		if !bytes.Equal(bytes.Join(sent.Events, nil), b) || len(sent.Events) != s.events {
			t.Fatalf("recorded events differ from what the client received")
		}
	})
}

func TestResponsesAndMessages(t *testing.T) {
	cases := []struct {
		name, path, body string
		family           wire.Family
		finish           string
	}{
		{"Responses", "/v1/responses", `{"model":"gpt-4.1","input":"Weather?","stream":%s}`, wire.FamilyResponses, "completed"},
		{"Anthropic Messages", "/v1/messages", `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"Weather?"}],"stream":%s}`, wire.FamilyMessages, "tool_use"},
	}
	for _, tc := range cases {
		t.Run("a streamed "+tc.name+" response with reasoning, text and a tool call decodes into the script", func(t *testing.T) {
			p := New(WithDefault(toolScript()))
			defer p.Close()
			_, b := post(t, p, tc.path, strings.Replace(tc.body, "%s", "true", 1), "x-api-key", "sk-ant-test")
			s := decodeStream(t, tc.family, &wire.Request{N: 1}, b)
			var text, reasoning, args, name string
			for ch, v := range s.text {
				if ch.Kind == content.Text {
					text += v
				} else {
					reasoning += v
				}
			}
			for ch, v := range s.calls {
				args, name = v, s.names[ch]
			}
			if text != "Let me check." || reasoning != "Need weather." || args != `{"city":"Paris"}` || name != "get_weather" ||
				len(s.finishes) != 1 || s.finishes[0] != tc.finish || !s.done || s.usage.OutputTokens != 9 {
				t.Fatalf("decoded %+v\n%s", s, b)
			}
			if got, _ := p.LastRequest(); got.Header.Get("x-api-key") != "sk-ant-test" {
				t.Fatal("x-api-key not recorded")
			}
		})
		t.Run("a non-streamed "+tc.name+" response decodes into the script", func(t *testing.T) {
			p := New(WithDefault(toolScript()))
			defer p.Close()
			_, b := post(t, p, tc.path, strings.Replace(tc.body, "%s", "false", 1))
			r, err := wire.DecodeResponse(tc.family, nil, b)
			if err != nil || len(r.Contents) != 3 || r.Contents[1].Text != "Let me check." || r.Contents[2].Text != `{"city":"Paris"}` || r.Finish[0] != tc.finish {
				t.Fatalf("%+v %v\n%s", r, err, b)
			}
		})
	}
}

func TestEmbeddingsAndModels(t *testing.T) {
	p := New()
	defer p.Close()
	t.Run("an embeddings request gets one embedding per input", func(t *testing.T) {
		_, b := post(t, p, "/v1/embeddings", `{"model":"text-embedding-3-small","input":["a","b","c"]}`)
		if strings.Count(string(b), `"object":"embedding"`) != 3 {
			t.Fatalf("%s", b)
		}
	})
	t.Run("GET /v1/models lists a model", func(t *testing.T) {
		resp, err := p.Client().Get(p.URL + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"object":"list"`) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("an unknown route is a 404 in OpenAI's shape", func(t *testing.T) {
		resp, b := post(t, p, "/v1/images/generations", `{}`)
		if resp.StatusCode != 404 || !strings.Contains(string(b), `"error"`) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
}

func TestUpstreamErrors(t *testing.T) {
	t.Run("an HTTP error is in each family's shape", func(t *testing.T) {
		p := New()
		defer p.Close()
		p.Enqueue(Script{Error: &Error{Status: 429, Type: "rate_limit_error", Message: "Slow down", Code: "rate_limit_exceeded"}},
			Script{Error: &Error{Status: 529, Type: "overloaded_error", Message: "Overloaded"}})
		resp, b := post(t, p, "/v1/chat/completions", `{}`)
		if resp.StatusCode != 429 || string(b) != `{"error":{"message":"Slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}` {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		resp, b = post(t, p, "/v1/messages", `{}`)
		if resp.StatusCode != 529 || string(b) != `{"type":"error","error":{"message":"Overloaded","type":"overloaded_error"},"request_id":"req_fake_2"}` {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	for _, tc := range []struct {
		name, path string
		family     wire.Family
	}{{"chat", "/v1/chat/completions", wire.FamilyChat}, {"Responses", "/v1/responses", wire.FamilyResponses}, {"Anthropic", "/v1/messages", wire.FamilyMessages}} {
		t.Run("a mid-stream error is the "+tc.name+" error event and ends the stream", func(t *testing.T) {
			p := New(WithDefault(Script{Choices: []Choice{{Deltas: Texts("a", "b", "c")}}, StreamError: &Error{Message: "Overloaded"}, ErrorAfter: 3}))
			defer p.Close()
			_, b := post(t, p, tc.path, `{"stream":true}`)
			s := decodeStream(t, tc.family, &wire.Request{N: 1}, b)
			if len(s.errors) != 1 || s.errors[0] != "Overloaded" || s.done || s.events != 4 {
				t.Fatalf("decoded %+v\n%s", s, b)
			}
		})
	}
}

func TestMalformedAndCutStreams(t *testing.T) {
	t.Run("raw bytes are streamed as they are, in pieces", func(t *testing.T) {
		raw := []byte("data: {\"id\":\ndata: not json\n\n")
		p := New(WithDefault(Script{Raw: raw, RawChunks: 3}))
		defer p.Close()
		_, b := post(t, p, "/v1/chat/completions", `{"stream":true}`)
		if !bytes.Equal(b, raw) || len(p.Responses()[0].Events) != 3 {
			t.Fatalf("%q", b)
		}
	})
	t.Run("a cut stream has no terminator", func(t *testing.T) {
		p := New(WithDefault(Script{Choices: []Choice{{Deltas: Texts("a", "b", "c")}}, CutAfter: 2}))
		defer p.Close()
		_, b := post(t, p, "/v1/messages", `{"stream":true}`)
		s := decodeStream(t, wire.FamilyMessages, &wire.Request{N: 1}, b)
		if s.done || s.events != 2 {
			t.Fatalf("%+v", s)
		}
	})
}

func TestDelaysAndDisconnects(t *testing.T) {
	t.Run("events are delayed as scripted", func(t *testing.T) {
		p := New(WithDefault(Script{Choices: []Choice{{Deltas: Texts("a", "b")}}, Delay: 10 * time.Millisecond}))
		defer p.Close()
		start := time.Now()
		post(t, p, "/v1/chat/completions", `{"stream":true}`)
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("stream of 6 events took %v", d)
		}
	})
	t.Run("a client that goes away mid-stream is reported", func(t *testing.T) {
		p := New(WithDefault(Script{Choices: []Choice{{Deltas: Chunks(strings.Repeat("x", 100), 1)}}, Delay: 5 * time.Millisecond}))
		defer p.Close()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/v1/responses", strings.NewReader(`{"stream":true}`))
		resp, err := p.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		cancel()
		_ = resp.Body.Close()
		wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer wcancel()
		d, err := p.WaitDisconnect(wctx)
		if err != nil || d.Path != "/v1/responses" || d.EventsSent == 0 || d.EventsSent >= 100 {
			t.Fatalf("%+v %v", d, err)
		}
		if !p.Responses()[0].Disconnected {
			t.Fatal("response not marked disconnected")
		}
	})
}

func TestHandler(t *testing.T) {
	t.Run("a handler scripts each request from what it asks", func(t *testing.T) {
		p := New(WithHandler(func(r *Request) Script {
			if strings.Contains(string(r.Body), "ping") {
				return Reply("pong")
			}
			return Reply("?")
		}))
		defer p.Close()
		_, b := post(t, p, "/v1/chat/completions", `{"messages":[{"role":"user","content":"ping"}]}`)
		if r, _ := wire.DecodeResponse(wire.FamilyChat, nil, b); r.Contents[0].Text != "pong" {
			t.Fatalf("%s", b)
		}
	})
}

func TestRecordAndChatStreamText(t *testing.T) {
	b, err := Record(t.Context(), Reply("one ", "two ", "three"), "/v1/chat/completions",
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	text, done, err := ChatStreamText(b)
	if err != nil || text != "one two three" || !done {
		t.Errorf("got %q (terminated: %v) %v from %q", text, done, err, b)
	}
	cut := b[:bytes.LastIndex(b, []byte("data: [DONE]"))]
	if _, done, _ := ChatStreamText(cut); done {
		t.Error("a stream without [DONE] reads as terminated")
	}
	if _, _, err := ChatStreamText([]byte("data: {\"choices\":[\n\n")); err == nil {
		t.Error("an event that is not a chat chunk reads without an error")
	}
	if _, err := Record(t.Context(), Script{Error: &Error{Status: 429}}, "/v1/chat/completions", `{"model":"m","messages":[]}`); err == nil {
		t.Error("Record returns an error answer without an error")
	}
}
