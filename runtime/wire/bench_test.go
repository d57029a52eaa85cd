package wire

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// benchStream measures decoding and emitting one event of a 200-delta stream with every
// delta released as it came (the allowed, no hold-back path).
func benchStream(b *testing.B, req *Request, in string) {
	evs := parseEvents(b, in)
	items := make([]Item, 0, 8)
	out := make([]byte, 0, 1<<16)
	rel := make([]Release, 0, 8)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st := NewStream(req)
		out = out[:0]
		for i := range evs {
			ev := &evs[i]
			items, _ = st.Decode(items[:0], ev)
			rel = rel[:0]
			for _, it := range items {
				if it.Kind == ItemDelta {
					rel = append(rel, Release{Channel: it.Channel, Text: []byte(it.Text)})
				}
			}
			out, _ = st.Emit(out, ev, rel)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

func deltas(n int) []string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "word "
	}
	return parts
}

func BenchmarkChatStream(b *testing.B) { benchStream(b, chatReq, chatTextStream(deltas(200)...)) }

func BenchmarkResponsesStream(b *testing.B) {
	benchStream(b, responsesReq, newRespStream().message(0, deltas(200)...).String())
}

func BenchmarkMessagesStream(b *testing.B) {
	benchStream(b, messagesReq, msgStream(msgText(0, deltas(200)...), msgEnd("end_turn")))
}

// BenchmarkParseChatRequest parses a request with a 2 KB prompt, its text plain and, as
// most prompts are, with escapes (a newline every line).
func BenchmarkParseChatRequest(b *testing.B) {
	for _, prompt := range []struct{ name, line string }{{"plain", "lorem ipsum "}, {"newlines", "lorem ipsum\\n"}} {
		body := []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"` +
			strings.Repeat(prompt.line, 170) + `"}],"stream":true}`)
		b.Run(prompt.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseRequest(FamilyChat, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var _ = sse.KindEvent

// BenchmarkChatDecode measures Decode alone on a chunk as OpenAI sends it: by its shape (the
// chunk before had the same bytes but for the content and the obfuscation padding), and by
// the walk that validates and reads it.
func BenchmarkChatDecode(b *testing.B) {
	evs := [2]sse.Event{}
	for i, pad := range []string{"ZGF", "lRK2aBv"} {
		evs[i] = sse.Event{HasData: true, Data: []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" garden, and a rota for watering"},"logprobs":null,"finish_reason":null}],"obfuscation":"` + pad + `"}`)}
	}
	for _, walk := range []bool{false, true} {
		name := map[bool]string{false: "shape", true: "walk"}[walk]
		b.Run(name, func(b *testing.B) {
			st := NewStream(chatReq)
			st.noShapes = walk
			items := make([]Item, 0, 8)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				items, _ = st.Decode(items[:0], &evs[i&1])
				i++
			}
		})
	}
}
