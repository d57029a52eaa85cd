package wire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

const msgStartEvent = `message_start|{"type":"message_start","message":{"id":"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`

func msgText(index int, parts ...string) []string {
	i := string(rune('0' + index))
	evs := []string{`content_block_start|{"type":"content_block_start","index":` + i + `,"content_block":{"type":"text","text":""}}`}
	for _, p := range parts {
		evs = append(evs, `content_block_delta|{"type":"content_block_delta","index":`+i+`,"delta":{"type":"text_delta","text":`+string(jsonx.Quote(p))+`}}`)
	}
	return append(evs, `content_block_stop|{"type":"content_block_stop","index":`+i+`}`)
}

func msgTool(index int) []string {
	i := string(rune('0' + index))
	return []string{
		`content_block_start|{"type":"content_block_start","index":` + i + `,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}`,
		`content_block_delta|{"type":"content_block_delta","index":` + i + `,"delta":{"type":"input_json_delta","partial_json":""}}`,
		`content_block_delta|{"type":"content_block_delta","index":` + i + `,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}`,
		`content_block_delta|{"type":"content_block_delta","index":` + i + `,"delta":{"type":"input_json_delta","partial_json":" \"San Francisco, CA\"}"}}`,
		`content_block_stop|{"type":"content_block_stop","index":` + i + `}`,
	}
}

func msgEnd(stop string) []string {
	return []string{
		`message_delta|{"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null},"usage":{"output_tokens":15}}`,
		`message_stop|{"type":"message_stop"}`,
	}
}

func msgStream(blocks ...[]string) string {
	evs := []string{msgStartEvent, `ping|{"type": "ping"}`}
	for _, b := range blocks {
		evs = append(evs, b...)
	}
	return lines(evs...)
}

var messagesReq = &Request{Family: FamilyMessages, Model: "claude-sonnet-4-5", Stream: true, N: 1}

func TestMessagesStreamDecode(t *testing.T) {
	t.Run("text, thinking and tool_use blocks decode into their channels by block index", func(t *testing.T) {
		thinking := []string{
			`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}}`,
			`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}`,
			`content_block_stop|{"type":"content_block_stop","index":0}`,
		}
		st := NewStream(messagesReq)
		var got []string
		for _, ev := range parseEvents(t, msgStream(thinking, msgText(1, "Hi"), msgTool(2), msgEnd("tool_use"))) {
			items, err := st.Decode(nil, &ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				s := it.Kind.String()
				if it.Kind != ItemPass && it.Kind != ItemUsage && it.Kind != ItemTerminator && it.Kind != ItemFinish {
					// Every index spelled: the content block's index is what this checks.
					ch := it.Channel
					s += fmt.Sprintf("@choice[%d].%s[%d]", ch.Choice, ch.Kind, ch.Index)
				}
				got = append(got, s)
			}
		}
		want := "usage pass pass delta@choice[0].reasoning[0] pass channelEnd@choice[0].reasoning[0] " +
			"pass delta@choice[0].text[1] channelEnd@choice[0].text[1] " +
			"toolCallStart@choice[0].toolCall[2] delta@choice[0].toolCall[2] delta@choice[0].toolCall[2] channelEnd@choice[0].toolCall[2] " +
			"finish usage terminator"
		if strings.Join(got, " ") != want {
			t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), want)
		}
	})
	t.Run("an error event is an upstream error item", func(t *testing.T) {
		st := NewStream(messagesReq)
		ev := parseEvents(t, lines(`error|{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))[0]
		items, err := st.Decode(nil, &ev)
		if err != nil || items[0].Kind != ItemError || items[0].Text != "Overloaded" {
			t.Fatalf("%+v %v", items, err)
		}
	})
}

func TestMessagesStreamEmit(t *testing.T) {
	t.Run("allowed traffic is forwarded byte for byte", func(t *testing.T) {
		in := msgStream(msgText(0, "Hello", "!"), msgEnd("end_turn"))
		if out := pump(t, messagesReq, parseEvents(t, in), newSim(0), 0, nil); string(out) != in {
			t.Fatalf("got\n%s\nwant\n%s", out, in)
		}
	})
	t.Run("held-back text is re-chunked into text deltas of the same block", func(t *testing.T) {
		out := pump(t, messagesReq, parseEvents(t, msgStream(msgText(0, "Hello", " wor", "ld"), msgEnd("end_turn"))), newSim(3), 0, nil)
		v := clientView(t, messagesReq, out)
		if v.text[content.Channel{Index: 0}] != "Hello world" || v.done != 1 || v.finish[0] != "end_turn" {
			t.Fatalf("client %+v\n%s", v, out)
		}
	})
	t.Run("a tool call is sent complete when released and text after it waits behind it", func(t *testing.T) {
		in := msgStream(msgText(0, "Checking."), msgTool(1), msgText(2, "Done."), msgEnd("tool_use"))
		out := string(pump(t, messagesReq, parseEvents(t, in), newSim(0), 0, nil))
		starts := []int{strings.Index(out, `"index":0,"content_block"`), strings.Index(out, `"index":1,"content_block"`), strings.Index(out, `"index":2,"content_block"`)}
		if starts[0] < 0 || starts[0] > starts[1] || starts[1] > starts[2] {
			t.Fatalf("blocks out of order %v:\n%s", starts, out)
		}
		v := clientView(t, messagesReq, []byte(out))
		call := content.Channel{Kind: content.ToolCall, Index: 1}
		if v.calls[call] != `{"location": "San Francisco, CA"}` || v.names[call] != "get_weather" || v.text[content.Channel{Index: 2}] != "Done." {
			t.Fatalf("client %+v\n%s", v, out)
		}
	})
	t.Run("a stream block appends the reason to the open text block and stops with refusal", func(t *testing.T) {
		out := pump(t, messagesReq, parseEvents(t, msgStream(msgText(0, "Hello", " bad"))), newSim(0), 5,
			func(st *Stream, out []byte) []byte { return st.AppendBlock(out, "Not allowed.") })
		v := clientView(t, messagesReq, out)
		if v.text[content.Channel{Index: 0}] != "Hello\n\nNot allowed." || len(v.finish) != 1 || v.finish[0] != "refusal" || v.done != 1 {
			t.Fatalf("client %+v\n%s", v, out)
		}
	})
	t.Run("a block while a tool call is withheld drops the call and starts a text block at its index", func(t *testing.T) {
		in := msgStream(msgText(0, "Checking."), msgTool(1), msgEnd("tool_use"))
		out := string(pump(t, messagesReq, parseEvents(t, in), newSim(0), 11,
			func(st *Stream, out []byte) []byte { return st.AppendBlock(out, "No tools.") }))
		if strings.Contains(out, "tool_use") || strings.Contains(out, "San Francisco") {
			t.Fatalf("tool call leaked:\n%s", out)
		}
		v := clientView(t, messagesReq, []byte(out))
		if v.text[content.Channel{Index: 1}] != "\n\nNo tools." || v.finish[0] != "refusal" {
			t.Fatalf("client %+v\n%s", v, out)
		}
	})
	t.Run("a fail-closed failure is an error event with api_error and the code in details", func(t *testing.T) {
		out := NewStream(messagesReq).AppendFailure(nil, "team-a/pii")
		want := "event: error\ndata: " + `{"type":"error","error":{"type":"api_error","message":"policy evaluation failed","details":{"error_code":"policy_evaluation_failed"},"guardrail":"team-a/pii"}}` + "\n\n"
		if string(out) != want {
			t.Fatalf("got %s", out)
		}
	})
}

func TestKeepAliveDuringWithheldCall(t *testing.T) {
	t.Run("a keep-alive comment is sent at once while a tool call is withheld", func(t *testing.T) {
		st := NewStream(messagesReq)
		evs := parseEvents(t, lines(msgTool(0)[:2]...)+": keep-alive\n\n")
		var out []byte
		for i := range evs {
			items, err := st.Decode(nil, &evs[i])
			if err != nil {
				t.Fatal(err)
			}
			_ = items
			out, _ = st.Emit(out, &evs[i], nil)
		}
		if string(out) != ": keep-alive\n\n" {
			t.Fatalf("got %q", out)
		}
	})
}
