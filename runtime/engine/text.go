package engine

import (
	"encoding/binary"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// pos is a position in upstream text: a byte offset and the number of characters (runes)
// before it. Cadence and hold-back count characters; slicing uses bytes.
type pos struct{ b, r int }

// edit replaces the upstream range [start, end) with repl: a redaction marker, or nothing
// for a strip. cat is the marker's category ("" for a strip).
type edit struct {
	start, end pos
	cat        string
	repl       string
}

// textBuf is upstream text and the sanitizing edits made to it. Edits are kept apart from
// the text, in upstream coordinates, so that cursors, hold-back and cadence never shift when
// a redaction changes the text's length; rendering applies them. A stream's buffer holds
// only a suffix of its channel, from base (see channel.trim); a whole text starts at 0.
type textBuf struct {
	buf   []byte // upstream bytes [base.b, total.b)
	base  pos
	total pos
	edits []edit // sorted by start, non-overlapping, nonempty, all ending after base
	// frozen: buf is a string's bytes (newTextBuf), never written: a classifier can be
	// sent them as they are (item.text).
	frozen bool
}

// newTextBuf returns a buffer of the whole text s over s's own bytes rather than a copy:
// a whole text is judged and edited (edits are kept apart) but never written in place.
// Its capacity is its length, so an append copies it first and clears frozen; trim, the
// one write in place, only sees a stream channel's buffer, which is built by appending.
func newTextBuf(s string) *textBuf {
	return &textBuf{buf: unsafe.Slice(unsafe.StringData(s), len(s)), total: pos{len(s), runeCount(s)},
		frozen: len(s) > 0}
}

func (t *textBuf) append(s string) {
	t.buf, t.frozen = append(t.buf, s...), false
	t.total.b += len(s)
	t.total.r += runeCount(s)
}

// runeCount is utf8.RuneCountInString, ASCII 32 or 8 bytes at a time: a prompt or an answer
// is mostly ASCII, which RuneCountInString counts a byte at a time. A word with a byte
// of 0x80 or more is left to utf8.DecodeRuneInString, one character, as RuneCountInString
// counts it (an invalid byte is one character), and the count goes on after it.
func runeCount(s string) int {
	n, i := 0, 0
	for i < len(s) {
		for i+32 <= len(s) {
			b := unsafe.Slice(unsafe.StringData(s[i:]), 32)
			if (binary.LittleEndian.Uint64(b)|binary.LittleEndian.Uint64(b[8:])|binary.LittleEndian.Uint64(b[16:])|
				binary.LittleEndian.Uint64(b[24:]))&0x8080808080808080 != 0 {
				break
			}
			n, i = n+32, i+32
		}
		if i+8 <= len(s) {
			if w := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8)); w&0x8080808080808080 == 0 {
				n, i = n+8, i+8
				continue
			}
		}
		if i == len(s) {
			break
		}
		if s[i] < utf8.RuneSelf {
			n, i = n+1, i+1
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		n, i = n+1, i+size
	}
	return n
}

// bytes returns upstream bytes [from, to).
func (t *textBuf) bytes(from, to int) []byte { return t.buf[from-t.base.b : to-t.base.b] }

// forward returns the position n characters after p, at most total.
func (t *textBuf) forward(p pos, n int) pos {
	if p.r+n >= t.total.r {
		return t.total
	}
	b := t.buf[p.b-t.base.b:]
	i := 0
	for k := 0; k < n; k++ {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return pos{p.b + i, p.r + n}
}

// backward returns the position n characters before p, at least base.
func (t *textBuf) backward(p pos, n int) pos {
	if p.r-n <= t.base.r {
		return t.base
	}
	b := t.buf[:p.b-t.base.b]
	i := len(b)
	for k := 0; k < n; k++ {
		if b[i-1] < utf8.RuneSelf {
			i--
			continue
		}
		_, size := utf8.DecodeLastRune(b[:i])
		i -= size
	}
	return pos{t.base.b + i, p.r - n}
}

// posOf returns the position of byte offset b, counting characters from p (p.b <= b).
func (t *textBuf) posOf(b int, p pos) pos {
	return pos{b, p.r + utf8.RuneCount(t.bytes(p.b, b))}
}

// runeStart moves byte offset b back to the start of its character, not before lo.
func (t *textBuf) runeStart(b, lo int) int {
	for b > lo && b < t.total.b && !utf8.RuneStart(t.buf[b-t.base.b]) {
		b--
	}
	return b
}

// runeEnd moves byte offset b forward to the end of its character, not after hi.
func (t *textBuf) runeEnd(b, hi int) int {
	for b < hi && !utf8.RuneStart(t.buf[b-t.base.b]) {
		b++
	}
	return b
}

// inside returns the edit strictly containing byte offset b, or nil.
func (t *textBuf) inside(b int) *edit {
	for i := range t.edits {
		e := &t.edits[i]
		if e.start.b >= b {
			return nil
		}
		if b < e.end.b {
			return e
		}
	}
	return nil
}

// snapBack moves p back to the start of the edit it is inside, so that a range starting at
// p renders whole markers.
func (t *textBuf) snapBack(p pos) pos {
	if e := t.inside(p.b); e != nil {
		return e.start
	}
	return p
}

// snapForward moves p forward to the end of the edit it is inside.
func (t *textBuf) snapForward(p pos) pos {
	if e := t.inside(p.b); e != nil {
		return e.end
	}
	return p
}

// edited reports whether an edit intersects [from, to).
func (t *textBuf) edited(from, to int) bool {
	for i := range t.edits {
		if t.edits[i].start.b >= to {
			return false
		}
		if t.edits[i].end.b > from {
			return true
		}
	}
	return false
}

// render appends the text of upstream [from, to) with its edits applied to dst. from and to
// must not be strictly inside an edit.
func (t *textBuf) render(dst []byte, from, to int) []byte {
	for i := range t.edits {
		e := &t.edits[i]
		if e.end.b <= from {
			continue
		}
		if e.start.b >= to {
			break
		}
		dst = append(dst, t.bytes(from, e.start.b)...)
		dst = append(dst, e.repl...)
		from = e.end.b
	}
	return append(dst, t.bytes(from, to)...)
}

// renderUpstream appends the upstream text of [from, to) to dst with strips applied and
// redactions not: what a stream's classifier is sent (classification sees
// upstream text, never text it rewrote). from must not be strictly inside a strip.
func (t *textBuf) renderUpstream(dst []byte, from, to int) []byte {
	for i := range t.edits {
		e := &t.edits[i]
		if e.repl != "" || e.end.b <= from {
			continue
		}
		if e.start.b >= to {
			break
		}
		dst = append(dst, t.bytes(from, e.start.b)...)
		from = e.end.b
	}
	if from >= to {
		return dst
	}
	return append(dst, t.bytes(from, to)...)
}

// afterStrip moves p forward to the end of the strip it is inside.
func (t *textBuf) afterStrip(p pos) pos {
	if e := t.inside(p.b); e != nil && e.repl == "" {
		return e.end
	}
	return p
}

// window is the upstream range a classifier call judged and how its text was built from it:
// the text sent is (prefix + render(from, to))[cut:], possibly cut at the end too; with
// upstream, renderUpstream(from, to)[cut:].
type window struct {
	from, to pos
	// prefix is the length in bytes of released text rendered before the range (a stream's
	// head kept for the Output phase); spans inside it cannot change anything.
	prefix int
	// cut is the number of bytes cut from the front (truncation from the end).
	cut int
	// upstream: the text was rendered by renderUpstream (redaction markers not applied).
	upstream bool
}

// locate maps byte y of the rendered range to the upstream byte it came from, or to the
// edit whose marker it is part of.
func (t *textBuf) locate(w *window, y int) (int, *edit) {
	u, r := w.from.b, 0
	for i := range t.edits {
		e := &t.edits[i]
		if e.end.b <= w.from.b || w.upstream && e.repl != "" {
			continue
		}
		if e.start.b >= w.to.b {
			break
		}
		gap := e.start.b - u
		if y < r+gap {
			return u + y - r, nil
		}
		r += gap
		if y < r+len(e.repl) {
			return 0, e
		}
		r += len(e.repl)
		u = e.end.b
	}
	return u + y - r, nil
}

// upstreamPos returns the upstream position of byte y of the text sent through w (y at
// most its length).
func (t *textBuf) upstreamPos(w *window, y int) pos {
	u, _ := t.locate(w, y+w.cut-w.prefix)
	u = min(max(u, w.from.b), w.to.b)
	return t.posOf(t.runeStart(u, w.from.b), w.from)
}

// upstreamSpan maps a span of the sent text to an upstream byte range. A span touching a
// marker covers the marker's whole range; a span inside the prefix maps to nothing.
// inMarker reports that the span starts inside a marker (after the marker's start).
func (t *textBuf) upstreamSpan(w *window, start, end int) (us, ue int, inMarker, ok bool) {
	ys, ye := start+w.cut-w.prefix, end+w.cut-w.prefix
	if ye <= 0 || ys >= ye {
		return 0, 0, false, false
	}
	us = w.from.b
	if ys > 0 {
		u, e := t.locate(w, ys)
		if us = u; e != nil {
			// Inside the marker only when the byte before is part of it too: a span
			// starting at the marker's first byte starts with it.
			_, prev := t.locate(w, ys-1)
			us, inMarker = e.start.b, prev == e
		}
	}
	u, e := t.locate(w, ye-1)
	ue = u + 1
	if e != nil {
		ue = e.end.b
	}
	us, ue = t.runeStart(us, w.from.b), t.runeEnd(min(ue, w.to.b), w.to.b)
	return us, ue, inMarker, us < ue
}

// redact replaces the spans of a classifier's answer (offsets into the text sent through w)
// with [REDACTED:<category>] markers. Text before floor (already released) cannot change.
//
// Overlapping spans merge into one marker, whether they come from one answer or from an
// earlier guardrail's marker. The merged marker is labelled with the category of the span
// that starts first; on equal starts the longer span's; on equal spans the earlier one's
// (the lower category index in one answer, the existing marker across guardrails). A
// redaction overlapping stripped text is dropped with it.
func (t *textBuf) redact(w *window, spans []classify.Span, cats []policy.Category, floor pos) {
	t.redactOnto(t, w, spans, cats, floor)
}

// redactOnto is redact with the spans mapped through t and the markers added to dst, a
// buffer in the same upstream coordinates (t is a view of dst: see restoredView).
func (t *textBuf) redactOnto(dst *textBuf, w *window, spans []classify.Span, cats []policy.Category, floor pos) {
	spans = slices.Clone(spans)
	slices.SortStableFunc(spans, func(a, b classify.Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		if a.End != b.End {
			return b.End - a.End
		}
		return a.Category - b.Category
	})
	// Map every span before adding any edit: offsets refer to the text as it was sent.
	type mapped struct {
		us, ue int
		cat    string
		late   bool
	}
	var ms []mapped
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].Start < cur.End; i++ {
			cur.End = max(cur.End, spans[i].End)
		}
		us, ue, late, ok := t.upstreamSpan(w, cur.Start, cur.End)
		if ok && ue > floor.b {
			ms = append(ms, mapped{max(us, floor.b), ue, cats[cur.Category].ID, late})
		}
	}
	for _, m := range ms {
		dst.addEdit(m.us, m.ue, m.cat, "[REDACTED:"+m.cat+"]", m.late)
	}
}

// strip drops upstream [from, to).
func (t *textBuf) strip(from, to pos) {
	if from.b < to.b {
		t.addEdit(from.b, to.b, "", "", false)
	}
}

// addEdit inserts an edit of upstream [us, ue), merging it with the edits it overlaps. A
// strip absorbs what it overlaps; otherwise the merged marker takes the label of the
// constituent that starts first, then of the longer (see redact). late says the new edit
// started inside an existing marker, so that marker counts as starting first.
func (t *textBuf) addEdit(us, ue int, cat, repl string, late bool) {
	lo := 0
	for lo < len(t.edits) && t.edits[lo].end.b <= us {
		lo++
	}
	hi := lo
	ns, ne := us, ue
	ls, le := us, ue // range of the constituent whose label the merge takes
	strip := repl == ""
	for ; hi < len(t.edits) && t.edits[hi].start.b < ue; hi++ {
		e := &t.edits[hi]
		switch {
		case e.repl == "":
			strip = true
		case e.start.b < ls || e.start.b == ls && (late || e.end.b-e.start.b >= le-ls):
			cat, repl, ls, le, late = e.cat, e.repl, e.start.b, e.end.b, false
		}
		ns, ne = min(ns, e.start.b), max(ne, e.end.b)
	}
	if strip {
		cat, repl = "", ""
	}
	from := t.base
	if lo > 0 {
		from = t.edits[lo-1].end
	}
	sp := t.posOf(ns, from)
	merged := edit{start: sp, end: t.posOf(ne, sp), cat: cat, repl: repl}
	t.edits = slices.Replace(t.edits, lo, hi, merged)
}

// String renders the whole text with its edits (whole texts only: base 0).
func (t *textBuf) String() string { return string(t.render(nil, t.base.b, t.total.b)) }
