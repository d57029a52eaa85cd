package extproc

import (
	"bytes"
	"errors"
	"io"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// streamer judges a streamed answer as Envoy hands it over, chunk by chunk (STREAMED
// response body mode). Each chunk's bytes join what is left of the previous ones; every
// event they complete is decoded and fed to the engine, as the guard's proxy does, and
// the chunk is replaced by the bytes encoded from what the engine releases — possibly
// none. An event split across chunks waits, whole, for the chunk that completes it, and
// text the hold-back withholds waits in the engine: no byte of a blocked or redacted
// entity reaches the client, wherever the chunks are cut. At the end of the body the
// engine's terminal evaluation judges what it still holds, and the last chunk carries
// the rest.
type streamer struct {
	x  *exchange
	st *wire.Stream
	rd *sse.Reader
	// src feeds rd the pending bytes of one chunk.
	src bytes.Reader
	// pending is the start of an event that no chunk has completed yet.
	pending []byte
	items   []wire.Item
	rel     []wire.Release
	arena   []byte
	// ends[i] is where the text of rel[i] ends in arena.
	ends []int
	// out is what the chunk being answered releases. It is reused for the next chunk:
	// the answer that carries it is sent before the next message is read.
	out []byte
	// ev is the event being handled: a field, so that reading one does not allocate it.
	ev sse.Event
	// finished: the engine's Finish was called. done: the client's answer has its end
	// (its terminator, a verdict or a failure); later bytes are withheld.
	finished, done bool
	// awaiting is set while a block waits for the upstream's usage (see awaitUsage),
	// until awaitUntil.
	awaiting   bool
	awaitUntil time.Time
	// held is the bytes fed to the engine minus the bytes it released; reported is what
	// the held-back gauge has been told.
	held, reported int
}

func newStreamer(x *exchange) *streamer {
	return &streamer{x: x, st: wire.NewStream(&x.req), rd: sse.NewReader(nil, 0)}
}

// chunk takes one chunk of the upstream's body and returns what replaces it. eos marks
// the body's last chunk.
func (s *streamer) chunk(b []byte, eos bool) []byte {
	s.out = s.out[:0]
	if s.done && !s.awaiting {
		return nil
	}
	start := time.Now()
	s.pending = append(s.pending, b...)
	// The reader parses from the first pending byte on each chunk: an incomplete event is
	// read again, whole, when the chunk that completes it arrives.
	s.src.Reset(s.pending)
	s.rd.Reset(&s.src)
	consumed := len(s.pending)
	for !s.done || s.awaiting {
		var err error
		s.ev, err = s.rd.Next()
		ev := &s.ev
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.malformed(err)
			break
		}
		if ev.Kind == sse.KindIncomplete {
			consumed -= len(ev.Raw)
			break
		}
		if s.awaiting {
			s.usageEvent(ev)
			continue
		}
		s.event(ev)
	}
	if s.done && !s.awaiting {
		consumed = len(s.pending) // nothing after the answer's end is read
	}
	s.pending = s.pending[:copy(s.pending, s.pending[consumed:])]
	if s.awaiting && (!time.Now().Before(s.awaitUntil) || eos) {
		s.blockEnd()
	}
	if eos && !s.done {
		s.end()
	}
	s.reportHeld()
	s.x.s.cfg.Telemetry.Added(s.x.family, time.Since(start))
	return s.out
}

// event handles one complete upstream event: its items go to the engine, and what the
// engine releases (with the event's own remainder) is appended to the chunk's output.
func (s *streamer) event(ev *sse.Event) {
	var err error
	s.items, err = s.st.Decode(s.items[:0], ev)
	if err != nil {
		s.malformed(err)
		return
	}
	s.rel, s.arena, s.ends = s.rel[:0], s.arena[:0], s.ends[:0]
	terminated := false
	for i := range s.items {
		it := &s.items[i]
		step, err := s.feed(it)
		if err != nil {
			s.stopped(err)
			return
		}
		s.keep(step.Release)
		if step.Stop != nil {
			s.emit(nil)
			s.stop(step.Stop)
			return
		}
		terminated = terminated || it.Kind == wire.ItemTerminator
	}
	if !s.emit(ev) {
		return
	}
	if terminated {
		s.done = true
		s.x.outcome("allowed")
	}
}

// feed gives one item to the engine, as the guard's proxy does.
func (s *streamer) feed(it *wire.Item) (engine.Step, error) {
	ctx, session := s.x.ctx, s.x.session
	ch := it.Channel
	switch it.Kind {
	case wire.ItemDelta:
		if ch.Kind == content.Object {
			return session.Snapshot(ctx, ch, it.Snapshot)
		}
		s.held += len(it.Text)
		return session.Delta(ctx, ch, it.Text)
	case wire.ItemChannelEnd:
		if ch.Kind == content.ToolCall {
			return session.EndToolCall(ctx, ch, it.Name)
		}
		return session.EndChannel(ctx, ch)
	case wire.ItemFinish:
		if it.Final {
			return s.finish()
		}
	case wire.ItemTerminator:
		return s.finish()
	}
	return engine.Step{}, nil
}

func (s *streamer) finish() (engine.Step, error) {
	if s.finished {
		return engine.Step{}, nil
	}
	s.finished = true
	return s.x.session.Finish(s.x.ctx)
}

// keep copies released chunks into the arena: chunk text is only valid until the next
// engine call.
func (s *streamer) keep(chunks []engine.Chunk) {
	for _, c := range chunks {
		s.arena = append(s.arena, c.Text...)
		s.ends = append(s.ends, len(s.arena))
		s.rel = append(s.rel, wire.Release{Channel: c.Channel, Replace: c.Replace})
		if c.Channel.Kind != content.Object {
			s.held -= len(c.Text)
		}
	}
}

// emit encodes the releases (with ev's own remainder when ev is not nil) into the
// chunk's output.
func (s *streamer) emit(ev *sse.Event) bool {
	start := 0
	for i := range s.rel {
		s.rel[i].Text = s.arena[start:s.ends[i]]
		start = s.ends[i]
	}
	if ev == nil && len(s.rel) == 0 {
		return true
	}
	var err error
	if s.out, err = s.st.Emit(s.out, ev, s.rel); err != nil {
		s.malformed(err)
		return false
	}
	return true
}

// end handles the end of the upstream's body: an event cut in the middle is a failure;
// otherwise what the engine still holds is judged (terminal evaluation) and released.
func (s *streamer) end() {
	if len(s.pending) > 0 {
		s.pending = s.pending[:0]
		s.malformed(errors.New("upstream stream ended inside an event"))
		return
	}
	step, err := s.finish()
	if err != nil {
		s.stopped(err)
		return
	}
	s.rel, s.arena, s.ends = s.rel[:0], s.arena[:0], s.ends[:0]
	s.keep(step.Release)
	s.emit(nil)
	if step.Stop != nil {
		s.stop(step.Stop)
		return
	}
	s.done = true
	s.x.outcome("allowed")
}

// usageWait bounds how long a blocked stream waits for the upstream's usage before it
// ends its answer, as the guard's proxy does.
const usageWait = 500 * time.Millisecond

// stop ends the client's answer with a verdict: the block's reason and the normal
// terminator, or the failure's error event. A block whose ending would carry the
// upstream's token usage waits for it (at most usageWait, or the end of the body),
// reading on without passing anything else.
func (s *streamer) stop(v *engine.Verdict) {
	s.done = true
	tel := s.x.s.cfg.Telemetry
	if v.Kind == engine.Failed {
		s.x.outcome("failed")
		tel.Aborted("failed")
		s.out = s.st.AppendFailure(s.out, v.Guardrail)
		return
	}
	s.x.outcome("blocked")
	tel.Aborted("blocked")
	s.out = s.st.AppendBlockReason(s.out, v.Reason)
	if s.st.AwaitsUsage() {
		s.awaiting, s.awaitUntil = true, time.Now().Add(usageWait)
		return
	}
	s.out = s.st.AppendBlockEnd(s.out)
}

// usageEvent reads an event after a block for its usage only.
func (s *streamer) usageEvent(ev *sse.Event) {
	var err error
	if s.items, err = s.st.Decode(s.items[:0], ev); err != nil || !s.st.AwaitsUsage() {
		s.blockEnd()
	}
}

func (s *streamer) blockEnd() {
	if s.awaiting {
		s.awaiting = false
		s.out = s.st.AppendBlockEnd(s.out)
	}
}

// malformed ends a stream the server cannot judge: the upstream sent something it cannot
// parse or rewrite. It is a recorded evaluation failure, closed: the client gets the
// failure event, never unjudged content.
func (s *streamer) malformed(err error) {
	s.x.s.cfg.Log.Error("Upstream stream not judged", "requestId", s.x.id, "family", s.x.family, "error", err.Error())
	s.done, s.awaiting = true, false
	s.x.outcome("failed")
	s.x.s.cfg.Telemetry.Aborted("upstream_malformed")
	s.out = s.st.AppendFailure(s.out, "")
}

// stopped ends a stream whose engine call returned an error: the processing stream's
// context ended (Envoy went away).
func (s *streamer) stopped(error) {
	s.done, s.awaiting = true, false
	s.x.gone = true
	s.x.outcome("client_gone")
	s.x.s.cfg.Telemetry.Aborted("client_gone")
}

// reportHeld moves the held-back gauge by what changed since the last report.
func (s *streamer) reportHeld() {
	s.x.s.cfg.Telemetry.HeldBack(s.held - s.reported)
	s.reported = s.held
}
