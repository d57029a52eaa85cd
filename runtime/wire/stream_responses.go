package wire

import (
	"bytes"
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// Responses stream event types, as the codec tells them apart.
const (
	rsOther = iota
	rsCreated
	rsItemAdded
	rsPartAdded
	rsSummaryPartAdded
	rsTextDelta
	rsSummaryDelta
	rsReasoningDelta
	rsTextDone
	rsSummaryDone
	rsReasoningDone
	rsPartDone
	rsSummaryPartDone
	rsArgsDelta
	rsArgsDone
	rsItemDone
	rsFinal
	rsError
)

var responsesTypes = map[string]int{
	"response.created": rsCreated, "response.in_progress": rsCreated, "response.queued": rsCreated,
	"response.output_item.added": rsItemAdded, "response.content_part.added": rsPartAdded,
	"response.reasoning_summary_part.added": rsSummaryPartAdded,
	"response.output_text.delta":            rsTextDelta, "response.reasoning_summary_text.delta": rsSummaryDelta,
	"response.reasoning_text.delta": rsReasoningDelta, "response.output_text.done": rsTextDone,
	"response.reasoning_summary_text.done": rsSummaryDone, "response.reasoning_text.done": rsReasoningDone,
	"response.content_part.done": rsPartDone, "response.reasoning_summary_part.done": rsSummaryPartDone,
	"response.function_call_arguments.delta": rsArgsDelta, "response.custom_tool_call_input.delta": rsArgsDelta,
	"response.function_call_arguments.done": rsArgsDone, "response.custom_tool_call_input.done": rsArgsDone,
	"response.output_item.done": rsItemDone, "response.completed": rsFinal, "response.incomplete": rsFinal,
	"response.failed": rsFinal, "error": rsError,
}

var responsesEventFields = []string{"type", "sequence_number", "output_index", "content_index", "summary_index",
	"item_id", "delta", "item", "part", "response", "message", "error"}

// responsesEvent is what the codec keeps of the current event; its slices alias the
// event's data, valid until Emit returns.
type responsesEvent struct {
	typ                                     int
	name                                    []byte
	outputIndex, contentIndex, summaryIndex int
	itemID, delta, item, part, response     []byte
	message, err                            []byte
	partType                                []byte
}

// Sub-kinds of a Responses output part.
const (
	subContent   = 'c' // message content part (output_text)
	subSummary   = 's' // reasoning summary part
	subReasoning = 'r' // reasoning content part (reasoning_text)
	subCall      = 'f' // function or custom tool call
)

type partKey struct {
	out  int
	sub  byte
	part int
}

// respPart is an output part of a Responses stream and the channel it is.
type respPart struct {
	partKey
	ch     content.Channel
	itemID string
}

// responsesCodec is the Responses API stream format: typed events with "event:" lines
// and sequence numbers; deltas address an output item (output_index, item_id) and a part
// (content_index or summary_index); done events and response.completed repeat the
// accumulated content, so they are rewritten when what the client received differs.
type responsesCodec struct {
	s         *Stream
	next      int
	parts     map[partKey]*respPart
	byChannel map[content.Channel]*respPart
	itemIDs   map[int]string
	ended     map[content.Channel]bool
	seq       int64
	template  []byte
	// What the client has received: completed items in order, the next output index,
	// the open output_text part.
	done     []json.RawMessage
	nextOut  int
	openPart *respPart
	ev       responsesEvent
	// The block's output (the items the client saw completed, then the reason's
	// message) and the last sequence number it used, for appendBlockEnd.
	blockOutput []json.RawMessage
	blockSeq    int64
	// Buffers reused across events.
	scratch, name, partType []byte
}

func newResponsesCodec(s *Stream) *responsesCodec {
	return &responsesCodec{s: s, parts: map[partKey]*respPart{}, byChannel: map[content.Channel]*respPart{},
		itemIDs: map[int]string{}, ended: map[content.Channel]bool{}}
}

// part returns the part at k, numbering it as a channel of kind when it is new; itemID
// is the raw item_id of the event, read only then.
func (c *responsesCodec) part(k partKey, kind content.Kind, itemID []byte) *respPart {
	p := c.parts[k]
	if p == nil {
		p = &respPart{partKey: k, ch: content.Channel{Kind: kind, Index: c.next}, itemID: cmpOr(c.str(itemID), c.itemIDs[k.out])}
		c.next++
		c.parts[k], c.byChannel[p.ch] = p, p
	}
	return p
}

func (c *responsesCodec) textKind() content.Kind {
	if c.s.req.Object {
		return content.Object
	}
	return content.Text
}

// str decodes a string value; non-strings are "".
func (c *responsesCodec) str(v []byte) string {
	s, _ := jsonx.StringOf(v, &c.scratch)
	return s
}

func (c *responsesCodec) decode(dst []Item, ev *sse.Event) ([]Item, error) {
	var f [12][]byte
	if !c.s.tab.Validate(ev.Data) || !c.s.tab.ScanFields(ev.Data, responsesEventFields, f[:]) {
		return dst, malformed(FamilyResponses, "event is not a JSON object")
	}
	e := &c.ev
	*e = responsesEvent{itemID: f[5], delta: f[6], item: f[7], part: f[8], response: f[9], message: f[10], err: f[11]}
	e.name, _ = jsonx.BytesOf(f[0], &c.scratch)
	e.name = append(c.name[:0], e.name...)
	c.name = e.name
	e.typ = responsesTypes[string(e.name)]
	var ok1, ok2, ok3 bool
	e.outputIndex, ok1 = intField(f[2])
	e.contentIndex, ok2 = intField(f[3])
	e.summaryIndex, ok3 = intField(f[4])
	if !ok1 || !ok2 || !ok3 {
		return dst, malformed(FamilyResponses, "index out of range")
	}
	if seq, ok := jsonx.IntOf(f[1]); ok {
		c.seq = seq
	}
	var pf [1][]byte
	if c.s.tab.ScanFields(e.part, typeField, pf[:]) {
		e.partType, _ = jsonx.BytesOf(pf[0], &c.scratch)
		e.partType = append(c.partType[:0], e.partType...)
		c.partType = e.partType
	}
	out := e.outputIndex
	switch e.typ {
	case rsCreated:
		if !jsonx.IsNullValue(e.response) {
			c.template = append(c.template[:0], e.response...)
		}
	case rsItemAdded:
		var it [4][]byte
		if !c.s.tab.ScanFields(e.item, itemFields, it[:]) {
			return dst, malformed(FamilyResponses, "output item is not an object")
		}
		typ, _ := jsonx.BytesOf(it[0], &c.scratch)
		if id := c.str(it[1]); id != "" {
			c.itemIDs[out] = id
		}
		if string(typ) == "function_call" || string(typ) == "custom_tool_call" {
			p := c.part(partKey{out: out, sub: subCall}, content.ToolCall, it[1])
			call := c.s.call(p.ch)
			call.id, call.name, call.item, call.at = c.str(it[2]), c.str(it[3]), bytes.Clone(e.item), out
			c.s.startCall(call)
			return append(dst, Item{Kind: ItemToolCallStart, Channel: p.ch, ID: call.id, Name: call.name}), nil
		}
	case rsPartAdded:
		switch string(e.partType) {
		case "output_text":
			c.part(partKey{out, subContent, e.contentIndex}, c.textKind(), c.ev.itemID)
		case "reasoning_text":
			c.part(partKey{out, subReasoning, e.contentIndex}, content.Reasoning, c.ev.itemID)
		}
	case rsSummaryPartAdded:
		c.part(partKey{out, subSummary, e.summaryIndex}, content.Reasoning, c.ev.itemID)
	case rsTextDelta:
		p := c.part(partKey{out, subContent, e.contentIndex}, c.textKind(), c.ev.itemID)
		return c.appendDeltaItem(dst, p.ch, e.delta)
	case rsSummaryDelta:
		p := c.part(partKey{out, subSummary, e.summaryIndex}, content.Reasoning, c.ev.itemID)
		return c.appendDeltaItem(dst, p.ch, e.delta)
	case rsReasoningDelta:
		p := c.part(partKey{out, subReasoning, e.contentIndex}, content.Reasoning, c.ev.itemID)
		return c.appendDeltaItem(dst, p.ch, e.delta)
	case rsTextDone:
		return c.end(dst, c.part(partKey{out, subContent, e.contentIndex}, c.textKind(), c.ev.itemID)), nil
	case rsSummaryDone:
		return c.end(dst, c.part(partKey{out, subSummary, e.summaryIndex}, content.Reasoning, c.ev.itemID)), nil
	case rsReasoningDone:
		return c.end(dst, c.part(partKey{out, subReasoning, e.contentIndex}, content.Reasoning, c.ev.itemID)), nil
	case rsArgsDelta:
		c.s.cur.withhold = true
		p := c.part(partKey{out: out, sub: subCall}, content.ToolCall, c.ev.itemID)
		return c.appendDeltaItem(dst, p.ch, e.delta)
	case rsArgsDone:
		c.s.cur.withhold = true
		return c.end(dst, c.part(partKey{out: out, sub: subCall}, content.ToolCall, c.ev.itemID)), nil
	case rsItemDone:
		if p := c.parts[partKey{out: out, sub: subCall}]; p != nil {
			c.s.cur.withhold = true
			return c.end(dst, p), nil
		}
	case rsFinal:
		return c.finish(dst)
	case rsError:
		msg := c.str(e.message)
		if msg == "" {
			var m [1][]byte
			if c.s.tab.ScanFields(e.err, messageField, m[:]) {
				msg = c.str(m[0])
			}
		}
		return append(dst, Item{Kind: ItemError, Text: msg}), nil
	}
	return append(dst, Item{Kind: ItemPass}), nil
}

var (
	typeField    = []string{"type"}
	messageField = []string{"message"}
	itemFields   = []string{"type", "id", "call_id", "name"}
	finalFields  = []string{"status", "incomplete_details", "usage"}
	usageFields  = []string{"input_tokens", "output_tokens"}
	reasonField  = []string{"reason"}
)

// appendDeltaItem appends the delta of a string value; an empty delta passes.
func (c *responsesCodec) appendDeltaItem(dst []Item, ch content.Channel, v []byte) ([]Item, error) {
	text, ok := jsonx.StringOf(v, &c.scratch)
	if !ok && !jsonx.IsNullValue(v) {
		return dst, malformed(FamilyResponses, "delta is not a string")
	}
	if text == "" {
		if ch.Kind == content.ToolCall {
			return dst, nil
		}
		return append(dst, Item{Kind: ItemPass}), nil
	}
	return append(dst, Item{Kind: ItemDelta, Channel: ch, Text: text}), nil
}

// end ends p's channel once; a second end event of the same part passes.
func (c *responsesCodec) end(dst []Item, p *respPart) []Item {
	if c.ended[p.ch] {
		if p.ch.Kind == content.ToolCall {
			return dst
		}
		return append(dst, Item{Kind: ItemPass})
	}
	c.ended[p.ch] = true
	it := Item{Kind: ItemChannelEnd, Channel: p.ch}
	if call := c.s.calls[p.ch]; call != nil {
		it.ID, it.Name = call.id, call.name
	}
	return append(dst, it)
}

// finish decodes response.completed and its incomplete and failed variants.
func (c *responsesCodec) finish(dst []Item) ([]Item, error) {
	var r [3][]byte
	if !c.s.tab.ScanFields(c.ev.response, finalFields, r[:]) {
		return dst, malformed(FamilyResponses, "final event without a response object")
	}
	c.s.keepUsage(r[2])
	var u [2][]byte
	if c.s.tab.ScanFields(r[2], usageFields, u[:]) {
		in, _ := jsonx.IntOf(u[0])
		out, _ := jsonx.IntOf(u[1])
		dst = append(dst, Item{Kind: ItemUsage, Usage: Usage{InputTokens: in, OutputTokens: out}})
	}
	reason := c.str(r[0])
	var d [1][]byte
	if c.s.tab.ScanFields(r[1], reasonField, d[:]) {
		reason = cmpOr(c.str(d[0]), reason)
	}
	dst = append(dst, Item{Kind: ItemFinish, Text: reason, Final: true})
	return append(dst, Item{Kind: ItemTerminator}), nil
}
