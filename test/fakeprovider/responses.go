package fakeprovider

import (
	"encoding/json"
	"strconv"
)

// Responses API.

type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int               `json:"created_at"`
	Status             string            `json:"status"`
	Error              json.RawMessage   `json:"error"`
	IncompleteDetails  json.RawMessage   `json:"incomplete_details"`
	Instructions       json.RawMessage   `json:"instructions"`
	MaxOutputTokens    json.RawMessage   `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []json.RawMessage `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID json.RawMessage   `json:"previous_response_id"`
	Store              bool              `json:"store"`
	Temperature        float64           `json:"temperature"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               float64           `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              json.RawMessage   `json:"usage"`
	Metadata           map[string]string `json:"metadata"`
}

var jsonNull = json.RawMessage("null")

// response returns the response object with a status and output; a final status has
// usage.
func (g *gen) response(status string, output []json.RawMessage) responseObject {
	r := responseObject{ID: g.id("resp_fake_"), Object: "response", CreatedAt: created, Status: status,
		Error: jsonNull, IncompleteDetails: jsonNull, Instructions: jsonNull, MaxOutputTokens: jsonNull,
		Model: g.model(), Output: output, ParallelToolCalls: true, PreviousResponseID: jsonNull, Store: true,
		Temperature: 1, Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: "auto",
		Tools: []json.RawMessage{}, TopP: 1, Truncation: "disabled", Usage: jsonNull, Metadata: map[string]string{}}
	if r.Output == nil {
		r.Output = []json.RawMessage{}
	}
	if status != "in_progress" {
		u := g.usage()
		r.Usage = mustJSON(map[string]int{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens})
	}
	if status == "incomplete" {
		r.IncompleteDetails = mustJSON(map[string]string{"reason": g.finishReason()})
	}
	return r
}

// finishReason returns the status of a Responses response ("completed", or the
// incomplete reason the script's finish names).
func (g *gen) finishReason() string {
	c := g.script.choices(1)[0]
	if c.Finish == "" || c.Finish == "completed" {
		return "completed"
	}
	return c.Finish
}

func (g *gen) finalStatus() string {
	if g.finishReason() == "completed" {
		return "completed"
	}
	return "incomplete"
}

// outputItem returns the completed output item of a segment at output index k.
func (g *gen) outputItem(s *segment, k int) json.RawMessage {
	id := g.itemID(s, k)
	switch s.kind {
	case ReasoningDelta:
		return mustJSON(map[string]any{"id": id, "type": "reasoning", "summary": []any{map[string]string{"type": "summary_text", "text": s.text()}}})
	case ToolCallStart:
		return mustJSON(functionCall{ID: id, Type: "function_call", Status: "completed", Arguments: s.text(), CallID: s.id, Name: s.name})
	}
	return mustJSON(messageItem{ID: id, Type: "message", Status: "completed", Role: "assistant",
		Content: []json.RawMessage{outputText(s.text())}})
}

type functionCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type messageItem struct {
	ID      string            `json:"id"`
	Type    string            `json:"type"`
	Status  string            `json:"status"`
	Content []json.RawMessage `json:"content"`
	Role    string            `json:"role"`
}

func outputText(text string) json.RawMessage {
	return mustJSON(struct {
		Type        string            `json:"type"`
		Annotations []json.RawMessage `json:"annotations"`
		Logprobs    []json.RawMessage `json:"logprobs"`
		Text        string            `json:"text"`
	}{"output_text", []json.RawMessage{}, []json.RawMessage{}, text})
}

func (g *gen) itemID(s *segment, k int) string {
	prefix := "msg_fake_"
	switch s.kind {
	case ReasoningDelta:
		prefix = "rs_fake_"
	case ToolCallStart:
		prefix = "fc_fake_"
	}
	return prefix + strconv.Itoa(g.seq) + "_" + strconv.Itoa(k)
}

func (g *gen) responseOutput() []json.RawMessage {
	c := g.script.choices(1)[0]
	segs := segments(&c, "call_fake_")
	out := make([]json.RawMessage, 0, len(segs))
	for k := range segs {
		out = append(out, g.outputItem(&segs[k], k))
	}
	return out
}

// rsEvent formats a Responses stream event with its type and sequence number first.
func (g *gen) rsEvent(typ string, fields map[string]any) []byte {
	b := []byte(`{"type":` + strconv.Quote(typ) + `,"sequence_number":` + strconv.Itoa(g.events))
	for _, k := range []string{"response", "output_index", "item_id", "content_index", "summary_index", "item", "part", "delta", "text", "arguments", "logprobs"} {
		if v, ok := fields[k]; ok {
			b = append(b, ',')
			b = append(b, strconv.Quote(k)...)
			b = append(b, ':')
			b = append(b, mustJSON(v)...)
		}
	}
	return sseEvent(typ, append(b, '}'))
}

// responsesStream sends created, in_progress, the events of each output item, and the
// final response event.
func (g *gen) responsesStream() {
	if !g.send(g.script.Delay, g.rsEvent("response.created", map[string]any{"response": g.response("in_progress", nil)})) ||
		!g.send(g.script.Delay, g.rsEvent("response.in_progress", map[string]any{"response": g.response("in_progress", nil)})) {
		return
	}
	c := g.script.choices(1)[0]
	segs := segments(&c, "call_fake_")
	var output []json.RawMessage
	for k := range segs {
		if !g.responsesItem(&segs[k], k) {
			return
		}
		output = append(output, g.outputItem(&segs[k], k))
	}
	status := g.finalStatus()
	g.send(g.script.Delay, g.rsEvent("response."+status, map[string]any{"response": g.response(status, output)}))
}

// responsesItem sends the events of one output item; ok is false when the stream ended.
func (g *gen) responsesItem(s *segment, k int) bool {
	id := g.itemID(s, k)
	var added any
	var deltaType, doneType, partAdded, partDone, partKey string
	var part func(string) any
	switch s.kind {
	case TextDelta:
		added = messageItem{ID: id, Type: "message", Status: "in_progress", Content: []json.RawMessage{}, Role: "assistant"}
		deltaType, doneType = "response.output_text.delta", "response.output_text.done"
		partAdded, partDone, partKey = "response.content_part.added", "response.content_part.done", "content_index"
		part = func(t string) any { return outputText(t) }
	case ReasoningDelta:
		added = map[string]any{"id": id, "type": "reasoning", "summary": []any{}}
		deltaType, doneType = "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done"
		partAdded, partDone, partKey = "response.reasoning_summary_part.added", "response.reasoning_summary_part.done", "summary_index"
		part = func(t string) any { return map[string]string{"type": "summary_text", "text": t} }
	case ToolCallStart:
		added = functionCall{ID: id, Type: "function_call", Status: "in_progress", CallID: s.id, Name: s.name}
		deltaType, doneType = "response.function_call_arguments.delta", "response.function_call_arguments.done"
	}
	if !g.send(g.script.Delay, g.rsEvent("response.output_item.added", map[string]any{"output_index": k, "item": added})) {
		return false
	}
	ref := func(m map[string]any) map[string]any {
		m["item_id"], m["output_index"] = id, k
		if partKey != "" {
			m[partKey] = 0
		}
		return m
	}
	if partAdded != "" && !g.send(g.script.Delay, g.rsEvent(partAdded, ref(map[string]any{"part": part("")}))) {
		return false
	}
	for i := range s.deltas {
		d := &s.deltas[i]
		m := ref(map[string]any{"delta": d.Text})
		if s.kind == TextDelta {
			m["logprobs"] = []any{}
		}
		if !g.send(g.delayOf(d), g.rsEvent(deltaType, m)) {
			return false
		}
	}
	done := ref(map[string]any{"text": s.text()})
	if s.kind == ToolCallStart {
		done = ref(map[string]any{"arguments": s.text()})
	} else if s.kind == TextDelta {
		done["logprobs"] = []any{}
	}
	if !g.send(g.script.Delay, g.rsEvent(doneType, done)) {
		return false
	}
	if partDone != "" && !g.send(g.script.Delay, g.rsEvent(partDone, ref(map[string]any{"part": part(s.text())}))) {
		return false
	}
	return g.send(g.script.Delay, g.rsEvent("response.output_item.done", map[string]any{"output_index": k, "item": g.outputItem(s, k)}))
}
