package engine

import (
	"context"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// channel is the state of one streamed channel.
type channel struct {
	id    content.Channel
	ended bool
	// t is the channel's upstream text (append channels), from t.base on.
	t textBuf
	// released is how far t has been released to the client.
	released pos
	// cur holds, per stream guard, its cursor on this channel.
	cur []cursor
	// starts is a ring of the start positions of the last deltas (chunkWindow); deltas
	// counts the deltas seen.
	starts []pos
	deltas int
	// sentenceEnd is the end of the last complete sentence seen (Sentences).
	sentenceEnd pos
	// head is the rendered text [0, t.base), kept up to the engine's headChars for the
	// Output phase; headRunes its length in characters.
	head      []byte
	headRunes int
	// trimAt is the buffer length at which the next trim is tried.
	trimAt int

	// obj is the current snapshot of the object channel; objEdits the number of its edits
	// when it was released (objReleased).
	obj         *textBuf
	objReleased bool
	objEdits    int

	// call is a tool call's judged text (name and arguments), set when it ends.
	call string
}

// cursor is a stream guard's progress on a channel.
type cursor struct {
	// classified is classifiedUpTo: how far the channel has been sent to the classifier.
	classified pos
	// settled is how far the channel is settled for a span-capable classifier: judged, and
	// not pending (classify.Result.Open). It never passes classified and never moves back.
	settled pos
	// overlap is where the previous sentence starts (Sentences).
	overlap pos
	// skipped: a cadence evaluation was skipped because maxEvaluations was reached.
	skipped bool
	// judged: the current object snapshot has been judged.
	judged bool
}

// minTrim is the buffer size under which a channel never trims: small channels keep
// everything and pay no copying.
const minTrim = 4096

func (s *Session) channel(ch content.Channel) *channel {
	if s.last != nil && s.last.id == ch {
		return s.last // a stream's deltas come on one channel at a time
	}
	c := s.chans[ch]
	if c == nil {
		c = &channel{id: ch, cur: make([]cursor, len(s.e.stream)), trimAt: minTrim}
		if s.e.window > 0 {
			c.starts = make([]pos, s.e.window)
		}
		s.chans[ch] = c
		s.order = append(s.order, c)
	}
	s.last = c
	return c
}

// begin checks that the session accepts an event on ch and resets the step's buffers.
func (s *Session) begin(ch content.Channel, wrong func(content.Kind) bool) (*channel, error) {
	switch {
	case s.finished:
		return nil, ErrFinished
	case wrong(ch.Kind):
		return nil, ErrWrongChannel
	}
	c := s.channel(ch)
	if c.ended {
		return nil, ErrChannelEnded
	}
	s.release, s.scratch = s.release[:0], s.scratch[:0]
	return c, nil
}

// end turns the outcome of a step into its answer: a verdict ends the session and
// releases nothing of this step.
func (s *Session) end(v *Verdict, err error) (Step, error) {
	if err != nil {
		return Step{}, err
	}
	if v != nil {
		s.stop, s.release = v, s.release[:0]
		return Step{Stop: v}, nil
	}
	return Step{Release: s.release}, nil
}

// Delta takes the next text of a channel (text, reasoning, or a tool call's arguments)
// and answers what to release now. Evaluations run when a guard's cadence is due; text is
// released up to the stream's hold-back; a tool call's arguments are withheld until Finish.
// When nothing is due the call does not allocate.
func (s *Session) Delta(ctx context.Context, ch content.Channel, text string) (Step, error) {
	if s.stop != nil {
		return Step{Stop: s.stop}, nil
	}
	c, err := s.begin(ch, func(k content.Kind) bool { return k == content.Object })
	if err != nil || text == "" {
		return Step{}, err
	}
	c.trim(s.e)
	start := c.t.total
	c.t.append(text)
	if c.starts != nil {
		c.starts[c.deltas%len(c.starts)] = start
	}
	c.deltas++
	if s.e.sentences {
		c.findSentenceEnd(start)
	}
	if due := s.due(c); len(due) > 0 {
		if v, err := s.cadence(ctx, c, due, false); v != nil || err != nil {
			return s.end(v, err)
		}
	}
	return s.end(s.releaseHeld(ctx, c))
}

// due returns the stream guards whose cadence is due on c: the channel has grown by at
// least evaluateEveryChars since the guard's cursor (and, with Sentences, a sentence is
// complete or the pending text reached maxInputChars). A guard past maxEvaluations is not
// due; the first time that happens on a channel it records notInspected, partial.
func (s *Session) due(c *channel) []*guard {
	due := s.dueBuf[:0]
	for _, gd := range s.e.stream {
		cu := &c.cur[gd.slot]
		st := &gd.g.Streaming
		grown := c.t.total.r - cu.classified.r
		if grown <= 0 || grown < st.EvaluateEveryChars {
			continue
		}
		if st.Sentences && c.sentenceEnd.b <= cu.classified.b && (gd.maxChars == 0 || grown < gd.maxChars) {
			continue
		}
		if st.MaxEvaluations > 0 && s.evals[gd.slot] >= st.MaxEvaluations {
			if !cu.skipped {
				cu.skipped = true
				s.emit(Record{Guardrail: gd.g.Key, Generation: gd.g.Generation, Classifier: gd.g.Classifier,
					Phase: policy.PhaseStream, Where: channelLocation(c.id), Outcome: guardv1.OutcomeNotInspected,
					Mode: gd.g.Mode, Partial: true})
			}
			continue
		}
		due = append(due, gd)
	}
	s.dueBuf = due
	return due
}

// cadence runs the stream evaluations of the due guards on c (terminal: at the channel's
// end, on the text left below the cadence, not counted against maxEvaluations). Redact
// rewrites held text; Strip drops the text not yet released; on a tool call both act as
// Block.
func (s *Session) cadence(ctx context.Context, c *channel, due []*guard, terminal bool) (*Verdict, error) {
	r := &s.round
	if r.kept == nil {
		r.kept = make([]cadenceResult, len(s.e.stream))
	}
	r.s, r.c, r.terminal = s, c, terminal
	r.where, r.t = channelLocation(c.id), target{tool: c.id.Kind == content.ToolCall}
	return s.compose(ctx, due, r)
}

// cadenceRound is a round of stream evaluations on one channel; kept holds, per stream
// guard, the evaluation judge made for apply.
type cadenceRound struct {
	s        *Session
	c        *channel
	terminal bool
	where    Location
	t        target
	kept     []cadenceResult
}

type cadenceResult struct {
	ev evaluation
	w  window
}

func (r *cadenceRound) judge(ctx context.Context, _ int, gd *guard) bool {
	s, c := r.s, r.c
	cu := &c.cur[gd.slot]
	text, w := c.window(gd, r.terminal, &s.windows[gd.slot])
	if blank(text) {
		cu.settle(w.to)
		return false
	}
	if !r.terminal {
		s.evals[gd.slot]++
	}
	k := &r.kept[gd.slot]
	k.ev, k.w = evaluate(ctx, gd, classify.Input{Text: text, More: !r.terminal}), w
	k.ev.partial = r.terminal && cu.skipped
	return true
}

func (r *cadenceRound) apply(_ int, gd *guard) *Verdict {
	s, c := r.s, r.c
	cu := &c.cur[gd.slot]
	k := &r.kept[gd.slot]
	a, v := s.decide(gd, policy.PhaseStream, r.where, &k.ev, r.t)
	switch {
	case k.ev.code != "":
		// Failed open: the text passes uninspected, nothing is pending.
		cu.settle(k.w.to)
	default:
		cu.settle(c.t.upstreamPos(&k.w, k.ev.open))
	}
	switch a {
	case policy.ActionRedact:
		c.t.redact(&k.w, k.ev.j.spans, gd.c.Categories, c.released)
	case policy.ActionStrip:
		c.t.strip(c.released, c.t.total)
	}
	k.ev = evaluation{} // the findings and spans go with the record
	return v
}

// settle moves the settled position forward to p, never past classified.
func (cu *cursor) settle(p pos) {
	if p.b > cu.classified.b {
		p = cu.classified
	}
	if p.b > cu.settled.b {
		cu.settled = p
	}
}

// releaseHeld releases the text of c that no Enforce stream guard withholds, never
// splitting a marker. A guard with a fixed hold-back withholds the last
// holdBack characters; one that follows pending matches withholds everything from where
// its classifier's judged text stops being settled; a span-capable classifier's pending
// text is withheld whatever the hold-back. A tool call's arguments and, under Unbounded,
// every channel wait for their end. The verdict is the cluster tier's on restored text
// (releaseTo).
func (s *Session) releaseHeld(ctx context.Context, c *channel) (*Verdict, error) {
	if c.id.Kind == content.ToolCall || s.e.holdBack == policy.HoldBackUnbounded {
		return nil, nil
	}
	limit, hb := c.t.total, max(s.e.holdBack, 0)
	if s.e.pending {
		limit, hb = s.pendingLimit(c, hb)
	}
	if n := c.t.total.r - hb; n < limit.r {
		if n <= c.released.r {
			return nil, nil
		}
		limit = c.t.forward(c.released, n-c.released.r)
	}
	return s.releaseTo(ctx, c, c.t.snapBack(limit))
}

// pendingLimit returns where the Enforce stream guards that look at pending text stop c's
// release, and the fixed hold-back raised by those past maxEvaluations.
func (s *Session) pendingLimit(c *channel, hb int) (pos, int) {
	limit := c.t.total
	for _, gd := range s.e.stream {
		if !gd.enforcing() {
			continue
		}
		cu := &c.cur[gd.slot]
		follows := gd.g.Streaming.HoldBack == policy.HoldBackPending
		switch {
		case follows && cu.skipped:
			// Past maxEvaluations nothing is judged any more: the classifier's longest
			// match is withheld, as a fixed hold-back would.
			hb = max(hb, gd.hint)
		case follows && !gd.spans:
			// No classifier to report pending text (not configured): what is judged.
			limit = minPos(limit, cu.classified)
		case follows, c.incremental(gd) && cu.settled.b < cu.classified.b:
			// Text not judged yet is withheld too: the next evaluation may find it pending.
			limit = minPos(limit, cu.settled)
		}
	}
	return limit, hb
}

func minPos(a, b pos) pos {
	if b.b < a.b {
		return b
	}
	return a
}

// releaseTo releases c's text up to p, with the answer's placeholders restored: a
// placeholder still arriving at p is withheld until it is whole (restoreRelease). When
// the release restores a value a namespaced Guardrail masked, the ClusterGuardrails of the
// Stream phase judge it restored first (restored.go): their block releases nothing, their
// redaction keeps the value from being restored.
func (s *Session) releaseTo(ctx context.Context, c *channel, p pos) (*Verdict, error) {
	if p.b <= c.released.b {
		return nil, nil
	}
	var rs []restoration
	if p, rs = s.restoreRelease(c, p); p.b <= c.released.b {
		return nil, nil
	}
	if s.restoresFor(policy.PhaseStream) {
		if tenant := onlyTenant(rs); len(tenant) > 0 {
			it := &item{where: channelLocation(c.id), floor: c.released, held: true, tool: c.id.Kind == content.ToolCall}
			if v, err := s.judgeRestored(ctx, policy.PhaseStream, &c.t, c.released, p, tenant, it, never); v != nil || err != nil {
				return v, err
			}
			// A Strip dropped the rest: p may be inside it now.
			if p, rs = s.restoreRelease(c, c.t.snapBack(p)); p.b <= c.released.b {
				return nil, nil
			}
		}
	}
	var text []byte
	if len(rs) > 0 || c.t.edited(c.released.b, p.b) {
		n := len(s.scratch)
		s.scratch = c.t.renderRestored(s.scratch, c.released.b, p.b, rs)
		text = s.scratch[n:]
	} else {
		text = c.t.bytes(c.released.b, p.b)
	}
	c.released = p
	if len(text) > 0 {
		s.release = append(s.release, Chunk{Channel: c.id, Text: text})
	}
	return nil, nil
}

// EndChannel ends a text, reasoning or object channel: the text left below the cadence is
// classified (Stream phase), then the whole channel (Output phase), before the rest is
// released. Use EndToolCall for tool calls.
func (s *Session) EndChannel(ctx context.Context, ch content.Channel) (Step, error) {
	if s.stop != nil {
		return Step{Stop: s.stop}, nil
	}
	c, err := s.begin(ch, func(k content.Kind) bool { return k == content.ToolCall })
	if err != nil {
		return Step{}, err
	}
	return s.end(s.endChannel(ctx, c))
}

// EndToolCall ends a tool call's arguments: the text left below the cadence is classified
// (Stream phase), then the whole arguments (Output phase, as in a non-streamed answer),
// then the call, name and arguments, is judged alone (ToolCalls phase). The call is
// released by Finish, after a choice's calls are judged together.
func (s *Session) EndToolCall(ctx context.Context, ch content.Channel, name string) (Step, error) {
	if s.stop != nil {
		return Step{Stop: s.stop}, nil
	}
	c, err := s.begin(ch, func(k content.Kind) bool { return k != content.ToolCall })
	if err != nil {
		return Step{}, err
	}
	return s.end(s.endToolCall(ctx, c, name))
}

func (s *Session) endToolCall(ctx context.Context, c *channel, name string) (*Verdict, error) {
	c.ended = true
	if v, err := s.terminal(ctx, c); v != nil || err != nil {
		return v, err
	}
	args := &item{where: channelLocation(c.id), doc: newTextBuf(c.t.String()), tool: true}
	if v, err := s.judgeItems(ctx, policy.PhaseOutput, []*item{args}, always, never); v != nil || err != nil {
		return v, err
	}
	restored := &item{where: channelLocation(c.id), tool: true}
	if v, err := s.judgeRestoredWhole(ctx, policy.PhaseOutput, &c.t, c.t.base, c.t.total, true, nil, restored, never); v != nil || err != nil {
		return v, err
	}
	// ToolCalls guardrails judge the call as the tool will receive it: restored.
	c.call = toolCallText(name, s.vault.restore(c.t.String(), true))
	it := &item{where: channelLocation(c.id), doc: newTextBuf(c.call), tool: true}
	return s.judgeItems(ctx, policy.PhaseToolCalls, []*item{it}, always, never)
}

// terminal classifies, for every stream guard, the text of c its cursor has not reached,
// or that its classifier left pending: the end of the channel decides it.
func (s *Session) terminal(ctx context.Context, c *channel) (*Verdict, error) {
	due := s.dueBuf[:0]
	for _, gd := range s.e.stream {
		cu := &c.cur[gd.slot]
		if cu.classified.b < c.t.total.b || c.incremental(gd) && cu.settled.b < c.t.total.b {
			due = append(due, gd)
		}
	}
	s.dueBuf = due
	if len(due) == 0 {
		return nil, nil
	}
	return s.cadence(ctx, c, due, true)
}

func (s *Session) endChannel(ctx context.Context, c *channel) (*Verdict, error) {
	if c.id.Kind == content.Object {
		return s.endObject(ctx, c)
	}
	c.ended = true
	if v, err := s.terminal(ctx, c); v != nil || err != nil {
		return v, err
	}
	it := &item{where: channelLocation(c.id), doc: &c.t, prefix: c.head, floor: c.released, held: true}
	if v, err := s.judgeItems(ctx, policy.PhaseOutput, []*item{it}, always, wholeOutput); v != nil || err != nil {
		return v, err
	}
	restored := &item{where: channelLocation(c.id), floor: c.released, held: true}
	if v, err := s.judgeRestoredWhole(ctx, policy.PhaseOutput, &c.t, c.t.base, c.t.total, restoresJSON(c.id.Kind), c.head, restored, wholeOutput); v != nil || err != nil {
		return v, err
	}
	return s.releaseTo(ctx, c, c.t.total)
}

// Finish ends the stream: every open channel is ended as EndChannel and EndToolCall do
// (tool calls without a name), each choice's tool calls are judged together when it has
// more than one, and the withheld tool calls are released, one chunk per call.
func (s *Session) Finish(ctx context.Context) (Step, error) {
	if s.stop != nil {
		return Step{Stop: s.stop}, nil
	}
	if s.finished {
		return Step{}, ErrFinished
	}
	s.release, s.scratch = s.release[:0], s.scratch[:0]
	var calls []*item
	for _, c := range s.order {
		if !c.ended {
			var v *Verdict
			var err error
			if c.id.Kind == content.ToolCall {
				v, err = s.endToolCall(ctx, c, "")
			} else {
				v, err = s.endChannel(ctx, c)
			}
			if v != nil || err != nil {
				return s.end(v, err)
			}
		}
		if c.id.Kind == content.ToolCall {
			calls = append(calls, &item{where: channelLocation(c.id), doc: newTextBuf(c.call)})
		}
	}
	if v, err := s.judgeTogether(ctx, calls); v != nil || err != nil {
		return s.end(v, err)
	}
	for _, c := range s.order {
		if c.id.Kind == content.ToolCall {
			if v, err := s.releaseTo(ctx, c, c.t.total); v != nil || err != nil {
				return s.end(v, err)
			}
		}
	}
	s.finished = true
	return s.end(nil, nil)
}
