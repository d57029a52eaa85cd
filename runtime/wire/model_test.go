package wire

import (
	"strings"
	"testing"
)

// The model that answered is read from what each codec keeps of a stream anyway: chat
// chunks' model, message_start's, response.created's and Gemini's modelVersion.
func TestStreamModel(t *testing.T) {
	for _, c := range []struct {
		name   string
		req    *Request
		stream string
		want   string
	}{
		{"chat", chatReq, chatTextStream("Hi", " there."), "gpt-4o-2024-08-06"},
		{"messages", messagesReq, msgStream(msgText(0, "Hi"), msgEnd("end_turn")), "claude-sonnet-4-5-20250929"},
		{"responses", responsesReq, lines(newRespStream().message(0, "Hi").events...), "gpt-4.1-2025-04-14"},
		{"gemini", geminiReq, lines(gemChunk(`{"text":"Hi"}`, ""), gemChunk(`{"text":"!"}`, "STOP")), "gemini-2.5-flash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := NewStream(c.req)
			if got := st.Model(); got != "" {
				t.Fatalf("before any event: %q", got)
			}
			evs := parseEvents(t, c.stream)
			var items []Item
			for i := range evs {
				var err error
				if items, err = st.Decode(items[:0], &evs[i]); err != nil {
					t.Fatal(err)
				}
				if got := st.Model(); got != c.want {
					t.Fatalf("after event %d: %q, want %q", i+1, got, c.want)
				}
			}
		})
	}
	var none *Stream
	if none.Model() != "" {
		t.Fatal("a nil stream names a model")
	}
}

// A model member that is not a short string names no model.
func TestModelName(t *testing.T) {
	for raw, want := range map[string]string{
		`"gpt-4o"`:         "gpt-4o",
		`"models\/gemini"`: "models/gemini",
		`null`:             "",
		`12`:               "",
		`""`:               "",
		`{"a":1}`:          "",
		`"` + strings.Repeat("m", maxModelName+1) + `"`: "",
	} {
		if got := ModelName([]byte(raw)); got != want {
			t.Errorf("ModelName(%.40s) = %q, want %q", raw, got, want)
		}
	}
	r, err := DecodeResponse(FamilyGemini, nil, []byte(`{"candidates":[{"content":{"parts":[{"text":"Hi"}]},"finishReason":"STOP"}],"modelVersion":"gemini-2.5-flash-001"}`))
	if err != nil || r.Model != "gemini-2.5-flash-001" {
		t.Fatalf("Gemini response: %q %v", r.Model, err)
	}
}
