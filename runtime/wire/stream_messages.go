package wire

import (
	"bytes"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// Anthropic stream event types, as the codec tells them apart.
const (
	msgOther = iota
	msgStart
	msgBlockStart
	msgBlockDelta
	msgBlockStop
	msgDelta
	msgStop
	msgError
)

var messagesTypes = map[string]int{
	"message_start": msgStart, "content_block_start": msgBlockStart, "content_block_delta": msgBlockDelta,
	"content_block_stop": msgBlockStop, "message_delta": msgDelta, "message_stop": msgStop, "error": msgError,
}

// Members the decoder reads, by object.
var (
	msgEventFields = []string{"type", "index", "message", "content_block", "delta", "usage", "error"}
	msgBlockFields = []string{"type", "id", "name", "text", "input"}
	msgDeltaFields = []string{"type", "text", "thinking", "partial_json", "stop_reason"}
	msgUsageFields = []string{"input_tokens", "output_tokens"}
	msgStartFields = []string{"id", "model", "usage", "content"}
)

// messagesCodec is Anthropic's Messages stream format: message_start,
// content_block_start/delta/stop per content block index, message_delta, message_stop,
// ping and error events, each with an "event:" line equal to its data's type.
type messagesCodec struct {
	s *Stream
	// kinds are the judged content blocks by index (text, thinking, tool_use).
	kinds map[int]content.Kind
	// What the client has received: message_start, the next block index, the open
	// block (-1 when none) and whether it is a text block.
	started   bool
	next      int
	open      int
	openText  bool
	messageID string
	model     string
	output    int64
	evType    int
	evIndex   int
	scratch   []byte
}

func newMessagesCodec(s *Stream) *messagesCodec {
	return &messagesCodec{s: s, kinds: map[int]content.Kind{}, open: -1}
}

func (c *messagesCodec) decode(dst []Item, ev *sse.Event) ([]Item, error) {
	var f [7][]byte
	if !c.s.tab.Validate(ev.Data) || !c.s.tab.ScanFields(ev.Data, msgEventFields, f[:]) {
		return dst, malformed(FamilyMessages, "event is not a JSON object")
	}
	typ, ok := jsonx.BytesOf(f[0], &c.scratch)
	if !ok {
		typ = ev.Type
	}
	index, ok := intField(f[1])
	if !ok {
		return dst, malformed(FamilyMessages, "content block index %q out of range", f[1])
	}
	c.evType, c.evIndex = messagesTypes[string(typ)], index
	ch := content.Channel{Index: index}
	switch c.evType {
	case msgStart:
		return c.decodeStart(dst, f[2])
	case msgBlockStart:
		return c.decodeBlockStart(dst, ch, f[3])
	case msgBlockDelta:
		return c.decodeBlockDelta(dst, ch, f[4])
	case msgBlockStop:
		kind, judged := c.kinds[index]
		if !judged {
			break
		}
		ch.Kind = kind
		it := Item{Kind: ItemChannelEnd, Channel: ch}
		if kind == content.ToolCall {
			c.s.cur.withhold = true
			call := c.s.call(ch)
			it.ID, it.Name = call.id, call.name
		}
		return append(dst, it), nil
	case msgDelta:
		n := len(dst)
		var d [5][]byte
		if c.s.tab.ScanFields(f[4], msgDeltaFields, d[:]) && !jsonx.IsNullValue(d[4]) {
			reason, ok := jsonx.StringOf(d[4], &c.scratch)
			if !ok {
				return dst, malformed(FamilyMessages, "stop_reason is not a string")
			}
			dst = append(dst, Item{Kind: ItemFinish, Text: reason, Final: true})
		}
		var u [2][]byte
		if c.s.tab.ScanFields(f[5], msgUsageFields, u[:]) {
			in, _ := jsonx.IntOf(u[0])
			out, _ := jsonx.IntOf(u[1])
			dst = append(dst, Item{Kind: ItemUsage, Usage: Usage{InputTokens: in, OutputTokens: out}})
			c.output = out
			c.s.keepUsage(f[5])
		}
		if len(dst) > n {
			return dst, nil
		}
	case msgStop:
		return append(dst, Item{Kind: ItemTerminator}), nil
	case msgError:
		it := Item{Kind: ItemError}
		var e [1][]byte
		if c.s.tab.ScanFields(f[6], []string{"message"}, e[:]) {
			it.Text, _ = jsonx.StringOf(e[0], &c.scratch)
		}
		return append(dst, it), nil
	}
	return append(dst, Item{Kind: ItemPass}), nil
}

// decodeStart reads message_start: the template's id and model, and input usage. Content
// arrives in content blocks; a message_start that carries content already (which the
// SDKs' accumulators would hand to the app unjudged) is malformed.
func (c *messagesCodec) decodeStart(dst []Item, message []byte) ([]Item, error) {
	var m [4][]byte
	if !c.s.tab.ScanFields(message, msgStartFields, m[:]) {
		return append(dst, Item{Kind: ItemPass}), nil
	}
	if blocks := bytes.TrimSpace(m[3]); len(blocks) > 0 && !emptyArray(blocks) {
		return dst, malformed(FamilyMessages, "message_start carries content outside content blocks")
	}
	c.messageID, _ = jsonx.StringOf(m[0], &c.scratch)
	c.model, _ = jsonx.StringOf(m[1], &c.scratch)
	var u [2][]byte
	if c.s.tab.ScanFields(m[2], msgUsageFields, u[:]) {
		c.output, _ = jsonx.IntOf(u[1])
		if in, _ := jsonx.IntOf(u[0]); in > 0 {
			return append(dst, Item{Kind: ItemUsage, Usage: Usage{InputTokens: in}}), nil
		}
	}
	return append(dst, Item{Kind: ItemPass}), nil
}

// decodeBlockStart reads content_block_start: text and thinking blocks open a channel,
// tool_use blocks start a tool call.
func (c *messagesCodec) decodeBlockStart(dst []Item, ch content.Channel, block []byte) ([]Item, error) {
	var b [5][]byte
	if !c.s.tab.ScanFields(block, msgBlockFields, b[:]) {
		return dst, malformed(FamilyMessages, "content_block_start without content_block")
	}
	typ, _ := jsonx.BytesOf(b[0], &c.scratch)
	switch string(typ) {
	case "text":
		ch.Kind = content.Text
		if c.s.req.Object {
			ch.Kind = content.Object
		}
		c.kinds[ch.Index] = ch.Kind
		if text, _ := jsonx.StringOf(b[3], &c.scratch); text != "" {
			return append(dst, Item{Kind: ItemDelta, Channel: ch, Text: text}), nil
		}
	case "thinking":
		ch.Kind = content.Reasoning
		c.kinds[ch.Index] = ch.Kind
	case "tool_use":
		ch.Kind = content.ToolCall
		c.kinds[ch.Index] = ch.Kind
		call := c.s.call(ch)
		call.id, _ = jsonx.StringOf(b[1], &c.scratch)
		call.name, _ = jsonx.StringOf(b[2], &c.scratch)
		c.s.startCall(call)
		dst = append(dst, Item{Kind: ItemToolCallStart, Channel: ch, ID: call.id, Name: call.name})
		if in := b[4]; !jsonx.IsNullValue(in) && !emptyObject(in) {
			dst = append(dst, Item{Kind: ItemDelta, Channel: ch, Text: string(in)})
		}
		return dst, nil
	}
	return append(dst, Item{Kind: ItemPass}), nil
}

// emptyObject reports whether v is {} (with any spacing).
func emptyObject(v []byte) bool {
	it, ok := jsonx.IterOf(v, '{')
	if !ok {
		return false
	}
	_, _, more := it.Member()
	return !more
}

// decodeBlockDelta reads content_block_delta of a judged block.
func (c *messagesCodec) decodeBlockDelta(dst []Item, ch content.Channel, delta []byte) ([]Item, error) {
	kind, judged := c.kinds[ch.Index]
	var d [5][]byte
	if !judged || !c.s.tab.ScanFields(delta, msgDeltaFields, d[:]) {
		return append(dst, Item{Kind: ItemPass}), nil
	}
	ch.Kind = kind
	typ, _ := jsonx.BytesOf(d[0], &c.scratch)
	var v []byte
	switch {
	case string(typ) == "text_delta" && (kind == content.Text || kind == content.Object):
		v = d[1]
	case string(typ) == "thinking_delta" && kind == content.Reasoning:
		v = d[2]
	case string(typ) == "input_json_delta" && kind == content.ToolCall:
		c.s.cur.withhold = true
		v = d[3]
	default:
		return append(dst, Item{Kind: ItemPass}), nil
	}
	text, ok := jsonx.StringOf(v, &c.scratch)
	if !ok && !jsonx.IsNullValue(v) {
		return dst, malformed(FamilyMessages, "%s delta is not a string", typ)
	}
	if text == "" {
		if kind == content.ToolCall {
			return dst, nil
		}
		return append(dst, Item{Kind: ItemPass}), nil
	}
	return append(dst, Item{Kind: ItemDelta, Channel: ch, Text: text}), nil
}

func (c *messagesCodec) rest(dst []byte, ev *sse.Event, stripped bool) ([]byte, error) {
	switch {
	case c.s.cur.withhold:
		return dst, nil
	case !stripped:
		c.sent(c.evType, c.evIndex)
		return append(dst, ev.Raw...), nil
	case c.evType == msgBlockStart:
		// A start that carried text: the start without it.
		o, err := jsonx.ParseObject(ev.Data)
		if err != nil {
			return dst, malformed(FamilyMessages, "event: %v", err)
		}
		b, err := o.Obj("content_block")
		if err != nil {
			return dst, malformed(FamilyMessages, "content_block: %v", err)
		}
		b.Set("text", []byte(`""`))
		o.Set("content_block", b.Bytes())
		c.sent(c.evType, c.evIndex)
		return sse.AppendJSONEvent(dst, "content_block_start", o.Bytes()), nil
	}
	// A delta event: its content went out as the releases.
	return dst, nil
}

// sent records what an event the client receives changes of the message's shape.
func (c *messagesCodec) sent(typ, index int) {
	switch typ {
	case msgStart:
		c.started = true
	case msgBlockStart:
		c.next = max(c.next, index+1)
		c.open = index
		k, ok := c.kinds[index]
		c.openText = ok && (k == content.Text || k == content.Object)
	case msgBlockStop:
		if c.open == index {
			c.open = -1
		}
	}
}

func (c *messagesCodec) appendEvent(dst []byte, typ string, data []byte) []byte {
	return sse.AppendJSONEvent(dst, typ, data)
}

// appendBlockDelta appends a content_block_delta event.
func (c *messagesCodec) appendBlockDelta(dst []byte, index int, deltaType, field string, text []byte) []byte {
	dst = append(dst, "event: content_block_delta\ndata: "...)
	dst = append(dst, `{"type":"content_block_delta","index":`...)
	dst = jsonx.AppendInt(dst, index)
	dst = append(dst, `,"delta":{"type":"`...)
	dst = append(dst, deltaType...)
	dst = append(dst, `","`...)
	dst = append(dst, field...)
	dst = append(dst, `":`...)
	dst = jsonx.AppendString(dst, text)
	return append(dst, "}}\n\n"...)
}

func (c *messagesCodec) appendStop(dst []byte, index int) []byte {
	dst = append(dst, "event: content_block_stop\ndata: "...)
	dst = append(dst, `{"type":"content_block_stop","index":`...)
	dst = jsonx.AppendInt(dst, index)
	return append(dst, "}\n\n"...)
}

func (c *messagesCodec) appendDelta(dst []byte, ch content.Channel, text []byte) []byte {
	if ch.Kind == content.Reasoning {
		return c.appendBlockDelta(dst, ch.Index, "thinking_delta", "thinking", text)
	}
	return c.appendBlockDelta(dst, ch.Index, "text_delta", "text", text)
}

// appendToolCall appends content_block_start (tool_use with empty input), one
// input_json_delta with the whole arguments, and content_block_stop.
func (c *messagesCodec) appendToolCall(dst []byte, call *toolCall, args []byte) []byte {
	i := call.ch.Index
	dst = append(dst, "event: content_block_start\ndata: "...)
	dst = append(dst, `{"type":"content_block_start","index":`...)
	dst = jsonx.AppendInt(dst, i)
	dst = append(dst, `,"content_block":{"type":"tool_use","id":`...)
	dst = jsonx.AppendString(dst, call.id)
	dst = append(dst, `,"name":`...)
	dst = jsonx.AppendString(dst, call.name)
	dst = append(dst, `,"input":{}}}`+"\n\n"...)
	if len(args) > 0 {
		dst = c.appendBlockDelta(dst, i, "input_json_delta", "partial_json", args)
	}
	dst = c.appendStop(dst, i)
	c.next = max(c.next, i+1)
	return dst
}

// appendBlock starts to end the message as Anthropic ends a refused one: the reason as
// text (in the open text block, or a new one) and content_block_stop; appendBlockEnd
// follows with message_delta and message_stop.
func (c *messagesCodec) appendBlock(dst []byte, reason string, hole *qentry) []byte {
	next, open, openText := c.next, c.open, c.openText
	if hole != nil {
		// Everything before the withheld call was sent; nothing after it was.
		next, open, openText = hole.call.ch.Index, -1, false
	}
	if !c.started {
		dst = c.appendEvent(dst, "message_start", c.synthStart())
	}
	if open >= 0 && !openText {
		dst = c.appendStop(dst, open)
		open = -1
	}
	if open < 0 {
		open = next
		dst = append(dst, "event: content_block_start\ndata: "...)
		dst = append(dst, `{"type":"content_block_start","index":`...)
		dst = jsonx.AppendInt(dst, open)
		dst = append(dst, `,"content_block":{"type":"text","text":""}}`+"\n\n"...)
	}
	dst = c.appendBlockDelta(dst, open, "text_delta", "text", c.s.reasonText(0, reason, hole))
	return c.appendStop(dst, open)
}

func (c *messagesCodec) awaitsUsage() bool { return c.s.usage == nil }

// appendBlockEnd appends message_delta with stop_reason "refusal" (Anthropic's native
// counterpart of content_filter), stop_details naming the reason as the refusal's
// explanation (no category: the guard's policies are not Anthropic's), the upstream's
// usage when it arrived (else its last output token count), then message_stop.
func (c *messagesCodec) appendBlockEnd(dst []byte) []byte {
	dst = append(dst, "event: message_delta\ndata: "...)
	dst = append(dst, `{"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null,"stop_details":`...)
	dst = appendRefusalDetails(dst, c.s.blockReason)
	dst = append(dst, `},"usage":`...)
	if c.s.usage != nil {
		dst = append(dst, c.s.usage...)
	} else {
		dst = append(dst, `{"output_tokens":`...)
		dst = jsonx.AppendInt(dst, int(c.output))
		dst = append(dst, '}')
	}
	dst = append(dst, "}\n\n"...)
	return append(dst, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// appendRefusalDetails appends Anthropic's refusal stop_details with reason as its
// explanation: {"type":"refusal","category":null,"explanation":reason}.
func appendRefusalDetails(dst []byte, reason string) []byte {
	dst = append(dst, `{"type":"refusal","category":null,"explanation":`...)
	dst = jsonx.AppendString(dst, reason)
	return append(dst, '}')
}

// synthStart builds a message_start for a stream blocked before the upstream's.
func (c *messagesCodec) synthStart() []byte {
	b := append([]byte(nil), `{"type":"message_start","message":{"id":`...)
	b = jsonx.AppendString(b, cmpOr(c.messageID, "msg_guardrail"))
	b = append(b, `,"type":"message","role":"assistant","content":[],"model":`...)
	b = jsonx.AppendString(b, cmpOr(c.model, c.s.req.Model))
	return append(b, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`...)
}

// appendFailure appends an "error" event, which anthropic-sdk-go's stream surfaces as an
// *anthropic.Error (its ErrorCode() is details.error_code).
func (c *messagesCodec) appendFailure(dst []byte, e *APIError) []byte {
	return sse.AppendJSONEvent(dst, "error", appendAnthropicError(nil, e))
}

// emptyArray reports whether raw is a JSON array with no elements.
func emptyArray(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return false
	}
	return len(bytes.TrimSpace(raw[1:len(raw)-1])) == 0
}
