package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"

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
