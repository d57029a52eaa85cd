package wire

import (
	"bytes"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// chatChoice is the state of one choice of a chat stream.
type chatChoice struct {
	// open are the choice's content channels, in the order they started.
	open         []content.Channel
	finished     bool
	roleSent     bool
	finishedSent bool
}

// chatCodec is the chat.completion.chunk stream format: data-only events, chunks with
// choices[].delta, a usage chunk with empty choices, and "data: [DONE]".
type chatCodec struct {
	s *Stream
	// Template of the chunks it builds, from the upstream's.
	id, created, model, fingerprint, tier []byte
	reasoningKey                          string
	choices                               map[int]*chatChoice
	finished                              int
	maxChoice                             int
	// roles and finishes of the current event, marked as sent when it is emitted.
	roles, finishes []int
	// curUsage: the current event carries usage; usageSent: the client received the
	// upstream's usage chunk.
	curUsage, usageSent bool
	// bare: the current event holds nothing but judged content (decode says; rest skips).
	bare    bool
	scratch []byte
	// rewrite holds the parts of the event rest is rewriting.
	rewrite []byte
	// shape is the last chunk's when it was a plain text delta; contentVal and free are
	// the string values decode took its text from and left unread, for it.
	shape chatShape
	// shaped counts the chunks decoded by their shape.
	shaped     int
	contentVal []byte
	contents   int
	free       [][]byte
}

// chatShape is the last chunk when it decoded to one text delta and nothing else (the
// common chunk of a stream), with the places of the string values that did not decide
// how: the content, and root members decode does not read (OpenAI's obfuscation, which
// pads every chunk with random characters). A chunk that is the same bytes with other
// strings in those places is the same JSON structure with other string values, so it
// decodes to the same item with its own text and leaves the codec as it was; matching it
// costs a comparison of the bytes between the holes and a check of the strings in them,
// not a validation and a walk.
type chatShape struct {
	// text is the chunk, nil when there is no shape.
	text []byte
	// holes are the string values' [start, end) in text, in order; content is the index
	// of the content's.
	holes   [][2]int
	content int
	ch      content.Channel
	bare    bool
}

func newChatCodec(s *Stream) *chatCodec {
	return &chatCodec{s: s, reasoningKey: "reasoning_content", choices: map[int]*chatChoice{}}
}

func (c *chatCodec) choice(i int) *chatChoice {
	ch := c.choices[i]
	if ch == nil {
		ch = &chatChoice{}
		c.choices[i] = ch
		c.maxChoice = max(c.maxChoice, i)
	}
	return ch
}

func (st *chatChoice) opens(ch content.Channel) {
	for _, o := range st.open {
		if o == ch {
			return
		}
	}
	st.open = append(st.open, ch)
}

var doneData = []byte("[DONE]")

func (c *chatCodec) decode(dst []Item, ev *sse.Event) ([]Item, error) {
	data := ev.Data
	if out, ok := c.decodeShaped(dst, data); ok {
		return out, nil
	}
	n := len(dst)
	c.contentVal, c.contents, c.free = nil, 0, c.free[:0]
	dst, err := c.decodeChunk(dst, data)
	c.shape.text = nil
	if err == nil && !c.s.noShapes {
		c.keepShape(dst[n:], data)
	}
	return dst, err
}

// decodeShaped decodes data when it has the shape of the last chunk.
func (c *chatCodec) decodeShaped(dst []Item, data []byte) ([]Item, bool) {
	sh := &c.shape
	if sh.text == nil {
		return dst, false
	}
	pos, prev := 0, 0
	var text []byte
	for i, h := range sh.holes {
		lit := sh.text[prev:h[0]]
		if len(data)-pos < len(lit) || string(data[pos:pos+len(lit)]) != string(lit) {
			return dst, false
		}
		pos += len(lit)
		if pos >= len(data) || data[pos] != '"' {
			return dst, false
		}
		end, ok := jsonx.ValidString(data, pos)
		if !ok {
			return dst, false
		}
		if i == sh.content {
			text = data[pos:end]
		}
		pos, prev = end, h[1]
	}
	if string(data[pos:]) != string(sh.text[prev:]) {
		return dst, false
	}
	t, ok := jsonx.StringOf(text, &c.scratch)
	if !ok || t == "" {
		return dst, false // no delta: decodeChunk says what it is
	}
	c.roles, c.finishes, c.curUsage, c.bare = c.roles[:0], c.finishes[:0], false, sh.bare
	c.shaped++
	return append(dst, Item{Kind: ItemDelta, Channel: sh.ch, Text: t}), true
}

// keepShape keeps data as the shape of the chunks to come when it decoded to items, one
// text delta from its only content member and nothing else: no role, finish, usage, tool
// call or reasoning, which decode records or which change what rest sends.
func (c *chatCodec) keepShape(items []Item, data []byte) {
	if len(items) != 1 || items[0].Kind != ItemDelta || c.contents != 1 ||
		(items[0].Channel.Kind != content.Text && items[0].Channel.Kind != content.Object) ||
		len(c.roles) > 0 || len(c.finishes) > 0 || c.curUsage || c.s.cur.withhold {
		return
	}
	sh := &c.shape
	sh.holes = sh.holes[:0]
	for _, v := range append(c.free, c.contentVal) {
		off, ok := jsonx.OffsetIn(data, v)
		if !ok {
			return // not a slice of data: no shape
		}
		sh.holes = append(sh.holes, [2]int{off, off + len(v)})
	}
	// In order; the content is the last added.
	sh.content = len(sh.holes) - 1
	for i := sh.content; i > 0 && sh.holes[i-1][0] > sh.holes[i][0]; i-- {
		sh.holes[i-1], sh.holes[i] = sh.holes[i], sh.holes[i-1]
		sh.content = i - 1
	}
	sh.text = append(sh.text[:0], data...)
	sh.ch, sh.bare = items[0].Channel, c.bare
}

// decodeChunk decodes a chunk by validating and walking it.
func (c *chatCodec) decodeChunk(dst []Item, data []byte) ([]Item, error) {
	var kb jsonx.KeyBuf
	c.roles, c.finishes, c.curUsage, c.bare = c.roles[:0], c.finishes[:0], false, false
	if bytes.Equal(bytes.TrimSpace(data), doneData) {
		return append(dst, Item{Kind: ItemTerminator}), nil
	}
	if !c.s.tab.Validate(data) {
		return dst, malformed(FamilyChat, "chunk is not JSON")
	}
	root, ok := c.s.tab.IterOf(data, '{')
	if !ok {
		return dst, malformed(FamilyChat, "chunk is not a JSON object")
	}
	var choices, usage, errv []byte
	for {
		k, v, ok := root.Member()
		if !ok {
			break
		}
		switch string(jsonx.KeyName(k, &kb)) {
		case "choices":
			choices = v
		case "usage":
			usage = v
		case "error":
			errv = v
		case "id":
			keepRaw(&c.id, v)
		case "created":
			keepRaw(&c.created, v)
		case "model":
			keepRaw(&c.model, v)
		case "system_fingerprint":
			keepRaw(&c.fingerprint, v)
		case "service_tier":
			keepRaw(&c.tier, v)
		default:
			if len(v) > 0 && v[0] == '"' {
				c.free = append(c.free, v) // not read: a place in the shape
			}
		}
	}
	if !jsonx.IsNullValue(errv) {
		return append(dst, Item{Kind: ItemError, Text: c.errorMessage(errv)}), nil
	}
	n := len(dst)
	var err error
	it, isArray := c.s.tab.IterOf(choices, '[')
	// bare: once the judged members are taken out, rest has nothing left to send. The
	// choices keep it so; a usage member, or choices that are not an array (which rest
	// reports), do not.
	c.bare = (isArray || jsonx.IsNullValue(choices)) && jsonx.IsNullValue(usage)
	for {
		choice, ok := it.Elem()
		if !ok {
			break
		}
		if dst, err = c.decodeChoice(dst, choice); err != nil {
			return dst, err
		}
	}
	if !jsonx.IsNullValue(usage) {
		c.s.keepUsage(usage)
		c.curUsage = true
		var u Usage
		ui, _ := c.s.tab.IterOf(usage, '{')
		for {
			k, v, ok := ui.Member()
			if !ok {
				break
			}
			switch string(jsonx.KeyName(k, &kb)) {
			case "prompt_tokens":
				u.InputTokens, _ = jsonx.IntOf(v)
			case "completion_tokens":
				u.OutputTokens, _ = jsonx.IntOf(v)
			}
		}
		dst = append(dst, Item{Kind: ItemUsage, Usage: u})
	}
	if len(dst) == n {
		dst = append(dst, Item{Kind: ItemPass})
	}
	return dst, nil
}

// errorMessage returns the message of an error value: an object's "message", or a string.
func (c *chatCodec) errorMessage(v []byte) string {
	if s, ok := jsonx.StringOf(v, &c.scratch); ok {
		return s
	}
	it, _ := c.s.tab.IterOf(v, '{')
	msg := ""
	for {
		k, mv, ok := it.Member()
		if !ok {
			return msg
		}
		if jsonx.KeyIs(k, "message") {
			msg, _ = jsonx.StringOf(mv, &c.scratch)
		}
	}
}

// keepRaw keeps a template value, copying it only when it changed.
func keepRaw(dst *[]byte, v []byte) {
	if !jsonx.IsNullValue(v) && !bytes.Equal(*dst, v) {
		*dst = append((*dst)[:0], v...)
	}
}

// optStr reads a judged string member: a string or null; anything else is malformed.
func (c *chatCodec) optStr(v []byte, what string) (string, error) {
	if jsonx.IsNullValue(v) {
		return "", nil
	}
	s, ok := jsonx.StringOf(v, &c.scratch)
	if !ok {
		return "", malformed(FamilyChat, "%s is not a string", what)
	}
	return s, nil
}

// decodeChoice decodes one element of a chunk's choices.
func (c *chatCodec) decodeChoice(dst []Item, choice []byte) ([]Item, error) {
	var kb jsonx.KeyBuf
	ci, ok := c.s.tab.IterOf(choice, '{')
	if !ok {
		return dst, malformed(FamilyChat, "choice is not an object")
	}
	var index, delta, finish []byte
	for {
		k, v, ok := ci.Member()
		if !ok {
			break
		}
		switch string(jsonx.KeyName(k, &kb)) {
		case "index":
			index = v
		case "delta":
			delta = v
		case "finish_reason":
			finish = v
		}
	}
	if !jsonx.IsNullValue(finish) {
		c.bare = false
	}
	idx, ok := jsonx.IntOf(index)
	if len(index) == 0 {
		idx, ok = 0, true
	}
	if !ok || idx < 0 || idx >= MaxChoices {
		return dst, malformed(FamilyChat, "choice index %q out of range", index)
	}
	i := int(idx)
	st := c.choice(i)
	var role, text, reasoning, reasoningContent string
	var calls []byte
	var err error
	di, _ := c.s.tab.IterOf(delta, '{')
	for {
		k, v, ok := di.Member()
		if !ok {
			break
		}
		switch string(jsonx.KeyName(k, &kb)) {
		case "role":
			role, err = c.optStr(v, "role")
		case "content":
			text, err = c.optStr(v, "content")
			c.contentVal = v
			c.contents++
		case "reasoning_content":
			reasoningContent, err = c.optStr(v, "reasoning_content")
		case "reasoning":
			reasoning, err = c.optStr(v, "reasoning")
		case "tool_calls":
			calls = v
		default:
			if !jsonx.IsNullValue(v) {
				c.bare = false // role, refusal, annotations, …: rest sends them
			}
		}
		if err != nil {
			return dst, err
		}
	}
	if role != "" {
		c.roles = append(c.roles, i)
	}
	if text != "" {
		kind := content.Text
		if c.s.req.Object {
			kind = content.Object
		}
		ch := content.Channel{Choice: i, Kind: kind}
		st.opens(ch)
		dst = append(dst, Item{Kind: ItemDelta, Channel: ch, Text: text})
	}
	if r, key := reasoningOf(&reasoningContent, &reasoning); r != "" {
		c.reasoningKey = key
		ch := content.Channel{Choice: i, Kind: content.Reasoning}
		st.opens(ch)
		dst = append(dst, Item{Kind: ItemDelta, Channel: ch, Text: r})
	}
	ti, _ := c.s.tab.IterOf(calls, '[')
	for {
		call, ok := ti.Elem()
		if !ok {
			break
		}
		if dst, err = c.decodeToolCall(dst, st, i, call); err != nil {
			return dst, err
		}
	}
	if reason, err := c.optStr(finish, "finish_reason"); err != nil {
		return dst, err
	} else if reason != "" && !st.finished {
		for _, ch := range st.open {
			it := Item{Kind: ItemChannelEnd, Channel: ch}
			if call := c.s.calls[ch]; call != nil && ch.Kind == content.ToolCall {
				it.ID, it.Name = call.id, call.name
			}
			dst = append(dst, it)
		}
		st.finished = true
		c.finished++
		c.finishes = append(c.finishes, i)
		dst = append(dst, Item{Kind: ItemFinish, Channel: content.Channel{Choice: i}, Text: reason, Final: c.finished >= c.s.req.N})
	}
	return dst, nil
}

// decodeToolCall decodes one element of a delta's tool_calls.
func (c *chatCodec) decodeToolCall(dst []Item, st *chatChoice, choice int, raw []byte) ([]Item, error) {
	var kb jsonx.KeyBuf
	c.s.cur.withhold = true
	ti, ok := c.s.tab.IterOf(raw, '{')
	if !ok {
		return dst, malformed(FamilyChat, "tool call is not an object")
	}
	var index, id, fn []byte
	for {
		k, v, ok := ti.Member()
		if !ok {
			break
		}
		switch string(jsonx.KeyName(k, &kb)) {
		case "index":
			index = v
		case "id":
			id = v
		case "function":
			fn = v
		}
	}
	idx, ok := jsonx.IntOf(index)
	if len(index) == 0 {
		idx, ok = 0, true
	}
	if !ok || idx < 0 || idx >= MaxParts {
		return dst, malformed(FamilyChat, "tool call index %q out of range", index)
	}
	var name, args string
	var err error
	fi, _ := c.s.tab.IterOf(fn, '{')
	for {
		k, v, ok := fi.Member()
		if !ok {
			break
		}
		switch string(jsonx.KeyName(k, &kb)) {
		case "name":
			name, err = c.optStr(v, "function name")
		case "arguments":
			args, err = c.optStr(v, "function arguments")
		}
		if err != nil {
			return dst, err
		}
	}
	ch := content.Channel{Choice: choice, Kind: content.ToolCall, Index: int(idx)}
	call, known := c.s.calls[ch]
	if !known {
		call = c.s.call(ch)
		st.opens(ch)
	}
	idStr, err := c.optStr(id, "tool call id")
	if err != nil {
		return dst, err
	}
	call.id, call.name = cmpOr(idStr, call.id), cmpOr(name, call.name)
	if !known {
		c.s.startCall(call)
		dst = append(dst, Item{Kind: ItemToolCallStart, Channel: ch, ID: call.id, Name: call.name})
	}
	if args != "" {
		dst = append(dst, Item{Kind: ItemDelta, Channel: ch, Text: args})
	}
	return dst, nil
}

func reasoningOf(reasoningContent, reasoning *string) (string, string) {
	if reasoningContent != nil && *reasoningContent != "" {
		return *reasoningContent, "reasoning_content"
	}
	if reasoning != nil && *reasoning != "" {
		return *reasoning, "reasoning"
	}
	return "", ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
