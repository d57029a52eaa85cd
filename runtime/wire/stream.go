package wire

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// Errors of Stream.Emit.
var (
	// ErrQueueFull: more than MaxQueued bytes wait behind a withheld tool call.
	ErrQueueFull = errors.New("wire: too much content queued behind a withheld tool call")
	// ErrObjectRewritten: the engine released an object snapshot that does not extend
	// what the client already received, which a stream cannot express.
	ErrObjectRewritten = errors.New("wire: released object does not extend what was sent")
)

// MaxQueued bounds the bytes a Stream keeps behind withheld tool calls.
const MaxQueued = 4 << 20

// codec is one family's stream format.
type codec interface {
	// decode appends the items of ev (a complete event) to dst and records in s.cur what
	// Emit needs.
	decode(dst []Item, ev *sse.Event) ([]Item, error)
	// rest appends what the client receives of ev itself once its releases are written:
	// ev as it is (or rewritten, when it repeats content that changed), or, when stripped,
	// ev without the content that the releases replaced (nothing when nothing is left).
	rest(dst []byte, ev *sse.Event, stripped bool) ([]byte, error)
	// appendDelta appends a text, reasoning or object delta event for ch.
	appendDelta(dst []byte, ch content.Channel, text []byte) []byte
	// appendToolCall appends the events of a complete tool call.
	appendToolCall(dst []byte, c *toolCall, args []byte) []byte
	// appendBlock appends the first part of the stream-block ending: the reason (as
	// Stream.reasonText spells it for the choice) and everything up to what carries the
	// usage; hole is the first withheld tool call still pending, nil when none.
	appendBlock(dst []byte, reason string, hole *qentry) []byte
	// appendBlockEnd appends the rest of the stream-block ending: the event that carries
	// the usage (the upstream's when known) and the terminator.
	appendBlockEnd(dst []byte) []byte
	// awaitsUsage reports whether the block's ending would carry the upstream's usage,
	// which has not arrived yet.
	awaitsUsage() bool
	// appendFailure appends the error event of a fail-closed failure.
	appendFailure(dst []byte, e *APIError) []byte
}

// toolCall is a tool call seen in the stream.
type toolCall struct {
	ch       content.Channel
	id, name string
	// item is family data: the Responses output item as added, for re-emission.
	item []byte
	// at is family data: the Responses output index.
	at      int
	emitted bool
}

// qentry is an entry of the queue behind withheld tool calls: bytes, or the hole a tool
// call will fill when it is released.
type qentry struct {
	data []byte
	hole bool
	call *toolCall
	// done is family data taken when the hole was made (Responses: how many output items
	// the client had seen completed).
	done int
	// said is whether the client had received answer text of the call's choice when the
	// hole was made: all of it was sent, what came after waits behind the hole.
	said bool
}

// cur is what Decode learned about the current event.
type cur struct {
	// deltas are the event's text, reasoning and object deltas, in order.
	deltas []curDelta
	// content: the event carries judged content (deltas or tool call content), so that
	// it is rewritten when its releases differ.
	content bool
	// withhold: the event carries tool call content and is never forwarded as it is.
	withhold bool
	// started are the tool calls the event starts.
	started []*toolCall
}

type curDelta struct {
	ch   content.Channel
	text string
}

// Stream decodes one streamed response of a family into items and encodes what the
// client receives. It keeps the upstream's identifiers (ids, model, created, indexes) as
// a template for the events it builds, and what the client has received so far, so that
// every event it emits is a valid provider event in the right place.
//
// Use per upstream event ev, in order:
//
//	items, err := s.Decode(items[:0], &ev)   // feed the items to the engine
//	out, err = s.Emit(out[:0], &ev, released) // released: what the engine released meanwhile
//
// and, when the engine stops the stream, AppendBlock or AppendFailure instead of Emit.
// Emit forwards ev.Raw unchanged when the releases are exactly the event's deltas, so
// allowed traffic stays byte for byte the provider's. Tool calls are never forwarded as
// they stream: Emit sends each one complete when its arguments are released; for
// Messages and Responses, whose clients require content in index order, whatever follows
// a withheld tool call waits behind it (at most MaxQueued bytes).
//
// A Stream is not safe for concurrent use.
type Stream struct {
	req Request
	c   codec
	// tab skips through the event being decoded.
	tab jsonx.SkipTable
	// noShapes turns the chat codec's shape path off (tests compare it with the walk).
	noShapes bool

	cur   cur
	calls map[content.Channel]*toolCall
	// ordered: content after a withheld tool call waits for it (Messages, Responses).
	ordered bool
	queue   []qentry
	queued  int
	// visible is the text the client has received per tracked channel; objects is the
	// upstream object text per object channel (for Snapshot).
	visible  map[content.Channel][]byte
	objects  map[content.Channel][]byte
	trackAll bool
	rel      []Release
	// rewritten is set once content was sent otherwise than in the upstream's events, so
	// that events repeating content must be compared with what the client received.
	rewritten bool
	// said records, per choice, that answer text (text or object) was released.
	said map[int]bool
	// usage is the upstream's usage object as it sent it (chat usage, Messages
	// message_delta usage, Responses response.usage), nil until it arrives.
	usage []byte
	// blockReason is the reason of a block, kept for the ending's second part.
	blockReason string
}

// NewStream returns the Stream of a streamed response to req. It returns nil for
// FamilyEmbeddings, which does not stream.
func NewStream(req *Request) *Stream {
	s := &Stream{req: *req, calls: map[content.Channel]*toolCall{}, visible: map[content.Channel][]byte{}, objects: map[content.Channel][]byte{},
		said: map[int]bool{}}
	s.req.Messages, s.req.Tools = nil, nil
	s.req.N = min(max(s.req.N, 1), MaxChoices)
	switch req.Family {
	case FamilyChat:
		s.c = newChatCodec(s)
	case FamilyResponses:
		s.c, s.ordered, s.trackAll = newResponsesCodec(s), true, true
	case FamilyMessages:
		s.c, s.ordered = newMessagesCodec(s), true
	case FamilyGemini:
		s.c = newGeminiCodec(s)
	default:
		return nil
	}
	return s
}

// Decode appends the items of an upstream event to dst. Comments (keep-alives) are an
// ItemPass; an incomplete event (the upstream ended inside one) is malformed. Errors
// match ErrMalformed.
func (s *Stream) Decode(dst []Item, ev *sse.Event) ([]Item, error) {
	s.cur.deltas, s.cur.started = s.cur.deltas[:0], s.cur.started[:0]
	s.cur.content, s.cur.withhold = false, false
	switch {
	case ev.Kind == sse.KindComment:
		return append(dst, Item{Kind: ItemPass}), nil
	case ev.Kind == sse.KindIncomplete:
		return dst, malformed(s.req.Family, "stream ended inside an event")
	case !ev.HasData:
		return append(dst, Item{Kind: ItemPass}), nil
	}
	n := len(dst)
	dst, err := s.c.decode(dst, ev)
	s.tab.Release() // the reader reuses the event's buffer
	if err != nil {
		return dst[:n], err
	}
	for i := n; i < len(dst); i++ {
		it := &dst[i]
		switch {
		case it.Kind == ItemDelta && it.Channel.Kind == content.ToolCall, it.Kind == ItemToolCallStart:
			s.cur.content, s.cur.withhold = true, true
		case it.Kind == ItemDelta:
			s.cur.content = true
			s.cur.deltas = append(s.cur.deltas, curDelta{ch: it.Channel, text: it.Text})
			if it.Channel.Kind == content.Object {
				o := append(s.objects[it.Channel], it.Text...)
				s.objects[it.Channel] = o
				it.Snapshot = string(o)
			}
		}
	}
	return dst, nil
}

// call returns the tool call of ch, creating it.
func (s *Stream) call(ch content.Channel) *toolCall {
	c := s.calls[ch]
	if c == nil {
		c = &toolCall{ch: ch}
		s.calls[ch] = c
	}
	return c
}

// startCall records that the current event starts tool call ch.
func (s *Stream) startCall(c *toolCall) { s.cur.started = append(s.cur.started, c) }

// Emit appends to dst what the client receives for the upstream event ev (the event last
// passed to Decode, or nil when the engine released content without an event, at the
// end of the stream), given rel, the content the engine released while ev's items were
// fed to it, in order.
func (s *Stream) Emit(dst []byte, ev *sse.Event, rel []Release) ([]byte, error) {
	if ev != nil && ev.Kind == sse.KindComment && len(rel) == 0 {
		// Keep-alives carry no content and no order: they never wait behind a tool call.
		return append(dst, ev.Raw...), nil
	}
	rel, err := s.normalize(rel)
	if err != nil {
		return dst, err
	}
	out := dst
	whole := ev != nil && !s.cur.withhold && s.sameAsDeltas(rel)
	for i := range rel {
		r := &rel[i]
		switch {
		case whole:
			s.see(r.Channel, r.Text)
		case r.Channel.Kind == content.ToolCall:
			out = s.releaseCall(out, r)
		case len(r.Text) == 0:
		default:
			s.rewritten = true
			b := s.sink(out)
			b = s.c.appendDelta(b, r.Channel, r.Text)
			out = s.unsink(out, b)
			s.see(r.Channel, r.Text)
		}
	}
	if ev != nil {
		if s.ordered {
			for _, c := range s.cur.started {
				s.hole(c)
			}
		}
		b := s.sink(out)
		b, err = s.c.rest(b, ev, s.cur.content && !whole)
		out = s.unsink(out, b)
	}
	if err == nil && s.queued > MaxQueued {
		err = ErrQueueFull
	}
	return out, err
}

// normalize turns object snapshots into the text they add to what was released.
func (s *Stream) normalize(rel []Release) ([]Release, error) {
	replace := false
	for i := range rel {
		replace = replace || rel[i].Replace
	}
	if !replace {
		return rel, nil
	}
	s.rel = append(s.rel[:0], rel...)
	for i := range s.rel {
		r := &s.rel[i]
		if !r.Replace {
			continue
		}
		// Earlier releases of this event count as sent.
		sent := append(append([]byte(nil), s.visible[r.Channel]...), pendingText(s.rel[:i], r.Channel)...)
		if !bytes.HasPrefix(r.Text, sent) {
			// Spelled with the index, which Channel.String leaves out of all but tool calls:
			// it tells apart the object parts of a Messages or Responses answer.
			return nil, fmt.Errorf("%w: choice[%d].%s[%d]", ErrObjectRewritten, r.Channel.Choice, r.Channel.Kind, r.Channel.Index)
		}
		r.Text, r.Replace = r.Text[len(sent):], false
	}
	return s.rel, nil
}

func pendingText(rel []Release, ch content.Channel) []byte {
	var b []byte
	for _, r := range rel {
		if r.Channel == ch {
			b = append(b, r.Text...)
		}
	}
	return b
}

// sameAsDeltas reports whether rel is exactly the current event's deltas.
func (s *Stream) sameAsDeltas(rel []Release) bool {
	if len(rel) != len(s.cur.deltas) {
		return false
	}
	for i, d := range s.cur.deltas {
		if rel[i].Channel != d.ch || string(rel[i].Text) != d.text {
			return false
		}
	}
	return true
}

// see records text the client receives on ch.
func (s *Stream) see(ch content.Channel, text []byte) {
	if s.trackAll || ch.Kind == content.Object {
		s.visible[ch] = append(s.visible[ch], text...)
	}
	if len(text) > 0 && (ch.Kind == content.Text || ch.Kind == content.Object) {
		s.said[ch.Choice] = true
	}
}

// keepUsage records the upstream's usage object (a copy), unless it is null.
func (s *Stream) keepUsage(raw []byte) {
	if !jsonx.IsNullValue(raw) {
		s.usage = append(s.usage[:0], raw...)
	}
}

// BlockSeparator goes before a block's reason when the client already received answer
// text in the choice, so that the reason never runs on from the partial answer ("…the
// model keep" + "The answer was stopped…"), whether the reason continues that text or
// starts a new block or item that SDKs join to it (openai-go's OutputText, the Node SDKs'
// output_text and finalText).
const BlockSeparator = "\n\n"

// reasonText returns the text a block appends to choice: the reason, after
// BlockSeparator when the client received answer text in the choice before the block
// (before the pending hole, when a withheld tool call holds later content back).
func (s *Stream) reasonText(choice int, reason string, hole *qentry) []byte {
	said := s.said[choice]
	if hole != nil && hole.call.ch.Choice == choice {
		said = hole.said
	}
	if !said {
		return []byte(reason)
	}
	return append([]byte(BlockSeparator), reason...)
}

// visibleText returns what the client received on ch (tracked channels only).
func (s *Stream) visibleText(ch content.Channel) []byte { return s.visible[ch] }

// releaseCall sends a released tool call complete: in its hole when it has one, which
// may let queued content follow.
func (s *Stream) releaseCall(out []byte, r *Release) []byte {
	c := s.call(r.Channel)
	if c.emitted {
		return out
	}
	c.emitted = true
	for i := range s.queue {
		q := &s.queue[i]
		if q.hole && q.call == c {
			q.data = s.c.appendToolCall(q.data, c, r.Text)
			q.hole = false
			s.queued += len(q.data)
			return s.flush(out)
		}
	}
	b := s.sink(out)
	b = s.c.appendToolCall(b, c, r.Text)
	return s.unsink(out, b)
}

// hole queues a place for tool call c: what follows waits until it is released.
func (s *Stream) hole(c *toolCall) {
	if c.emitted {
		return
	}
	s.queue = append(s.queue, qentry{hole: true, call: c, done: s.holeData(), said: s.said[c.ch.Choice]})
}

// holeData is family data kept with a hole.
func (s *Stream) holeData() int {
	if r, ok := s.c.(*responsesCodec); ok {
		return len(r.done)
	}
	return 0
}

// flush moves the queued content that no hole holds back anymore to out.
func (s *Stream) flush(out []byte) []byte {
	i := 0
	for ; i < len(s.queue) && !s.queue[i].hole; i++ {
		out = append(out, s.queue[i].data...)
		s.queued -= len(s.queue[i].data)
	}
	s.queue = append(s.queue[:0], s.queue[i:]...)
	return out
}

// sink returns the buffer new content goes to: out, or the queue's tail when a hole
// holds content back. Pair with unsink.
func (s *Stream) sink(out []byte) []byte {
	if len(s.queue) == 0 {
		return out
	}
	if s.queue[len(s.queue)-1].hole {
		s.queue = append(s.queue, qentry{})
	}
	return s.queue[len(s.queue)-1].data
}

// unsink stores b, the buffer sink returned after appending to it.
func (s *Stream) unsink(out, b []byte) []byte {
	if len(s.queue) == 0 {
		return b
	}
	q := &s.queue[len(s.queue)-1]
	s.queued += len(b) - len(q.data)
	q.data = b
	return out
}

// pendingHole returns the first withheld tool call still pending, nil when none.
func (s *Stream) pendingHole() *qentry {
	if len(s.queue) > 0 && s.queue[0].hole {
		return &s.queue[0]
	}
	return nil
}

// AppendDelta appends an event that adds text to channel ch (text, reasoning or object),
// built on the upstream's identifiers, and records it as sent. Emit uses it for content
// that differs from the upstream's events.
func (s *Stream) AppendDelta(dst []byte, ch content.Channel, text []byte) []byte {
	s.rewritten = true
	s.see(ch, text)
	return s.c.appendDelta(dst, ch, text)
}

// AppendToolCall appends the events of the complete tool call ch with the given
// arguments (its id and name as the upstream sent them) and records it as sent.
func (s *Stream) AppendToolCall(dst []byte, ch content.Channel, args []byte) []byte {
	c := s.call(ch)
	c.emitted = true
	return s.c.appendToolCall(dst, c, args)
}

// AppendBlock appends the end of a blocked stream: the guardrail's reason
// as content with the family's content-filter finish, then the normal terminator. It is
// AppendBlockReason followed by AppendBlockEnd. The stream is over: write the result and
// close.
//
// A block never takes back what the client received; everything it did not receive yet
// (held-back text, withheld tool calls, content queued behind them) is replaced by the
// reason, which follows BlockSeparator when answer text was received before it.
func (s *Stream) AppendBlock(dst []byte, reason string) []byte {
	return s.AppendBlockEnd(s.AppendBlockReason(dst, reason))
}

// AppendBlockReason appends the first part of a block's ending: the reason and the
// content-filter finish (chat: the reason chunk and the finish chunk of every unfinished
// choice; Messages: the reason's text block; Responses: the reason's output item). Content
// queued behind a withheld tool call is dropped, the call with it. AppendBlockEnd must
// follow; in between, the caller may read on from the upstream, passing its events to
// Decode (never to Emit), while AwaitsUsage holds.
func (s *Stream) AppendBlockReason(dst []byte, reason string) []byte {
	var hole *qentry
	if h := s.pendingHole(); h != nil {
		c := *h
		hole = &c
	}
	s.queue, s.queued = s.queue[:0], 0
	s.blockReason = reason
	return s.c.appendBlock(dst, reason, hole)
}

// AwaitsUsage reports whether the block's ending would carry the upstream's token usage
// (chat: when the request asked for it with stream_options.include_usage; Messages and
// Responses: always), which the upstream has not sent yet. When the usage is not known by
// AppendBlockEnd, the chat ending has no usage chunk, the Messages message_delta repeats
// the last output token count the upstream sent, and the Responses response has usage
// null.
func (s *Stream) AwaitsUsage() bool { return s.c.awaitsUsage() }

// AppendBlockEnd appends the rest of a block's ending: the usage (the upstream's own,
// when it arrived) and the terminator (chat: a usage chunk and [DONE]; Messages:
// message_delta with stop_reason refusal and message_stop; Responses: response.incomplete
// for content_filter).
func (s *Stream) AppendBlockEnd(dst []byte) []byte { return s.c.appendBlockEnd(dst) }

// AppendFailure appends the error event of a fail-closed evaluation failure, code policy_evaluation_failed, which the official SDKs surface as a stream error.
// Queued content is dropped. The stream is over: write the result and close without a
// terminator.
func (s *Stream) AppendFailure(dst []byte, guardrail string) []byte {
	s.queue, s.queued = s.queue[:0], 0
	e := Failed(guardrail)
	return s.c.appendFailure(dst, &e)
}
