package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
)

// blockRun is what a client receives of a stream blocked at event stopAt (1-based): the
// events before it as the simulated engine releases them, the block's reason, the
// upstream events after the stop read for their usage while the Stream awaits it (at
// most readOn of them), then the block's end.
func blockRun(t *testing.T, req *Request, in string, stopAt, readOn int, reason string) (out []byte, awaited bool) {
	t.Helper()
	evs := parseEvents(t, in)
	var st *Stream
	out = pump(t, req, evs, newSim(0), stopAt, func(s *Stream, out []byte) []byte {
		st = s
		return s.AppendBlockReason(out, reason)
	})
	if st == nil {
		t.Fatalf("the stream never reached event %d", stopAt)
	}
	awaited = st.AwaitsUsage()
	for i := stopAt; i < len(evs) && i < stopAt+readOn && st.AwaitsUsage(); i++ {
		if _, err := st.Decode(nil, &evs[i]); err != nil {
			t.Fatalf("decoding event %d after the block: %v", i+1, err)
		}
	}
	return st.AppendBlockEnd(out), awaited
}

// lastData returns the data of the last event of out that is not [DONE].
func lastData(t *testing.T, out []byte) []byte {
	t.Helper()
	evs := parseEvents(t, string(out))
	for i := len(evs) - 1; i >= 0; i-- {
		if string(evs[i].Data) != "[DONE]" {
			return evs[i].Data
		}
	}
	t.Fatal("no event")
	return nil
}

const reason = "The answer was stopped."

func TestBlockSeparatesTheReasonFromReleasedText(t *testing.T) {
	chatReqNoUsage := *chatReq
	chatReqNoUsage.IncludeUsage = false
	for _, tc := range []struct {
		name   string
		req    *Request
		in     string
		stopAt int
		want   string
	}{
		{"chat: after released text", &chatReqNoUsage, chatTextStream("while the model keep", "s going"), 3, "while the model keep\n\n" + reason},
		{"chat: before any text", &chatReqNoUsage, chatTextStream("while the model keep"), 1, reason},
		{"messages: in the open text block", messagesReq, msgStream(msgText(0, "while the model keep", "s going")), 5, "while the model keep\n\n" + reason},
		{"messages: before any text", messagesReq, msgStream(msgText(0, "while the model keep")), 3, reason},
		{"messages: in a new block after a text block", messagesReq, msgStream(msgText(0, "Checking."), msgTool(1), msgEnd("tool_use")), 11, "Checking.\n\n" + reason},
		{"messages: text queued behind a withheld call was not received", messagesReq, msgStream(msgTool(0), msgText(1, "Done.")), 10, reason},
		{"responses: in the open text part", responsesReq, newRespStream().message(0, "while the model keep", "s going").String(), 6, "while the model keep\n\n" + reason},
		{"responses: in a new item after a text item", responsesReq, newRespStream().message(0, "Checking.").call(1, `{}`).String(), 13, "Checking.\n\n" + reason},
		{"responses: before any text", responsesReq, newRespStream().call(0, `{}`).String(), 7, reason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := blockRun(t, tc.req, tc.in, tc.stopAt, 0, reason)
			v := clientView(t, tc.req, out)
			if got := v.textOf(content.Text); got != tc.want {
				t.Errorf("client text %q, want %q\n%s", got, tc.want, out)
			}
			if len(v.finish) != 1 || v.done != 1 {
				t.Errorf("finish %v, terminators %d", v.finish, v.done)
			}
		})
	}
}

func TestChatBlockSendsItsFinishInAChunkOfItsOwn(t *testing.T) {
	out, _ := blockRun(t, chatReq, chatTextStream("Hello"), 3, 0, reason)
	type chunk struct {
		Choices []struct {
			Delta        map[string]any `json:"delta"`
			FinishReason *string        `json:"finish_reason"`
		} `json:"choices"`
	}
	var chunks []chunk
	for _, ev := range parseEvents(t, string(out)) {
		if string(ev.Data) == "[DONE]" {
			continue
		}
		var c chunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	last := chunks[len(chunks)-1].Choices
	reasonChunk := chunks[len(chunks)-2].Choices
	if len(last) != 1 || last[0].FinishReason == nil || *last[0].FinishReason != FinishContentFilter || len(last[0].Delta) != 0 {
		t.Errorf("last chunk %+v, want an empty delta with finish_reason content_filter\n%s", last, out)
	}
	if len(reasonChunk) != 1 || reasonChunk[0].FinishReason != nil || reasonChunk[0].Delta["content"] != "\n\n"+reason {
		t.Errorf("reason chunk %+v\n%s", reasonChunk, out)
	}
}

func TestBlockCarriesTheUpstreamsUsage(t *testing.T) {
	const chatUsage = `"prompt_tokens":19,"completion_tokens":10`
	chatTool := lines(
		chatChunkJSON(chatDelta(0, `{"role":"assistant","content":"Checking."}`, ""), ""),
		chatChunkJSON(chatDelta(0, `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"shell","arguments":"{}"}}]}`, ""), ""),
		chatChunkJSON(chatDelta(0, `{}`, "tool_calls"), ""),
		chatChunkJSON("", `{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}`),
		"[DONE]")
	for _, tc := range []struct {
		name   string
		req    *Request
		in     string
		stopAt int
		// readOn: upstream events the caller reads after the block.
		readOn  int
		awaits  bool
		want    string // in the event that carries the usage
		notWant string
	}{
		{name: "chat: the usage chunk that follows the finish is forwarded after the block", req: chatReq, in: chatTool, stopAt: 3, readOn: 5,
			awaits: true, want: `"choices":[],"usage":{` + chatUsage},
		{name: "chat: without it, the block ends without a usage chunk", req: chatReq, in: chatTool, stopAt: 3, readOn: 0,
			awaits: true, notWant: `"usage":{`},
		{name: "chat: without include_usage nothing is awaited", req: &Request{Family: FamilyChat, Stream: true, N: 1}, in: chatTool, stopAt: 3, readOn: 5,
			notWant: `"usage":{`},
		{name: "messages: a block at message_delta carries its usage", req: messagesReq,
			in: msgStream(msgText(0, "Hi"), msgEnd("end_turn")), stopAt: 7, readOn: 0,
			want: `"usage":{"output_tokens":15}`},
		{name: "messages: a block before message_delta takes the usage that follows", req: messagesReq,
			in: msgStream(msgText(0, "Checking."), msgTool(1), msgEnd("tool_use")), stopAt: 10, readOn: 5,
			awaits: true, want: `"usage":{"output_tokens":15}`},
		{name: "messages: without it, the last output token count of message_start", req: messagesReq,
			in: msgStream(msgText(0, "Checking."), msgTool(1), msgEnd("tool_use")), stopAt: 10, readOn: 0,
			awaits: true, want: `"usage":{"output_tokens":1}`},
		{name: "messages: the refusal's stop_details explain it with the reason", req: messagesReq,
			in: msgStream(msgText(0, "Hi"), msgEnd("end_turn")), stopAt: 7, readOn: 0,
			want: `"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":null,"explanation":"` + reason + `"}`},
		{name: "responses: a block at response.completed carries its usage", req: responsesReq,
			in: newRespStream().message(0, "Hi").String(), stopAt: 9, readOn: 0,
			want: `"usage":{"input_tokens":37,`},
		{name: "responses: a block before the end takes the usage of the final event", req: responsesReq,
			in: newRespStream().message(0, "Checking.").call(1, `{}`).String(), stopAt: 12, readOn: 5,
			awaits: true, want: `"usage":{"input_tokens":37,`},
		{name: "responses: without it, usage stays null", req: responsesReq,
			in: newRespStream().message(0, "Checking.").call(1, `{}`).String(), stopAt: 12, readOn: 0,
			awaits: true, want: `"usage":null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, awaited := blockRun(t, tc.req, tc.in, tc.stopAt, tc.readOn, reason)
			if awaited != tc.awaits {
				t.Errorf("AwaitsUsage %v after the reason, want %v", awaited, tc.awaits)
			}
			end := string(lastData(t, out))
			if tc.req.Family == FamilyMessages {
				// message_stop follows the message_delta that carries the usage.
				evs := parseEvents(t, string(out))
				end = string(evs[len(evs)-2].Data)
			}
			if tc.want != "" && !strings.Contains(end, tc.want) {
				t.Errorf("the ending %s\nlacks %s", end, tc.want)
			}
			if tc.notWant != "" && strings.Contains(string(out), tc.notWant) {
				t.Errorf("the stream has %s:\n%s", tc.notWant, out)
			}
			if strings.Count(string(out), `"usage":{`+chatUsage) > 1 {
				t.Errorf("usage sent twice:\n%s", out)
			}
			v := clientView(t, tc.req, out)
			if v.done != 1 {
				t.Errorf("%d terminators:\n%s", v.done, out)
			}
		})
	}
}

// TestBlockSequenceNumbersIncrease: the Responses events a block writes number on from
// the last the client received, even when the upstream's later events were read for
// their usage.
func TestBlockSequenceNumbersIncrease(t *testing.T) {
	out, _ := blockRun(t, responsesReq, newRespStream().message(0, "Checking.").call(1, `{}`).String(), 12, 5, reason)
	last := int64(-1)
	for _, ev := range parseEvents(t, string(out)) {
		var e struct {
			Seq int64 `json:"sequence_number"`
		}
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatal(err)
		}
		if e.Seq <= last {
			t.Fatalf("sequence number %d after %d:\n%s", e.Seq, last, out)
		}
		last = e.Seq
	}
}
