package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

const respObj = `{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"%s","error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4.1-2025-04-14","output":[%s],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":%s,"user":null,"metadata":{}}`

const msgItemID = "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654"

// respStream builds a captured-shaped Responses stream: created, in_progress, the given
// item events, completed with the given output items.
type respStream struct {
	seq    int
	events []string
	output []string
}

func (r *respStream) add(typ, body string) {
	r.events = append(r.events, fmt.Sprintf(`%s|{"type":"%s","sequence_number":%d,%s}`, typ, typ, r.seq, body))
	r.seq++
}

func newRespStream() *respStream {
	r := &respStream{}
	r.add("response.created", `"response":`+fmt.Sprintf(respObj, "in_progress", "", "null"))
	r.add("response.in_progress", `"response":`+fmt.Sprintf(respObj, "in_progress", "", "null"))
	return r
}

func (r *respStream) message(out int, parts ...string) *respStream {
	ref := fmt.Sprintf(`"item_id":"%s","output_index":%d,"content_index":0`, msgItemID, out)
	r.add("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":"%s","type":"message","status":"in_progress","content":[],"role":"assistant"}`, out, msgItemID))
	r.add("response.content_part.added", ref+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
	for _, p := range parts {
		r.add("response.output_text.delta", ref+`,"delta":`+string(jsonx.Quote(p))+`,"logprobs":[],"obfuscation":"x1"`)
	}
	text := string(jsonx.Quote(strings.Join(parts, "")))
	part := `{"type":"output_text","annotations":[],"logprobs":[],"text":` + text + `}`
	item := fmt.Sprintf(`{"id":"%s","type":"message","status":"completed","content":[%s],"role":"assistant"}`, msgItemID, part)
	r.add("response.output_text.done", ref+`,"text":`+text+`,"logprobs":[]`)
	r.add("response.content_part.done", ref+`,"part":`+part)
	r.add("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":%s`, out, item))
	r.output = append(r.output, item)
	return r
}

func (r *respStream) call(out int, args ...string) *respStream {
	r.add("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":{"id":"fc_12345xyz","type":"function_call","status":"in_progress","arguments":"","call_id":"call_12345xyz","name":"get_weather"}`, out))
	for _, a := range args {
		r.add("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_12345xyz","output_index":%d,"delta":%s`, out, jsonx.Quote(a)))
	}
	full := string(jsonx.Quote(strings.Join(args, "")))
	r.add("response.function_call_arguments.done", fmt.Sprintf(`"item_id":"fc_12345xyz","output_index":%d,"arguments":%s`, out, full))
	item := `{"id":"fc_12345xyz","type":"function_call","status":"completed","arguments":` + full + `,"call_id":"call_12345xyz","name":"get_weather"}`
	r.add("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":%s`, out, item))
	r.output = append(r.output, item)
	return r
}

func (r *respStream) String() string {
	r.add("response.completed", `"response":`+fmt.Sprintf(respObj, "completed", strings.Join(r.output, ","),
		`{"input_tokens":37,"input_tokens_details":{"cached_tokens":0},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":48}`))
	return lines(r.events...)
}

var responsesReq = &Request{Family: FamilyResponses, Model: "gpt-4.1", Stream: true, N: 1, IncludeUsage: true}

func TestResponsesStreamDecode(t *testing.T) {
	t.Run("a message and a function call decode into a text channel and a tool call", func(t *testing.T) {
		st := NewStream(responsesReq)
		var text, args, name string
		var kinds []string
		for _, ev := range parseEvents(t, newRespStream().message(0, "Hi", " there").call(1, `{"location":`, `"Paris"}`).String()) {
			items, err := st.Decode(nil, &ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if it.Kind != ItemPass {
					kinds = append(kinds, it.Kind.String())
				}
				switch {
				case it.Kind == ItemDelta && it.Channel.Kind == content.Text:
					text += it.Text
				case it.Kind == ItemDelta:
					args += it.Text
				case it.Kind == ItemToolCallStart:
					name = it.Name
				}
			}
		}
		if text != "Hi there" || args != `{"location":"Paris"}` || name != "get_weather" {
			t.Fatalf("text %q args %q name %q", text, args, name)
		}
		want := "delta delta channelEnd toolCallStart delta delta channelEnd usage finish terminator"
		if strings.Join(kinds, " ") != want {
			t.Fatalf("items %s\nwant  %s", strings.Join(kinds, " "), want)
		}
	})
	t.Run("reasoning summary deltas are the reasoning channel", func(t *testing.T) {
		st := NewStream(responsesReq)
		ev := parseEvents(t, lines(`response.reasoning_summary_text.delta|{"type":"response.reasoning_summary_text.delta","sequence_number":5,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Thinking"}`))[0]
		items, err := st.Decode(nil, &ev)
		if err != nil || items[0].Channel.Kind != content.Reasoning || items[0].Text != "Thinking" {
			t.Fatalf("%+v %v", items, err)
		}
	})
}

func TestResponsesStreamEmit(t *testing.T) {
	t.Run("allowed traffic is forwarded byte for byte", func(t *testing.T) {
		in := newRespStream().message(0, "Hi", " there").String()
		if out := pump(t, responsesReq, parseEvents(t, in), newSim(0), 0, nil); string(out) != in {
			t.Fatalf("got\n%s\nwant\n%s", out, in)
		}
	})
	t.Run("redacted text is re-sent and every done event repeats the redacted text", func(t *testing.T) {
		eng := newSim(-1)
		eng.transform = func(s string) string { return strings.ReplaceAll(s, "4111-1111", "[REDACTED:card]") }
		out := pump(t, responsesReq, parseEvents(t, newRespStream().message(0, "card 4111", "-1111 ok").String()), eng, 0, nil)
		if strings.Contains(string(out), "4111") {
			t.Fatalf("card leaked:\n%s", out)
		}
		v := clientView(t, responsesReq, out)
		if v.textOf(content.Text) != "card [REDACTED:card] ok" {
			t.Fatalf("client text %q", v.textOf(content.Text))
		}
		last := parseEvents(t, string(out))
		var completed struct {
			Response struct {
				Output []struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"output"`
			} `json:"response"`
		}
		if err := json.Unmarshal(last[len(last)-1].Data, &completed); err != nil || completed.Response.Output[0].Content[0].Text != "card [REDACTED:card] ok" {
			t.Fatalf("completed %+v %v", completed, err)
		}
	})
	t.Run("a function call is withheld and sent complete with its item events", func(t *testing.T) {
		in := newRespStream().call(0, `{"location":`, `"Paris"}`).String()
		evs := parseEvents(t, in)
		out := pump(t, responsesReq, evs[:len(evs)-1], newSim(0), 0, nil)
		if strings.Contains(string(out), "fc_12345xyz") {
			t.Fatalf("call sent before release:\n%s", out)
		}
		out = pump(t, responsesReq, evs, newSim(0), 0, nil)
		v := clientView(t, responsesReq, out)
		call := content.Channel{Kind: content.ToolCall}
		if v.calls[call] != `{"location":"Paris"}` || v.names[call] != "get_weather" || v.done != 1 {
			t.Fatalf("client %+v\n%s", v, out)
		}
		for _, typ := range []string{"response.output_item.added", "response.function_call_arguments.done", "response.output_item.done"} {
			if !strings.Contains(string(out), "event: "+typ+"\n") {
				t.Fatalf("no %s event:\n%s", typ, out)
			}
		}
	})
	t.Run("a stream block closes the open text part and ends with response.incomplete for content_filter", func(t *testing.T) {
		in := newRespStream().message(0, "Hi", " bad").String()
		out := pump(t, responsesReq, parseEvents(t, in), newSim(0), 6,
			func(st *Stream, out []byte) []byte { return st.AppendBlock(out, "Not allowed.") })
		v := clientView(t, responsesReq, out)
		if v.textOf(content.Text) != "Hi\n\nNot allowed." || len(v.finish) != 1 || v.finish[0] != "content_filter" || v.done != 1 {
			t.Fatalf("client %+v\n%s", v, out)
		}
		evs := parseEvents(t, string(out))
		var inc struct {
			Response struct {
				Status string `json:"status"`
				ID     string `json:"id"`
				Output []struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"output"`
			} `json:"response"`
		}
		if err := json.Unmarshal(evs[len(evs)-1].Data, &inc); err != nil || inc.Response.Status != "incomplete" ||
			!strings.HasPrefix(inc.Response.ID, "resp_67c9") || inc.Response.Output[0].Content[0].Text != "Hi\n\nNot allowed." {
			t.Fatalf("response.incomplete %+v %v", inc, err)
		}
	})
	t.Run("a stream block before any output adds a message item with the reason", func(t *testing.T) {
		in := newRespStream().call(0, `{}`).String()
		out := pump(t, responsesReq, parseEvents(t, in), newSim(0), 7,
			func(st *Stream, out []byte) []byte { return st.AppendBlock(out, "No tools.") })
		if strings.Contains(string(out), "fc_12345xyz") {
			t.Fatalf("call leaked:\n%s", out)
		}
		v := clientView(t, responsesReq, out)
		if v.textOf(content.Text) != "No tools." || v.finish[0] != "content_filter" {
			t.Fatalf("client %+v\n%s", v, out)
		}
	})
	t.Run("a fail-closed failure is an error event with an error object", func(t *testing.T) {
		out := NewStream(responsesReq).AppendFailure(nil, "team-a/pii")
		ev := parseEvents(t, string(out))[0]
		var e struct {
			Type  string `json:"type"`
			Code  string `json:"code"`
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if string(ev.Type) != "error" || json.Unmarshal(ev.Data, &e) != nil || e.Type != "error" || e.Code != CodePolicyEvaluationFailed || e.Error.Code != CodePolicyEvaluationFailed {
			t.Fatalf("got %s", out)
		}
	})
}
