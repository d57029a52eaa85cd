package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// streamReadSize is what one read of the upstream's stream asks for, as the plain reverse
// proxy's copy buffer does. With the SSE reader's 4 KiB default a burst of events that
// arrived together was read in pieces, each ending inside an event, and the stream was
// flushed to the client after each piece (see flush). In the load harness 32 KiB took 18%
// fewer read and write system calls per stream and about 4% less CPU (six A/B runs,
// test/load; issue 15); the reader's buffer grows only for larger events.
const streamReadSize = 32 << 10

// streamer drives one streamed response: each upstream event is decoded, fed to the
// engine, and what the engine releases is encoded and flushed before the next event is
// read. The client's pace therefore sets the upstream's (TCP back-pressure): the guard
// holds at most the hold-back and one event, never a backlog.
type streamer struct {
	x     *exchange
	rd    *sse.Reader
	rc    *http.ResponseController
	st    *wire.Stream
	items []wire.Item
	rel   []wire.Release
	arena []byte
	// ends[i] is where the text of rel[i] ends in arena.
	ends []int
	out  []byte
	// ev is the event being handled: a field, so that reading one does not allocate it.
	ev       sse.Event
	finished bool
	// pending is set when bytes were written but not flushed yet.
	pending bool
	// held is the bytes fed to the engine minus the bytes it released; reported is what
	// the held-back gauge has been told.
	held, reported int
	// usage is the largest token counts the upstream's usage events reported: Messages
	// sends input tokens at its start and cumulative output tokens at its end, the others
	// one usage object.
	usage wire.Usage
}

// noteUsage keeps the usage the decoded items report.
func (s *streamer) noteUsage() {
	for i := range s.items {
		if u := s.items[i].Usage; s.items[i].Kind == wire.ItemUsage {
			s.usage.InputTokens = max(s.usage.InputTokens, u.InputTokens)
			s.usage.OutputTokens = max(s.usage.OutputTokens, u.OutputTokens)
		}
	}
}

// reportHeld moves the held-back gauge by what changed since the last report.
func (s *streamer) reportHeld() {
	s.x.p.cfg.Telemetry.HeldBack(s.held - s.reported)
	s.reported = s.held
}

// streamers keeps the buffers of finished streams for the next ones: the reader's 32 KiB
// and the event, release and output buffers, which otherwise grow again on every stream.
var streamers = sync.Pool{New: func() any { return &streamer{rd: sse.NewReaderSize(nil, streamReadSize, 0)} }}

// Buffers that grew past these sizes (a large event, a large release) are not kept: the pool
// holds what an ordinary stream needs, not the largest one seen.
const (
	keptBufBytes = 64 << 10
	keptItems    = 256
)

// newStreamer returns a streamer for x, with a pooled streamer's buffers (release left the
// rest of it zero).
func newStreamer(x *exchange, body io.Reader) *streamer {
	s := streamers.Get().(*streamer)
	s.x, s.rc, s.st = x, http.NewResponseController(x.w), wire.NewStream(&x.req)
	s.rd.Reset(body)
	return s
}

// release gives s's buffers back to the pool, unless one grew too large; nothing of the
// stream stays reachable from it.
func (s *streamer) release() {
	if s.rd.BufferSize() > streamReadSize || cap(s.arena) > keptBufBytes || cap(s.out) > keptBufBytes ||
		cap(s.items) > keptItems || cap(s.rel) > keptItems || cap(s.ends) > keptItems {
		return
	}
	s.rd.Reset(nil)
	clear(s.items[:cap(s.items)])
	clear(s.rel[:cap(s.rel)])
	*s = streamer{rd: s.rd, items: s.items[:0], rel: s.rel[:0], arena: s.arena[:0], ends: s.ends[:0], out: s.out[:0]}
	streamers.Put(s)
}

func (x *exchange) stream(resp *http.Response) {
	s := newStreamer(x, resp.Body)
	defer func() {
		x.p.cfg.Telemetry.HeldBack(-s.reported)
		x.usage(s.usage)
		x.streamModel(s.st)
		s.release()
	}()

	copyHeaders(x.w.Header(), resp.Header)
	x.w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()

	rd := s.rd
	added := x.p.cfg.Telemetry.AddedFor(x.family)
	// Events are timed on the monotonic clock from here: one clock read at each end of an
	// event instead of Now's two and Since's one.
	base := time.Now()
	for {
		if !s.flush() {
			return
		}
		var err error
		s.ev, err = rd.Next()
		ev := &s.ev
		if errors.Is(err, io.EOF) {
			s.end()
			return
		}
		if err != nil {
			if clientGone(x.r.Context(), err) {
				s.gone()
				return
			}
			s.malformed(err)
			return
		}
		start := time.Since(base)
		if ev.Kind == sse.KindIncomplete {
			// The upstream cut the stream mid-event: nothing judgeable follows.
			s.malformed(errors.New("upstream stream ended inside an event"))
			return
		}
		done, ok := s.event(ev)
		s.reportHeld()
		added.Observe(time.Since(base) - start)
		if done && ok {
			// The client's answer is complete with its terminator. Usually the upstream's
			// body has ended too (its connection is back in the pool), and returning from
			// the handler sends the terminator and the end of the client's body in one
			// write. Otherwise the terminator is flushed now and the provider's end is
			// awaited in the background, so that the client's body ends with its answer.
			if rd.SourceEnded() {
				x.outcome("allowed")
			} else {
				// Detached before the flush: a client that closes its connection as soon
				// as it has the terminator must not cancel the drain.
				detached := x.detach()
				if s.push() {
					x.outcome("allowed")
				}
				if detached {
					x.drainLater(resp.Body)
				}
			}
		}
		if !ok || done {
			return
		}
	}
}

// event handles one upstream event; done is set when the stream is over, ok is false
// when it was ended early (verdict, failure, client gone).
func (s *streamer) event(ev *sse.Event) (done, ok bool) {
	x := s.x
	var err error
	s.items, err = s.st.Decode(s.items[:0], ev)
	if err != nil {
		s.malformed(err)
		return false, false
	}
	s.noteUsage()
	s.rel, s.arena, s.ends = s.rel[:0], s.arena[:0], s.ends[:0]
	for i := range s.items {
		it := &s.items[i]
		step, err := s.feed(it)
		if err != nil {
			if clientGone(x.r.Context(), err) {
				s.gone()
			} else {
				s.malformed(err)
			}
			return false, false
		}
		s.keep(step.Release)
		if step.Stop != nil {
			s.flushReleases(nil)
			s.stop(step.Stop)
			return false, false
		}
		if it.Kind == wire.ItemTerminator {
			done = true
		}
	}
	if !s.flushReleases(ev) {
		return false, false
	}
	return done, true
}

// feed gives one item to the engine.
func (s *streamer) feed(it *wire.Item) (engine.Step, error) {
	ctx := s.x.r.Context()
	ch := it.Channel
	switch it.Kind {
	case wire.ItemDelta:
		if ch.Kind == content.Object {
			return s.x.session.Snapshot(ctx, ch, it.Snapshot)
		}
		s.held += len(it.Text)
		return s.x.session.Delta(ctx, ch, it.Text)
	case wire.ItemChannelEnd:
		if ch.Kind == content.ToolCall {
			return s.x.session.EndToolCall(ctx, ch, it.Name)
		}
		return s.x.session.EndChannel(ctx, ch)
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
	return s.x.session.Finish(s.x.r.Context())
}

// keep copies released chunks into the arena: chunk text is only valid until the next
// engine call. ends records, per release, where its text ends in the arena.
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

// flushReleases encodes the releases (with ev's own remainder when ev is not nil) and
// writes them to the client.
func (s *streamer) flushReleases(ev *sse.Event) bool {
	start := 0
	for i := range s.rel {
		s.rel[i].Text = s.arena[start:s.ends[i]]
		start = s.ends[i]
	}
	if ev == nil && len(s.rel) == 0 {
		return true
	}
	var err error
	s.out, err = s.st.Emit(s.out[:0], ev, s.rel)
	if err != nil {
		s.malformed(err)
		return false
	}
	return s.write(s.out)
}

// write sends bytes to the client (within the write idle timeout, which the
// ResponseWriter enforces: see idleWriter); flush pushes them out.
func (s *streamer) write(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if _, err := s.x.w.Write(b); err != nil {
		s.gone()
		return false
	}
	s.pending = true
	return true
}

// flush sends what was written, unless the next upstream event is already buffered: it
// then goes out in the same flush (one syscall for a burst instead of one per event), and
// nothing written waits on the network meanwhile. The stream loop calls it before every
// read; returning from the handler flushes the rest.
func (s *streamer) flush() bool {
	if s.rd.Ready() {
		return true
	}
	return s.push()
}

// push sends what was written now.
func (s *streamer) push() bool {
	if !s.pending {
		return true
	}
	s.pending = false
	if err := s.rc.Flush(); err != nil {
		s.gone()
		return false
	}
	return true
}

// Draining after the terminator: bounded, because an upstream that keeps the connection
// open after it would otherwise hold the connection forever; the client's body waits for
// the provider's end at most drainWait (see drainLater).
const (
	drainBytes   = 64 << 10
	drainTimeout = 500 * time.Millisecond
	drainWait    = 50 * time.Millisecond
)

// drain reads what follows the stream's terminator (normally only the end of the chunked
// body) so that the upstream connection goes back to the pool instead of being closed: a
// closed one costs the next call a new TCP and TLS handshake to the provider.
func drain(body io.Reader, cancel context.CancelFunc) {
	t := time.AfterFunc(drainTimeout, cancel)
	defer t.Stop()
	_, _ = io.CopyN(io.Discard, body, drainBytes)
}

// drainLater drains the upstream's body for a stream whose client has its whole answer
// but whose provider has not ended its body yet. The handler waits for that end for at
// most drainWait (a provider's last bytes can travel apart from its terminator; the upstream
// connection is then back in the pool before the client's next request), then returns: the
// client's body ends with its answer, also for the SDKs that read a stream to its end (the
// Anthropic Go and the OpenAI and Anthropic Node SDKs) when the provider keeps its body
// open, and the drain goes on in the background within drainTimeout. The caller has
// detached the upstream call from the client's request, so that a client that closes its
// connection at the terminator does not cost the upstream connection either.
func (x *exchange) drainLater(body io.ReadCloser) {
	x.drainsLater = true
	// The drain holds the body and the call's cancel, not the exchange: nothing of the
	// request or its answer stays reachable from it.
	cancel, drained := x.cancelUpstream, make(chan struct{})
	go func() {
		defer close(drained)
		defer cancel()
		drain(body, cancel)
		_ = body.Close()
	}()
	t := time.NewTimer(drainWait)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	}
}

// end handles the upstream closing the stream: what the engine still holds is judged
// (terminal evaluation) and released.
func (s *streamer) end() {
	if s.finished {
		s.x.outcome("allowed")
		return
	}
	step, err := s.finish()
	if err != nil {
		s.gone()
		return
	}
	s.rel, s.arena, s.ends = s.rel[:0], s.arena[:0], s.ends[:0]
	s.keep(step.Release)
	s.flushReleases(nil)
	if step.Stop != nil {
		s.stop(step.Stop)
		return
	}
	s.x.outcome("allowed")
}

// stop ends the stream with a verdict: the block's reason and the normal terminator, or
// the failure's error event.
func (s *streamer) stop(v *engine.Verdict) {
	if v.Kind == engine.Failed {
		s.x.outcome("failed")
		s.x.p.cfg.Telemetry.Aborted("failed")
		s.write(s.st.AppendFailure(s.out[:0], v.Guardrail))
		return
	}
	s.x.outcome("blocked")
	s.x.p.cfg.Telemetry.Aborted("blocked")
	if !s.write(s.st.AppendBlockReason(s.out[:0], v.Reason)) {
		return
	}
	if s.st.AwaitsUsage() {
		s.awaitUsage()
	}
	s.write(s.st.AppendBlockEnd(s.out[:0]))
}

// usageWait bounds how long a blocked stream waits for the upstream's usage. When the
// block comes at the end of the answer (an Output or ToolCalls verdict, a terminal
// evaluation), the usage is the upstream's next event; in the middle of an answer it
// comes only when the model has finished, and the block ends without it.
const usageWait = 500 * time.Millisecond

// awaitUsage reads on from the upstream after a block, for at most usageWait, until the
// event that carries its token usage: clients that count tokens (stream_options
// include_usage, Messages and Responses usage) get the provider's own figures for the
// tokens the block cost. Nothing read here reaches the client but the usage; the reason
// was flushed first, so the client does not wait for it.
func (s *streamer) awaitUsage() {
	if !s.push() {
		return
	}
	t := time.AfterFunc(usageWait, s.x.cancelUpstream)
	defer t.Stop()
	for s.st.AwaitsUsage() {
		ev, err := s.rd.Next()
		if err != nil || ev.Kind == sse.KindIncomplete {
			return
		}
		if s.items, err = s.st.Decode(s.items[:0], &ev); err != nil {
			return
		}
		s.noteUsage()
	}
}

// malformed ends a stream the guard cannot judge: the upstream sent something it cannot
// parse or rewrite. It is a recorded evaluation failure, closed: the client gets the
// failure event, never unjudged content.
func (s *streamer) malformed(err error) {
	s.x.p.cfg.Log.Error("Upstream stream not judged", "requestId", s.x.r.Header.Get("X-Request-Id"),
		"family", s.x.family, "error", err.Error())
	s.x.outcome("failed")
	s.x.p.cfg.Telemetry.Aborted("upstream_malformed")
	s.write(s.st.AppendFailure(s.out[:0], ""))
}

// gone records a client that went away; returning from the handler cancels the
// upstream request and any classifier call still running.
func (s *streamer) gone() {
	s.x.outcome("client_gone")
	s.x.p.cfg.Telemetry.Aborted("client_gone")
}
