package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// fuzzStream runs arbitrary bytes through the SSE reader, a Stream and a pass-through
// engine (holding back hold bytes), then ends the stream with a block or a failure. It
// must never panic, and what it writes must stay proportional to what it read.
func fuzzStream(f *testing.F, req *Request, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s), uint8(0), false)
		f.Add([]byte(s), uint8(3), true)
	}
	f.Fuzz(func(t *testing.T, input []byte, hold uint8, fail bool) {
		r := sse.NewReader(bytes.NewReader(input), 1<<16)
		st := NewStream(req)
		eng := newSim(int(hold % 8))
		var out []byte
		var items []Item
		for {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) || errors.Is(err, sse.ErrEventTooLarge) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			items, err = st.Decode(items[:0], &ev)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("decode error %v does not match ErrMalformed", err)
				}
				continue
			}
			var rel []Release
			for _, it := range items {
				rel = append(rel, eng.feed(it)...)
			}
			if out, err = st.Emit(out, &ev, rel); err != nil && !errors.Is(err, ErrQueueFull) && !errors.Is(err, ErrObjectRewritten) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("emit error %v", err)
			}
		}
		if fail {
			out = st.AppendFailure(out, "ns/g")
		} else {
			out = st.AppendBlock(out, "blocked")
		}
		if limit := 64*len(input) + 8192; len(out) > limit {
			t.Fatalf("wrote %d bytes for %d read", len(out), len(input))
		}
	})
}

func FuzzChatStream(f *testing.F) {
	fuzzStream(f, chatReq, chatTextStream("Hello", " world"), chatToolStream(),
		lines(chatChunkJSON(chatDelta(0, `{"reasoning":"r","content":"c"}`, "stop"), "")))
}

func FuzzResponsesStream(f *testing.F) {
	fuzzStream(f, responsesReq, newRespStream().message(0, "Hi", " there").String(),
		newRespStream().call(0, `{"a":`, `1}`).message(1, "x").String())
}

func FuzzMessagesStream(f *testing.F) {
	fuzzStream(f, messagesReq, msgStream(msgText(0, "Hello"), msgTool(1), msgText(2, "x"), msgEnd("tool_use")),
		lines(`error|{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
}

func FuzzObjectStream(f *testing.F) {
	req := *chatReq
	req.Object = true
	fuzzStream(f, &req, chatTextStream(`{"a":`, `1}`))
}

// The chat codec's shape path must decode every chunk exactly as the walk does: the same
// items, errors, codec state and output, whatever the chunks in between.
func FuzzChatShapes(f *testing.F) {
	head := `{"id":"chatcmpl-D0q8CZXN1uEzngZGkU7FuV92lnXWq","object":"chat.completion.chunk","created":1769092764,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_29330a9688","choices":[`
	chunk := func(choices, tail string) string { return head + choices + `]` + tail + `}` }
	text := func(i int, s string) string {
		return `{"index":` + string(rune('0'+i)) + `,"delta":{"content":` + s + `},"logprobs":null,"finish_reason":null}`
	}
	obf := func(s string) string { return `,"obfuscation":"` + s + `"` }
	for _, s := range []string{
		lines(chunk(`{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`, obf("x")),
			chunk(text(0, `"Hello"`), obf("ZGF")), chunk(text(0, `","`), obf("lRK2aBv")), chunk(text(0, `" World"`), obf("kJ")),
			chunk(text(0, `""`), obf("k")), chunk(text(0, `"a\"b\\c\u00e9\n"`), obf("")), chunk(text(0, `null`), obf("q")),
			chunk(text(0, `"x"`), `,"obfuscation":null`), chunk(text(0, `"y"`), `,"obfuscation":1`), chunk(text(0, `"z"`), ""),
			chunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}`, obf("abc")),
			chunk(text(0, `"after the finish"`), obf("abc")),
			chunk("", `,"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}`), "[DONE]"),
		lines(chunk(text(0, `"a"`)+","+text(1, `"b"`), ""), chunk(text(0, `"c"`)+","+text(1, `""`), ""),
			chunk(text(0, `"c"`)+","+text(1, `"d"`), ""), chunk(text(0, `""`)+","+text(1, `"d"`), ""), chunk(text(0, `"e"`)+","+text(1, `"f"`), ""),
			chunk(text(1, `"g"`), ""), chunk(text(1, `"h"`), ""), chunk(text(2, `"i"`), "")),
		lines(chunk(text(0, `"a"`), ""), `{"id":"other","choices":[`+text(0, `"b"`)+`]}`, chunk(text(0, `"c"`), ""),
			chunk(`{"index":0,"delta":{"content":"d","content":"e"},"finish_reason":null}`, ""),
			chunk(`{"index":0,"delta":{"content":"f","content":""},"finish_reason":null}`, ""),
			chunk(`{"index":0,"delta":{"content":"g","reasoning_content":"r"},"finish_reason":null}`, ""),
			chunk(`{"index":0,"delta":{"content":"h","tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}`, ""),
			chunk(`{"index":0,"delta":{"content":"h","tool_calls":[{"index":0}]},"finish_reason":null}`, ""),
			chunk(`{"index":0,"delta":{"content":"h2","tool_calls":[{"index":0}]},"finish_reason":null}`, ""),
			chunk(text(0, `"i"`), `,"error":null`), chunk(text(0, `"j"`), `,"error":{"message":"m"}`), chunk(text(0, `"k"`), `,"usage":null`),
			chunk(text(0, `"l"`), ` `), " "+chunk(text(0, `"m"`), ""), chunk(text(0, `"\ud800"`), ""), chunk(text(0, "\"\xff\""), "")),
	} {
		f.Add([]byte(s), uint8(0), false)
		f.Add([]byte(s), uint8(3), true)
	}
	f.Fuzz(func(t *testing.T, input []byte, hold uint8, object bool) {
		req := *chatReq
		req.Object = object
		shaped, walked := NewStream(&req), NewStream(&req)
		walked.noShapes = true
		engA, engB := newSim(int(hold%8)), newSim(int(hold%8))
		r := sse.NewReader(bytes.NewReader(input), 1<<16)
		var itemsA, itemsB []Item
		var outA, outB []byte
		for n := 0; ; n++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			var errA, errB error
			itemsA, errA = shaped.Decode(itemsA[:0], &ev)
			itemsB, errB = walked.Decode(itemsB[:0], &ev)
			if fmt.Sprint(errA) != fmt.Sprint(errB) || !reflect.DeepEqual(itemsA, itemsB) {
				t.Fatalf("event %d %q:\nshape path: %+v, %v\nwalk:       %+v, %v", n, ev.Data, itemsA, errA, itemsB, errB)
			}
			if errA != nil {
				return // the stream ends
			}
			var relA, relB []Release
			for _, it := range itemsA {
				relA = append(relA, engA.feed(it)...)
			}
			for _, it := range itemsB {
				relB = append(relB, engB.feed(it)...)
			}
			outA, errA = shaped.Emit(outA, &ev, relA)
			outB, errB = walked.Emit(outB, &ev, relB)
			if fmt.Sprint(errA) != fmt.Sprint(errB) || !bytes.Equal(outA, outB) {
				t.Fatalf("event %d %q emitted:\nshape path: %s, %v\nwalk:       %s, %v", n, ev.Data, outA, errA, outB, errB)
			}
			if a, b := chatState(shaped), chatState(walked); !reflect.DeepEqual(a, b) {
				t.Fatalf("event %d %q left the codec\nshape path: %+v\nwalk:       %+v", n, ev.Data, a, b)
			}
		}
	})
}

// streamState is a chat Stream's state without what only the shape path keeps.
type streamState struct {
	codec chatCodec
	cur   cur
}

func chatState(s *Stream) streamState {
	c := *s.c.(*chatCodec)
	c.s, c.shape, c.shaped, c.contentVal, c.contents, c.free, c.scratch, c.rewrite = nil, chatShape{}, 0, nil, 0, nil, nil, nil
	return streamState{codec: c, cur: s.cur}
}

// Real OpenAI chunks differ in their content and their obfuscation padding: after the
// first text chunk, each of them takes the shape path.
func TestChatTextChunksTakeTheShapePath(t *testing.T) {
	head := `{"id":"chatcmpl-D0q8CZXN1uEzngZGkU7FuV92lnXWq","object":"chat.completion.chunk","created":1769092764,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_29330a9688","choices":[{"index":0,"delta":{"content":`
	var evs []string
	for i, w := range []string{"Hello", ",", " World", "!", ` "quoted"`, " café"} {
		evs = append(evs, head+string(jsonx.Quote(w))+`},"logprobs":null,"finish_reason":null}],"obfuscation":"`+strings.Repeat("x", i*3)+`"}`)
	}
	st := NewStream(chatReq)
	var items []Item
	var text strings.Builder
	for _, ev := range parseEvents(t, lines(evs...)) {
		var err error
		if items, err = st.Decode(items[:0], &ev); err != nil || len(items) != 1 {
			t.Fatalf("decode %q: %+v, %v", ev.Data, items, err)
		}
		text.WriteString(items[0].Text)
	}
	if got := st.c.(*chatCodec).shaped; got != len(evs)-1 {
		t.Errorf("%d of %d chunks took the shape path, want all but the first", got, len(evs))
	}
	if text.String() != `Hello, World! "quoted" café` {
		t.Errorf("text %q", text.String())
	}
}
