package wire

import (
	"bytes"
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
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
	var o *object
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
			o, err = parseObject(ev.Data)
			if o != nil {
				o.set("item", item)
			}
		}
	case rsFinal:
		o, err = c.rewriteResponse(ev.Data)
	}
	if err != nil {
		return dst, malformed(FamilyResponses, "event: %v", err)
	}
	if o != nil {
		return sse.AppendJSONEvent(dst, string(e.name), o.bytes()), nil
	}
	return append(dst, ev.Raw...), nil
}

// rewriteField returns the event with its text field set to what the client received
// on p, or nil when that is what it says already. Done events and the final response
// repeat content; they are checked on every stream, so that text the upstream never
// streamed as deltas (and the engine therefore never judged) is not handed to the client
// there: a part the stream never opened (p nil) repeats nothing.
func (c *responsesCodec) rewriteField(data []byte, field string, p *respPart) (*object, error) {
	o, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	var vis []byte
	if p != nil {
		vis = c.s.visibleText(p.ch)
	}
	if s, _ := rawString(o.get(field)); s == string(vis) {
		return nil, nil
	}
	o.set(field, appendString(nil, vis))
	return o, nil
}

// rewritePart rewrites the "part" of a part-done event.
func (c *responsesCodec) rewritePart(data []byte, p *respPart) (*object, error) {
	o, err := parseObject(data)
	if err != nil || o.get("part") == nil {
		return nil, err
	}
	part, err := c.rewriteField(o.get("part"), "text", p)
	if part == nil || err != nil {
		return nil, err
	}
	o.set("part", part.bytes())
	return o, nil
}

// rewriteItem returns the output item at output index out with the text of each of its
// parts set to what the client received, and whether anything changed.
func (c *responsesCodec) rewriteItem(raw json.RawMessage, out int) (json.RawMessage, bool) {
	o, err := parseObject(raw)
	if err != nil {
		return raw, false
	}
	changed := false
	for _, f := range []struct {
		key string
		sub byte
	}{{"content", subContent}, {"summary", subSummary}, {"content", subReasoning}} {
		if f.sub == subContent && o.str("type") != "message" || f.sub != subContent && o.str("type") != "reasoning" {
			continue
		}
		parts, err := o.arr(f.key)
		if err != nil {
			continue
		}
		partChanged := false
		for i, pr := range parts {
			p := c.parts[partKey{out, f.sub, i}]
			if np, _ := c.rewriteField(pr, "text", p); np != nil {
				parts[i], partChanged = np.bytes(), true
			}
		}
		if partChanged {
			o.set(f.key, marshalArray(parts))
			changed = true
		}
	}
	if !changed {
		return raw, false
	}
	return o.bytes(), true
}

// rewriteResponse rewrites the output of a final response event.
func (c *responsesCodec) rewriteResponse(data []byte) (*object, error) {
	o, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	r, err := o.obj("response")
	if err != nil {
		return nil, err
	}
	items, err := r.arr("output")
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
	r.set("output", marshalArray(items))
	o.set("response", r.bytes())
	return o, nil
}

// appendEventHead appends "event: typ", the data line's start and the sequence number.
func (c *responsesCodec) appendEventHead(dst []byte, typ string, seq int64) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	return appendInt(dst, int(seq))
}

// appendItemRef appends ,"item_id":…,"output_index":….
func appendItemRef(dst []byte, itemID string, out int) []byte {
	dst = append(dst, `,"item_id":`...)
	dst = appendString(dst, itemID)
	dst = append(dst, `,"output_index":`...)
	return appendInt(dst, out)
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
	dst = appendInt(dst, p.part)
	dst = append(dst, `,"delta":`...)
	dst = appendString(dst, text)
	if p.sub == subContent {
		dst = append(dst, `,"logprobs":[]`...)
	}
	return append(dst, "}\n\n"...)
}

// appendToolCall appends output_item.added, the arguments delta and done events, and
// output_item.done of a released tool call.
func (c *responsesCodec) appendToolCall(dst []byte, call *toolCall, args []byte) []byte {
	item, err := parseObject(call.item)
	if err != nil {
		item = &object{}
		item.set("type", []byte(`"function_call"`))
		item.set("id", appendString(nil, c.itemIDs[call.at]))
		item.set("call_id", appendString(nil, call.id))
		item.set("name", appendString(nil, call.name))
	}
	custom := item.str("type") == "custom_tool_call"
	argKey, prefix := "arguments", "response.function_call_arguments"
	if custom {
		argKey, prefix = "input", "response.custom_tool_call_input"
	}
	id := item.str("id")
	item.set(argKey, []byte(`""`))
	item.set("status", []byte(`"in_progress"`))
	dst = c.appendEventHead(dst, "response.output_item.added", c.seq)
	dst = append(dst, `,"output_index":`...)
	dst = appendInt(dst, call.at)
	dst = append(dst, `,"item":`...)
	dst = item.appendTo(dst)
	dst = append(dst, "}\n\n"...)
	if len(args) > 0 {
		dst = c.appendEventHead(dst, prefix+".delta", c.seq)
		dst = appendItemRef(dst, id, call.at)
		dst = append(dst, `,"delta":`...)
		dst = appendString(dst, args)
		dst = append(dst, "}\n\n"...)
	}
	dst = c.appendEventHead(dst, prefix+".done", c.seq)
	dst = appendItemRef(dst, id, call.at)
	dst = append(dst, `,"`+argKey+`":`...)
	dst = appendString(dst, args)
	dst = append(dst, "}\n\n"...)
	item.set(argKey, appendString(nil, args))
	item.set("status", []byte(`"completed"`))
	done := item.bytes()
	dst = c.appendEventHead(dst, "response.output_item.done", c.seq)
	dst = append(dst, `,"output_index":`...)
	dst = appendInt(dst, call.at)
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
		dst = appendInt(dst, out)
		dst = append(dst, `,"item":{"id":`...)
		dst = appendString(dst, p.itemID)
		dst = append(dst, `,"type":"message","status":"in_progress","content":[],"role":"assistant"}}`+"\n\n"...)
		dst = c.appendEventHead(dst, "response.content_part.added", next())
		dst = appendItemRef(dst, p.itemID, out)
		dst = append(dst, `,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`+"\n\n"...)
	}
	dst = c.appendPartDelta(dst, p, delta, next())
	dst = c.appendEventHead(dst, "response.output_text.done", next())
	dst = appendItemRef(dst, p.itemID, out)
	dst = append(dst, `,"content_index":`...)
	dst = appendInt(dst, p.part)
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, text)
	dst = append(dst, `,"logprobs":[]}`+"\n\n"...)
	part := append([]byte(`{"type":"output_text","annotations":[],"logprobs":[],"text":`), appendString(nil, text)...)
	part = append(part, '}')
	dst = c.appendEventHead(dst, "response.content_part.done", next())
	dst = appendItemRef(dst, p.itemID, out)
	dst = append(dst, `,"content_index":`...)
	dst = appendInt(dst, p.part)
	dst = append(dst, `,"part":`...)
	dst = append(dst, part...)
	dst = append(dst, "}\n\n"...)
	item := append([]byte(`{"id":`), appendString(nil, p.itemID)...)
	item = append(item, `,"type":"message","status":"incomplete","content":[`...)
	item = append(item, part...)
	item = append(item, `],"role":"assistant"}`...)
	dst = c.appendEventHead(dst, "response.output_item.done", next())
	dst = append(dst, `,"output_index":`...)
	dst = appendInt(dst, out)
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
	r, err := parseObject(c.template)
	if err != nil {
		r = &object{}
		r.set("id", []byte(`"resp_guardrail"`))
		r.set("object", []byte(`"response"`))
		r.set("model", appendString(nil, c.s.req.Model))
	}
	r.set("status", []byte(`"incomplete"`))
	r.set("incomplete_details", []byte(`{"reason":"content_filter"}`))
	r.set("output", marshalArray(c.blockOutput))
	if c.s.usage != nil {
		r.set("usage", c.s.usage)
	}
	dst = c.appendEventHead(dst, "response.incomplete", c.blockSeq+1)
	dst = append(dst, `,"response":`...)
	dst = r.appendTo(dst)
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
	dst = appendString(dst, e.Message)
	dst = append(dst, `,"param":null,"error":`...)
	dst = appendOpenAIError(dst, e)
	return append(dst, "}\n\n"...)
}
