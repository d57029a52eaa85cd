package engine

import (
	"unicode/utf8"
)

// window returns the text gd's classifier is sent for c's streaming evaluation, and the
// window it came from, and moves the guard's cursor (classifiedUpTo) to the window's end:
//   - chunkWindow N: the last N deltas;
//   - Sentences: from the start of the previous sentence (one sentence of overlap) to the
//     end of the last complete sentence, or to the end of the text at the channel's end or
//     when the pending text reached maxInputChars;
//   - otherwise the accumulated channel text.
//
// The text is truncated to maxInputChars from the end. It is the sanitized text: what the
// sanitizers that ran before left, so that a remote judge never receives
// what was redacted.
//
// A span-capable (built-in, in-process) classifier is judged incrementally instead, on
// upstream text: strips are applied, redactions are not, so that an entity judged in parts
// is still recognised whole. Its window runs from its longest match (the hint) before the
// first character it has not settled — which covers every match that could still start
// there, and its left context — to the end, untruncated, so that a pending match is always
// judged again whole. For Cumulative windows that is all it is sent; chunkWindow and
// Sentences windows are widened to it.
//
// buf is scratch space owned by the guard (windows of different guards are built
// concurrently); the text is a copy.
func (c *channel) window(gd *guard, terminal bool, buf *[]byte) (string, window) {
	cu := &c.cur[gd.slot]
	st := &gd.g.Streaming
	t := &c.t
	to := t.total
	var from pos
	switch {
	case st.ChunkWindow > 0:
		from = c.deltaStart(st.ChunkWindow)
	case st.Sentences:
		if !terminal && c.sentenceEnd.b > cu.classified.b {
			to = c.sentenceEnd
		}
		from = cu.overlap
		cu.overlap = c.lastSentenceStart(cu.classified, to)
	case c.incremental(gd):
		from = to
	case gd.maxChars > 0:
		from = t.backward(to, gd.maxChars)
	}
	if c.incremental(gd) {
		from = minPos(from, c.unsettled(gd))
	}
	if from.b < t.base.b {
		from = t.base
	}
	cu.classified = to
	if !c.incremental(gd) {
		from, to = t.snapBack(from), t.snapForward(to)
		cu.classified = to
		b := t.render((*buf)[:0], from.b, to.b)
		*buf = b
		cut := len(b) - tailBytes(b, gd.maxChars)
		return string(b[cut:]), window{from: from, to: to, cut: cut}
	}
	from = t.afterStrip(from)
	b := t.renderUpstream((*buf)[:0], from.b, to.b)
	*buf = b
	return string(b), window{from: from, to: to, upstream: true}
}

// incremental reports whether gd judges c incrementally: a span-capable classifier that has
// not reached maxEvaluations on the stream (after the cap, the terminal evaluation judges
// what is buffered, as for any classifier).
func (c *channel) incremental(gd *guard) bool { return gd.spans && !c.cur[gd.slot].skipped }

// unsettled returns where a span-capable guard's next window on c starts: its hint before
// the first character it has not settled.
func (c *channel) unsettled(gd *guard) pos {
	return c.t.backward(c.cur[gd.slot].settled, gd.hint)
}

// deltaStart returns where the n-th last delta starts (the channel's start when there were
// fewer).
func (c *channel) deltaStart(n int) pos {
	if n > c.deltas {
		return pos{}
	}
	return c.starts[(c.deltas-n)%len(c.starts)]
}

// need returns where the text gd's next evaluation on c may start: what trimming keeps.
func (c *channel) need(gd *guard) pos {
	st := &gd.g.Streaming
	var p pos
	switch {
	case st.ChunkWindow > 0:
		p = c.deltaStart(st.ChunkWindow)
	case st.Sentences:
		p = c.cur[gd.slot].overlap
	case c.incremental(gd):
		p = c.t.total
	case gd.maxChars > 0:
		p = c.t.backward(c.t.total, gd.maxChars)
	}
	if c.incremental(gd) {
		p = minPos(p, c.unsettled(gd))
	}
	return p
}

// trim drops the start of c's buffer that nothing needs any more: text released, outside
// every stream guard's next window, and, when the Output phase judges a head of the
// channel, copied to the head. It runs only when the buffer doubled since the last trim, so
// its cost per character is constant.
func (c *channel) trim(e *Engine) {
	t := &c.t
	if len(t.buf) < c.trimAt {
		return
	}
	keep := c.released
	if e.headChars < 0 {
		keep = t.base
	}
	for _, gd := range e.stream {
		if p := c.need(gd); p.b < keep.b {
			keep = p
		}
	}
	if keep.b < t.base.b {
		keep = t.base
	}
	if keep = t.snapBack(keep); keep.b > t.base.b {
		c.keepHead(e.headChars, keep)
		i := 0
		for i < len(t.edits) && t.edits[i].end.b <= keep.b {
			i++
		}
		t.edits = append(t.edits[:0], t.edits[i:]...)
		t.buf = t.buf[:copy(t.buf, t.buf[keep.b-t.base.b:])]
		t.base = keep
	}
	c.trimAt = max(minTrim, 2*len(t.buf))
}

// keepHead copies the released text [base, keep) to the head until it holds n characters.
func (c *channel) keepHead(n int, keep pos) {
	if n <= 0 || c.headRunes >= n {
		return
	}
	b := c.t.render(nil, c.t.base.b, keep.b)
	b = b[:headBytes(b, n-c.headRunes)]
	c.head = append(c.head, b...)
	c.headRunes += utf8.RuneCount(b)
}

// A sentence ends after '.', '!' or '?' followed by whitespace, or after a newline. The
// whitespace after a terminator belongs to the next sentence.
func isTerminator(b byte) bool { return b == '.' || b == '!' || b == '?' }

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// sentenceStart reports whether a sentence starts at byte offset i of c's text.
func (c *channel) sentenceStart(i int) bool {
	t := &c.t
	if i <= t.base.b || i >= t.total.b {
		return false
	}
	prev := t.buf[i-1-t.base.b]
	return prev == '\n' || (isTerminator(prev) && isSpace(t.buf[i-t.base.b]))
}

// findSentenceEnd records the end of the last sentence completed by the text from start.
func (c *channel) findSentenceEnd(start pos) {
	for i := c.t.total.b - 1; i >= start.b; i-- {
		if c.sentenceStart(i) {
			c.sentenceEnd = c.t.posOf(i, start)
			return
		}
	}
}

// lastSentenceStart returns where the last sentence of [lo, hi) starts: the overlap of the
// next evaluation. Without a sentence start inside, the whole range is one sentence.
func (c *channel) lastSentenceStart(lo, hi pos) pos {
	for i := hi.b - 1; i > lo.b; i-- {
		if c.sentenceStart(i) {
			return c.t.posOf(i, lo)
		}
	}
	return lo
}
