package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

const chatHead = `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8",`

// chatChunkJSON returns a chunk with the given choices and usage (with usage:null when
// usage is empty, as with include_usage).
func chatChunkJSON(choices, usage string) string {
	if usage == "" {
		usage = "null"
	}
	return chatHead + `"choices":[` + choices + `],"usage":` + usage + `}`
}

func chatDelta(index int, delta, finish string) string {
	if finish == "" {
		finish = "null"
	} else {
		finish = `"` + finish + `"`
	}
	return `{"index":` + string(rune('0'+index)) + `,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}`
}

// chatTextStream is a captured-shaped text stream: role chunk, content deltas, finish,
// usage chunk, [DONE].
func chatTextStream(parts ...string) string {
	evs := []string{chatChunkJSON(chatDelta(0, `{"role":"assistant","content":"","refusal":null}`, ""), "")}
	for _, p := range parts {
		evs = append(evs, chatChunkJSON(chatDelta(0, `{"content":`+string(jsonx.Quote(p))+`}`, ""), ""))
	}
	evs = append(evs,
		chatChunkJSON(chatDelta(0, `{}`, "stop"), ""),
		chatChunkJSON("", `{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`),
		"[DONE]")
	return lines(evs...)
}

// chatToolStream is a captured-shaped tool call stream.
func chatToolStream() string {
	return lines(
		chatChunkJSON(chatDelta(0, `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null}`, ""), ""),
		chatChunkJSON(chatDelta(0, `{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}`, ""), ""),
		chatChunkJSON(chatDelta(0, `{"tool_calls":[{"index":0,"function":{"arguments":"location"}}]}`, ""), ""),
		chatChunkJSON(chatDelta(0, `{"tool_calls":[{"index":0,"function":{"arguments":"\":\"Paris\"}"}}]}`, ""), ""),
		chatChunkJSON(chatDelta(0, `{}`, "tool_calls"), ""),
		"[DONE]")
}

var chatReq = &Request{Family: FamilyChat, Model: "gpt-4o", Stream: true, N: 1, IncludeUsage: true}

func TestChatStreamDecode(t *testing.T) {
	t.Run("a text stream decodes into deltas, a channel end, a final finish, usage and the terminator", func(t *testing.T) {
		st := NewStream(chatReq)
		var kinds []string
		var text strings.Builder
		for _, ev := range parseEvents(t, chatTextStream("Hello", " world")) {
			items, err := st.Decode(nil, &ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				kinds = append(kinds, it.Kind.String())
				if it.Kind == ItemDelta {
					text.WriteString(it.Text)
				}
				if it.Kind == ItemFinish && (!it.Final || it.Text != "stop") {
					t.Fatalf("finish %+v", it)
				}
				if it.Kind == ItemUsage && (it.Usage.InputTokens != 19 || it.Usage.OutputTokens != 10) {
					t.Fatalf("usage %+v", it.Usage)
				}
			}
		}
		want := "pass delta delta channelEnd finish usage terminator"
		if got := strings.Join(kinds, " "); got != want || text.String() != "Hello world" {
			t.Fatalf("items %q text %q, want %q", got, text.String(), want)
		}
	})
	t.Run("a tool call decodes into a start with id and name, argument deltas, and an end at the finish", func(t *testing.T) {
		st := NewStream(chatReq)
		var got []Item
		for _, ev := range parseEvents(t, chatToolStream()) {
			items, err := st.Decode(nil, &ev)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, items...)
		}
		call := content.Channel{Kind: content.ToolCall}
		if got[0].Kind != ItemToolCallStart || got[0].ID != "call_DdmO9pD3xa9XTPNJ32zg2hcA" || got[0].Name != "get_weather" || got[0].Channel != call {
			t.Fatalf("start %+v", got[0])
		}
		var args string
		for _, it := range got {
			if it.Kind == ItemDelta {
				args += it.Text
			}
		}
		end := got[len(got)-3]
		if args != `{"location":"Paris"}` || end.Kind != ItemChannelEnd || end.Name != "get_weather" {
			t.Fatalf("args %q end %+v", args, end)
		}
	})
	t.Run("reasoning_content and reasoning deltas are the reasoning channel", func(t *testing.T) {
		st := NewStream(chatReq)
		for _, key := range []string{"reasoning_content", "reasoning"} {
			ev := parseEvents(t, lines(chatChunkJSON(chatDelta(0, `{"`+key+`":"think"}`, ""), "")))[0]
			items, err := st.Decode(nil, &ev)
			if err != nil || len(items) != 1 || items[0].Channel.Kind != content.Reasoning || items[0].Text != "think" {
				t.Fatalf("%s: %+v %v", key, items, err)
			}
		}
	})
	t.Run("a JSON response format makes the content the object channel with its snapshot", func(t *testing.T) {
		req := *chatReq
		req.Object = true
		st := NewStream(&req)
		var last Item
		for _, ev := range parseEvents(t, chatTextStream(`{"a":`, `1}`)) {
			items, _ := st.Decode(nil, &ev)
			for _, it := range items {
				if it.Kind == ItemDelta {
					last = it
				}
			}
		}
		if last.Channel.Kind != content.Object || last.Snapshot != `{"a":1}` {
			t.Fatalf("last delta %+v", last)
		}
	})
	t.Run("n choices finish separately and only the last finish is final", func(t *testing.T) {
		req := *chatReq
		req.N = 2
		st := NewStream(&req)
		var finals []bool
		for _, ev := range parseEvents(t, lines(
			chatChunkJSON(chatDelta(0, `{"content":"a"}`, ""), ""),
			chatChunkJSON(chatDelta(1, `{"content":"b"}`, ""), ""),
			chatChunkJSON(chatDelta(0, `{}`, "stop"), ""),
			chatChunkJSON(chatDelta(1, `{}`, "length"), ""))) {
			items, _ := st.Decode(nil, &ev)
			for _, it := range items {
				if it.Kind == ItemFinish {
					finals = append(finals, it.Final)
				}
			}
		}
		if len(finals) != 2 || finals[0] || !finals[1] {
			t.Fatalf("finals %v", finals)
		}
	})
	t.Run("an error event is an upstream error item", func(t *testing.T) {
		st := NewStream(chatReq)
		ev := parseEvents(t, lines(`{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`))[0]
		items, err := st.Decode(nil, &ev)
		if err != nil || items[0].Kind != ItemError || items[0].Text != "overloaded" {
			t.Fatalf("%+v %v", items, err)
		}
	})
	t.Run("a chunk that is not JSON is malformed", func(t *testing.T) {
		st := NewStream(chatReq)
		ev := parseEvents(t, lines(`{"id":`))[0]
		if _, err := st.Decode(nil, &ev); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestChatStreamEmit(t *testing.T) {
	t.Run("allowed traffic is forwarded byte for byte", func(t *testing.T) {
		in := chatTextStream("Hello", " world")
		out := pump(t, chatReq, parseEvents(t, in), newSim(0), 0, nil)
		if string(out) != in {
			t.Fatalf("got\n%s\nwant\n%s", out, in)
		}
	})
	t.Run("held-back text is re-chunked into valid chunks with the upstream's identifiers", func(t *testing.T) {
		out := pump(t, chatReq, parseEvents(t, chatTextStream("Hello", " wor", "ld!")), newSim(4), 0, nil)
		v := clientView(t, chatReq, out)
		if got := v.textOf(content.Text); got != "Hello world!" {
			t.Fatalf("client text %q", got)
		}
		for _, ev := range parseEvents(t, string(out)) {
			if string(ev.Data) == "[DONE]" {
				continue
			}
			var c struct {
				ID      string `json:"id"`
				Created int64  `json:"created"`
				Model   string `json:"model"`
			}
			if err := json.Unmarshal(ev.Data, &c); err != nil || c.ID != "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG" || c.Created != 1741570283 || c.Model != "gpt-4o-2024-08-06" {
				t.Fatalf("chunk %s: %+v %v", ev.Data, c, err)
			}
		}
		if v.done != 1 || len(v.finish) != 1 || v.finish[0] != "stop" {
			t.Fatalf("done %d finish %v", v.done, v.finish)
		}
	})
	t.Run("redacted text replaces the upstream text and the finish chunk still follows", func(t *testing.T) {
		eng := newSim(-1)
		eng.transform = func(s string) string { return strings.ReplaceAll(s, "4111 1111 1111 1111", "[REDACTED:card]") }
		out := pump(t, chatReq, parseEvents(t, chatTextStream("card 4111 ", "1111 1111", " 1111 ok")), eng, 0, nil)
		v := clientView(t, chatReq, out)
		if got := v.textOf(content.Text); got != "card [REDACTED:card] ok" || strings.Contains(string(out), "4111") {
			t.Fatalf("client text %q\n%s", got, out)
		}
		if len(v.finish) != 1 || v.done != 1 {
			t.Fatalf("finish %v done %d", v.finish, v.done)
		}
	})
	t.Run("a tool call is withheld while it streams and sent complete before the finish", func(t *testing.T) {
		evs := parseEvents(t, chatToolStream())
		st := NewStream(chatReq)
		eng := newSim(0)
		var out []byte
		for i := range evs {
			items, _ := st.Decode(nil, &evs[i])
			var rel []Release
			for _, it := range items {
				rel = append(rel, eng.feed(it)...)
			}
			n := len(out)
			out, _ = st.Emit(out, &evs[i], rel)
			if i < 4 && strings.Contains(string(out[n:]), "Paris") {
				t.Fatalf("arguments sent before the call was released: %s", out[n:])
			}
		}
		v := clientView(t, chatReq, out)
		call := content.Channel{Kind: content.ToolCall}
		if v.calls[call] != `{"location":"Paris"}` || v.names[call] != "get_weather" {
			t.Fatalf("client call %q %q\n%s", v.calls[call], v.names[call], out)
		}
		if !strings.Contains(string(out), `"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA"`) || strings.Index(string(out), "Paris") > strings.Index(string(out), `"finish_reason":"tool_calls"`) {
			t.Fatalf("call not complete before the finish:\n%s", out)
		}
	})
	t.Run("a stream block ends with the reason and content_filter then DONE", func(t *testing.T) {
		out := pump(t, chatReq, parseEvents(t, chatTextStream("Hello", " bad")), newSim(0), 3,
			func(st *Stream, out []byte) []byte { return st.AppendBlock(out, "Not allowed here.") })
		v := clientView(t, chatReq, out)
		if v.textOf(content.Text) != "Hello\n\nNot allowed here." || len(v.finish) != 1 || v.finish[0] != "content_filter" || v.done != 1 {
			t.Fatalf("client %+v\n%s", v, out)
		}
	})
	t.Run("a stream block ends every unfinished choice", func(t *testing.T) {
		req := *chatReq
		req.N = 2
		out := NewStream(&req).AppendBlock(nil, "no")
		v := clientView(t, &req, out)
		if len(v.finish) != 2 || v.text[content.Channel{Choice: 1}] != "no" {
			t.Fatalf("client %+v", v)
		}
	})
	t.Run("a fail-closed failure is a data error event with policy_evaluation_failed and no DONE", func(t *testing.T) {
		out := NewStream(chatReq).AppendFailure(nil, "team-a/pii")
		want := `data: {"error":{"message":"policy evaluation failed","type":"server_error","param":null,"code":"policy_evaluation_failed","guardrail":"team-a/pii"}}` + "\n\n"
		if string(out) != want {
			t.Fatalf("got %s", out)
		}
	})
	t.Run("a chunk with content and a finish keeps its finish when its content is replaced", func(t *testing.T) {
		in := lines(chatChunkJSON(chatDelta(0, `{"role":"assistant","content":"secret"}`, "stop"), ""), "[DONE]")
		eng := newSim(-1)
		eng.transform = func(string) string { return "[REDACTED]" }
		out := pump(t, chatReq, parseEvents(t, in), eng, 0, nil)
		v := clientView(t, chatReq, out)
		if v.textOf(content.Text) != "[REDACTED]" || len(v.finish) != 1 || v.finish[0] != "stop" || strings.Contains(string(out), "secret") {
			t.Fatalf("client %+v\n%s", v, out)
		}
		if strings.Count(string(out), `"role":"assistant"`) != 1 {
			t.Fatalf("role sent other than once:\n%s", out)
		}
	})
}

func TestObjectChannel(t *testing.T) {
	req := *chatReq
	req.Object = true
	obj := content.Channel{Kind: content.Object}
	t.Run("snapshots that extend what was sent are forwarded as the upstream's chunks", func(t *testing.T) {
		in := chatTextStream(`{"a":`, `1}`)
		st := NewStream(&req)
		var out []byte
		for _, ev := range parseEvents(t, in) {
			items, _ := st.Decode(nil, &ev)
			var rel []Release
			for _, it := range items {
				if it.Kind == ItemDelta {
					rel = append(rel, Release{Channel: obj, Text: []byte(it.Snapshot), Replace: true})
				}
			}
			var err error
			if out, err = st.Emit(out, &ev, rel); err != nil {
				t.Fatal(err)
			}
		}
		if string(out) != in {
			t.Fatalf("got\n%s", out)
		}
	})
	t.Run("a snapshot that rewrites what was sent is an error", func(t *testing.T) {
		st := NewStream(&req)
		evs := parseEvents(t, chatTextStream(`{"a":`, `1}`))
		_, _ = st.Decode(nil, &evs[1])
		if _, err := st.Emit(nil, &evs[1], []Release{{Channel: obj, Text: []byte(`{"a":`), Replace: true}}); err != nil {
			t.Fatal(err)
		}
		_, _ = st.Decode(nil, &evs[2])
		_, err := st.Emit(nil, &evs[2], []Release{{Channel: obj, Text: []byte(`{"b":1}`), Replace: true}})
		if !errors.Is(err, ErrObjectRewritten) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestEmitWithoutEvent(t *testing.T) {
	t.Run("content released at the end of the upstream is sent without an event", func(t *testing.T) {
		st := NewStream(chatReq)
		evs := parseEvents(t, chatTextStream("held"))
		_, _ = st.Decode(nil, &evs[0])
		out, _ := st.Emit(nil, &evs[0], nil)
		_, _ = st.Decode(nil, &evs[1])
		out, _ = st.Emit(out, &evs[1], nil)
		out, err := st.Emit(out, nil, []Release{{Channel: content.Channel{}, Text: []byte("held")}})
		if err != nil || clientView(t, chatReq, out).textOf(content.Text) != "held" {
			t.Fatalf("%v\n%s", err, out)
		}
	})
}
