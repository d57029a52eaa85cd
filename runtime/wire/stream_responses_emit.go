package wire

import (
	"bytes"
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// What the Responses codec sends: events as they are or rewritten to repeat what the
// client received, deltas and tool calls built on the stream's template, and the block
// and failure endings.

func (c *responsesCodec) rest(dst []byte, ev *sse.Event, stripped bool) ([]byte, error) {
	e := &c.ev
	if c.s.cur.withhold || stripped {
		// Tool call content goes out complete when released; a delta's content went out
		// as the releases.
		return dst, nil
	}
	out := e.outputIndex
	var o *jsonx.Object
	var err error
	switch e.typ {
	case rsItemAdded:
		c.nextOut = max(c.nextOut, out+1)
	case rsPartAdded:
		if p := c.parts[partKey{out, subContent, e.contentIndex}]; p != nil {
			c.openPart = p
		}
	case rsTextDone, rsSummaryDone, rsReasoningDone:
		if c.openPart != nil && c.openPart.out == out && c.openPart.part == e.contentIndex && e.typ == rsTextDone {
			c.openPart = nil
		}
		k := partKey{out, subContent, e.contentIndex}
		switch e.typ {
		case rsSummaryDone:
			k.sub, k.part = subSummary, e.summaryIndex
		case rsReasoningDone:
			k.sub = subReasoning
		}
		o, err = c.rewriteField(ev.Data, "text", c.parts[k])
	case rsPartDone, rsSummaryPartDone:
		k := partKey{out, subContent, e.contentIndex}
		switch {
		case e.typ == rsSummaryPartDone:
			k.sub, k.part = subSummary, e.summaryIndex
		case string(e.partType) == "reasoning_text":
			k.sub = subReasoning
		}
		o, err = c.rewritePart(ev.Data, c.parts[k])
	case rsItemDone:
		item, changed := c.rewriteItem(e.item, out)
		c.done = append(c.done, bytes.Clone(item))
		if changed {
			o, err = jsonx.ParseObject(ev.Data)
			if o != nil {
				o.Set("item", item)
			}
		}
	case rsFinal:
		o, err = c.rewriteResponse(ev.Data)
	}
	if err != nil {
		return dst, malformed(FamilyResponses, "event: %v", err)
	}
	if o != nil {
		return sse.AppendJSONEvent(dst, string(e.name), o.Bytes()), nil
	}
	return append(dst, ev.Raw...), nil
}

// rewriteField returns the event with its text field set to what the client received
// on p, or nil when that is what it says already. Done events and the final response
// repeat content; they are checked on every stream, so that text the upstream never
// streamed as deltas (and the engine therefore never judged) is not handed to the client
// there: a part the stream never opened (p nil) repeats nothing.
func (c *responsesCodec) rewriteField(data []byte, field string, p *respPart) (*jsonx.Object, error) {
	o, err := jsonx.ParseObject(data)
	if err != nil {
		return nil, err
	}
	var vis []byte
	if p != nil {
		vis = c.s.visibleText(p.ch)
	}
	if s, _ := jsonx.RawString(o.Get(field)); s == string(vis) {
		return nil, nil
	}
	o.Set(field, jsonx.AppendString(nil, vis))
	return o, nil
}

// rewritePart rewrites the "part" of a part-done event.
func (c *responsesCodec) rewritePart(data []byte, p *respPart) (*jsonx.Object, error) {
	o, err := jsonx.ParseObject(data)
	if err != nil || o.Get("part") == nil {
		return nil, err
	}
	part, err := c.rewriteField(o.Get("part"), "text", p)
	if part == nil || err != nil {
		return nil, err
	}
	o.Set("part", part.Bytes())
	return o, nil
}

// rewriteItem returns the output item at output index out with the text of each of its
// parts set to what the client received, and whether anything changed.
func (c *responsesCodec) rewriteItem(raw json.RawMessage, out int) (json.RawMessage, bool) {
	o, err := jsonx.ParseObject(raw)
	if err != nil {
		return raw, false
	}
	if typ := o.Str("type"); typ == "function_call" || typ == "custom_tool_call" {
		return c.rewriteCall(o, raw)
	}
	changed := false
	for _, f := range []struct {
		key string
		sub byte
	}{{"content", subContent}, {"summary", subSummary}, {"content", subReasoning}} {
		if f.sub == subContent && o.Str("type") != "message" || f.sub != subContent && o.Str("type") != "reasoning" {
			continue
		}
		parts, err := o.Arr(f.key)
		if err != nil {
			continue
		}
		partChanged := false
		for i, pr := range parts {
			p := c.parts[partKey{out, f.sub, i}]
			if np, _ := c.rewriteField(pr, "text", p); np != nil {
				parts[i], partChanged = np.Bytes(), true
			}
		}
		if partChanged {
			o.Set(f.key, jsonx.MarshalArray(parts))
			changed = true
		}
	}
	if !changed {
		return raw, false
	}
	return o.Bytes(), true
}

// rewriteCall returns a tool call item of a final response with the arguments the client
// received when its call was released (appendToolCall), which differ from the upstream's
// when the guard restored pseudonymized values in them; a call never released keeps its
// item as it is.
func (c *responsesCodec) rewriteCall(o *jsonx.Object, raw json.RawMessage) (json.RawMessage, bool) {
	argKey := "arguments"
	if o.Str("type") == "custom_tool_call" {
		argKey = "input"
	}
	id := o.Str("id")
	for _, d := range c.done {
		sent, err := jsonx.ParseObject(d)
		if err != nil || id == "" || sent.Str("id") != id {
			continue
		}
		if args := sent.Get(argKey); args != nil && !bytes.Equal(args, o.Get(argKey)) {
			o.Set(argKey, args)
			return o.Bytes(), true
		}
		return raw, false
	}
	return raw, false
}

// rewriteResponse rewrites the output of a final response event.
func (c *responsesCodec) rewriteResponse(data []byte) (*jsonx.Object, error) {
	o, err := jsonx.ParseObject(data)
	if err != nil {
		return nil, err
	}
	r, err := o.Obj("response")
	if err != nil {
		return nil, err
	}
	items, err := r.Arr("output")
	if err != nil {
		return nil, err
	}
	changed := false
	for i, it := range items {
		if n, ch := c.rewriteItem(it, i); ch {
			items[i], changed = n, true
		}
	}
	if !changed {
		return nil, nil
	}
	r.Set("output", jsonx.MarshalArray(items))
	o.Set("response", r.Bytes())
	return o, nil
}

// appendEventHead appends "event: typ", the data line's start and the sequence number.
func (c *responsesCodec) appendEventHead(dst []byte, typ string, seq int64) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	return jsonx.AppendInt(dst, int(seq))
}

// appendItemRef appends ,"item_id":…,"output_index":….
func appendItemRef(dst []byte, itemID string, out int) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = jsonx.AppendString(dst, itemID)
	dst = append(dst, `,"output_index":`...)
	return jsonx.AppendInt(dst, out)
}

func (c *responsesCodec) appendDelta(dst []byte, ch content.Channel, text []byte) []byte {
	p := c.byChannel[ch]
	if p == nil {
		return dst
	}
	return c.appendPartDelta(dst, p, text, c.seq)
}

func (c *responsesCodec) appendPartDelta(dst []byte, p *respPart, text []byte, seq int64) []byte {
	typ, idxKey := "response.output_text.delta", `,"content_index":`
	switch p.sub {
	case subSummary:
		typ, idxKey = "response.reasoning_summary_text.delta", `,"summary_index":`
	case subReasoning:
		typ = "response.reasoning_text.delta"
	}
	dst = c.appendEventHead(dst, typ, seq)
	dst = appendItemRef(dst, p.itemID, p.out)
	dst = append(dst, idxKey...)
	dst = jsonx.AppendInt(dst, p.part)
	dst = append(dst, `,"delta":`...)
	dst = jsonx.AppendString(dst, text)
	if p.sub == subContent {
		dst = append(dst, `,"logprobs":[]`...)
	}
	return append(dst, "}\n\n"...)
}

// appendToolCall appends output_item.added, the arguments delta and done events, and
// output_item.done of a released tool call.
func (c *responsesCodec) appendToolCall(dst []byte, call *toolCall, args []byte) []byte {
	item, err := jsonx.ParseObject(call.item)
	if err != nil {
		item = &jsonx.Object{}
		item.Set("type", []byte(`"function_call"`))
		item.Set("id", jsonx.AppendString(nil, c.itemIDs[call.at]))
		item.Set("call_id", jsonx.AppendString(nil, call.id))
		item.Set("name", jsonx.AppendString(nil, call.name))
	}
	custom := item.Str("type") == "custom_tool_call"
	argKey, prefix := "arguments", "response.function_call_arguments"
	if custom {
		argKey, prefix = "input", "response.custom_tool_call_input"
	}
	id := item.Str("id")
	item.Set(argKey, []byte(`""`))
	item.Set("status", []byte(`"in_progress"`))
	dst = c.appendEventHead(dst, "response.output_item.added", c.seq)
	dst = append(dst, `,"output_index":`...)
	dst = jsonx.AppendInt(dst, call.at)
	dst = append(dst, `,"item":`...)
	dst = item.AppendTo(dst)
	dst = append(dst, "}\n\n"...)
	if len(args) > 0 {
		dst = c.appendEventHead(dst, prefix+".delta", c.seq)
		dst = appendItemRef(dst, id, call.at)
		dst = append(dst, `,"delta":`...)
		dst = jsonx.AppendString(dst, args)
		dst = append(dst, "}\n\n"...)
	}
	dst = c.appendEventHead(dst, prefix+".done", c.seq)
	dst = appendItemRef(dst, id, call.at)
	dst = append(dst, `,"`+argKey+`":`...)
	dst = jsonx.AppendString(dst, args)
	dst = append(dst, "}\n\n"...)
	item.Set(argKey, jsonx.AppendString(nil, args))
	item.Set("status", []byte(`"completed"`))
	done := item.Bytes()
	dst = c.appendEventHead(dst, "response.output_item.done", c.seq)
	dst = append(dst, `,"output_index":`...)
	dst = jsonx.AppendInt(dst, call.at)
	dst = append(dst, `,"item":`...)
	dst = append(dst, done...)
	dst = append(dst, "}\n\n"...)
	c.done = append(c.done, done)
	c.nextOut = max(c.nextOut, call.at+1)
	return dst
}

// appendBlock starts to end the response as incomplete for content_filter: the reason as
// output text (appended to the open text part, or in a new message item), the part and
// item done events; appendBlockEnd follows with response.incomplete.
func (c *responsesCodec) appendBlock(dst []byte, reason string, hole *qentry) []byte {
	out, done, open := c.nextOut, c.done, c.openPart
	if hole != nil {
		out, done, open = hole.call.at, c.done[:min(hole.done, len(c.done))], nil
	}
	seq := c.seq
	next := func() int64 { seq++; return seq }
	delta := c.s.reasonText(0, reason, hole)
	text := delta
	var p *respPart
	if open != nil {
		p, out = open, open.out
		text = append(append([]byte(nil), c.s.visibleText(open.ch)...), delta...)
	} else {
		p = &respPart{partKey: partKey{out: out, sub: subContent}, itemID: guardItemID(string(delta))}
		dst = c.appendEventHead(dst, "response.output_item.added", next())
		dst = append(dst, `,"output_index":`...)
		dst = jsonx.AppendInt(dst, out)
		dst = append(dst, `,"item":{"id":`...)
		dst = jsonx.AppendString(dst, p.itemID)
		dst = append(dst, `,"type":"message","status":"in_progress","content":[],"role":"assistant"}}`+"\n\n"...)
		dst = c.appendEventHead(dst, "response.content_part.added", next())
		dst = appendItemRef(dst, p.itemID, out)
		dst = append(dst, `,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`+"\n\n"...)
	}
	dst = c.appendPartDelta(dst, p, delta, next())
	dst = c.appendEventHead(dst, "response.output_text.done", next())
	dst = appendItemRef(dst, p.itemID, out)
	dst = append(dst, `,"content_index":`...)
	dst = jsonx.AppendInt(dst, p.part)
	dst = append(dst, `,"text":`...)
	dst = jsonx.AppendString(dst, text)
	dst = append(dst, `,"logprobs":[]}`+"\n\n"...)
	part := append([]byte(`{"type":"output_text","annotations":[],"logprobs":[],"text":`), jsonx.AppendString(nil, text)...)
	part = append(part, '}')
	dst = c.appendEventHead(dst, "response.content_part.done", next())
	dst = appendItemRef(dst, p.itemID, out)
	dst = append(dst, `,"content_index":`...)
	dst = jsonx.AppendInt(dst, p.part)
	dst = append(dst, `,"part":`...)
	dst = append(dst, part...)
	dst = append(dst, "}\n\n"...)
	item := append([]byte(`{"id":`), jsonx.AppendString(nil, p.itemID)...)
	item = append(item, `,"type":"message","status":"incomplete","content":[`...)
	item = append(item, part...)
	item = append(item, `],"role":"assistant"}`...)
	dst = c.appendEventHead(dst, "response.output_item.done", next())
	dst = append(dst, `,"output_index":`...)
	dst = jsonx.AppendInt(dst, out)
	dst = append(dst, `,"item":`...)
	dst = append(dst, item...)
	dst = append(dst, "}\n\n"...)
	c.blockOutput = append(append(c.blockOutput[:0], done...), item)
	c.blockSeq = seq
	return dst
}

func (c *responsesCodec) awaitsUsage() bool { return c.s.usage == nil }

// appendBlockEnd appends response.incomplete with incomplete_details.reason
// content_filter, the block's output, and the upstream's usage when it arrived (else the
// usage of response.created, normally null).
func (c *responsesCodec) appendBlockEnd(dst []byte) []byte {
	r, err := jsonx.ParseObject(c.template)
	if err != nil {
		r = &jsonx.Object{}
		r.Set("id", []byte(`"resp_guardrail"`))
		r.Set("object", []byte(`"response"`))
		r.Set("model", jsonx.AppendString(nil, c.s.req.Model))
	}
	r.Set("status", []byte(`"incomplete"`))
	r.Set("incomplete_details", []byte(`{"reason":"content_filter"}`))
	r.Set("output", jsonx.MarshalArray(c.blockOutput))
	if c.s.usage != nil {
		r.Set("usage", c.s.usage)
	}
	dst = c.appendEventHead(dst, "response.incomplete", c.blockSeq+1)
	dst = append(dst, `,"response":`...)
	dst = r.AppendTo(dst)
	return append(dst, "}\n\n"...)
}

// appendFailure appends an "error" event. Besides the Responses error event's own fields
// (code, message, param) it carries an "error" object, which is what openai-go's stream
// (any event whose data has an "error" key) and openai-node (an "error" event) surface as
// a stream error.
func (c *responsesCodec) appendFailure(dst []byte, e *APIError) []byte {
	dst = c.appendEventHead(dst, "error", c.seq+1)
	dst = append(dst, `,"code":`...)
	dst = appendOptString(dst, e.Code)
	dst = append(dst, `,"message":`...)
	dst = jsonx.AppendString(dst, e.Message)
	dst = append(dst, `,"param":null,"error":`...)
	dst = appendOpenAIError(dst, e)
	return append(dst, "}\n\n"...)
}
