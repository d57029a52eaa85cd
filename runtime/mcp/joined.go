package mcp

import (
	"errors"
	"slices"
	"strings"
)

// A tool result's text parts (content items' text, embedded resources' text) reach the
// model together, one after the other, as a stream's deltas do. A credential split across
// two items (`ghp_` and the rest) is no credential in either, so the guard judges the
// parts as one text, joined, as it judges a stream's deltas, and each part on its own too,
// since joining can also hide an entity: a detector that wants a word boundary after a
// token does not match it when the next item begins with a letter.
//
// The judges return redacted texts, not where they redacted: redactionsIn finds the spans
// by aligning the judged text with its redaction, and placeRedactions writes the spans of
// every judgement back into the items. A span that starts in one item and ends in another
// leaves its marker in the first and removes the rest from the next ones: no part of an
// entity reaches the client, wherever it was split.

// redaction is a span [start, end) of a judged text that the judges replaced with marker.
type redaction struct {
	start, end int
	marker     string
}

// errUnplaced is a judged text whose redaction could not be aligned with it: the result
// is not forwarded (fail closed).
var errUnplaced = errors.New("a redaction of a tool result could not be placed in its content items")

const (
	markerPrefix = "[REDACTED:"
	// maxMarker bounds the length of a redaction marker (category ids are DNS labels).
	maxMarker = len(markerPrefix) + 253 + 1
)

// token is a piece of a redacted text: a marker, or text the redaction kept.
type token struct {
	s      string
	marker bool
}

// tokens cuts a redacted text into kept text and markers.
func tokens(red string) []token {
	var out []token
	lit := 0
	for i := 0; i < len(red); {
		k := strings.Index(red[i:], markerPrefix)
		if k < 0 {
			break
		}
		at := i + k
		end := strings.IndexByte(red[at+len(markerPrefix):min(len(red), at+maxMarker)], ']')
		if end <= 0 || strings.ContainsAny(red[at+len(markerPrefix):at+len(markerPrefix)+end], "[\n") {
			i = at + 1
			continue
		}
		end += at + len(markerPrefix) + 1
		if at > lit {
			out = append(out, token{s: red[lit:at]})
		}
		out = append(out, token{s: red[at:end], marker: true})
		lit, i = end, end
	}
	if lit < len(red) {
		out = append(out, token{s: red[lit:]})
	}
	return out
}

// redactionsIn returns the spans of orig that red, its redaction, replaced with markers:
// red is orig with disjoint spans replaced, each by one [REDACTED:<category>] marker. A
// marker in red may also be text orig holds as it is (a result quoting an earlier
// redaction). When more than one alignment fits (a span's end is ambiguous), the first
// found is returned: every alignment renders the items' texts to red once joined. ok is
// false when red is not orig with markers, or the search passes its bound.
func redactionsIn(orig, red string) ([]redaction, bool) {
	if orig == red {
		return nil, true
	}
	toks := tokens(red)
	// choice is a marker whose alignment may be revised: as text (literal), then as a
	// span of orig from i to each candidate end in turn, from next on.
	type choice struct {
		t, i, spans, next int
		literal           bool
	}
	var stack []choice
	var spans []redaction
	// budget bounds the work, in steps and bytes compared: a result built to make the
	// search backtrack fails closed rather than hold the guard.
	budget := 8*(len(orig)+len(red)) + 4096
	t, i := 0, 0
	// candidate returns the first end of a span of orig from i, at from or after, that
	// what follows marker t can continue from; -1 when there is none.
	candidate := func(t, i, from int) int {
		from = max(from, i+1)
		if from > len(orig) {
			return -1
		}
		switch {
		case t+1 == len(toks):
			if from <= len(orig) {
				return len(orig)
			}
		case !toks[t+1].marker && t+2 == len(toks):
			if e := len(orig) - len(toks[t+1].s); e >= from && orig[e:] == toks[t+1].s {
				return e
			}
		case !toks[t+1].marker:
			k := strings.Index(orig[from:], toks[t+1].s)
			if k >= 0 {
				budget -= k
				return from + k
			}
			budget -= len(orig) - from
		default:
			return from
		}
		return -1
	}
	// take aligns marker t at i as text or from its next candidate span on, recording the
	// choice; it reports whether any alignment was left.
	take := func(c choice) bool {
		spans = spans[:c.spans]
		if c.literal {
			stack = append(stack, choice{t: c.t, i: c.i, spans: c.spans, next: c.i + 1})
			t, i = c.t+1, c.i+len(toks[c.t].s)
			return true
		}
		e := candidate(c.t, c.i, c.next)
		if e < 0 {
			return false
		}
		stack = append(stack, choice{t: c.t, i: c.i, spans: c.spans, next: e + 1})
		spans = append(spans, redaction{start: c.i, end: e, marker: toks[c.t].s})
		t, i = c.t+1, e
		return true
	}
	for {
		if budget--; budget < 0 {
			return nil, false
		}
		var ok bool
		switch {
		case t == len(toks):
			if i == len(orig) {
				return spans, true
			}
			ok = false
		case !toks[t].marker:
			budget -= len(toks[t].s)
			if ok = strings.HasPrefix(orig[i:], toks[t].s); ok {
				i += len(toks[t].s)
				t++
			}
		default:
			c := choice{t: t, i: i, spans: len(spans), literal: strings.HasPrefix(orig[i:], toks[t].s)}
			ok = take(c)
		}
		for !ok {
			if len(stack) == 0 {
				return nil, false
			}
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if budget--; budget < 0 {
				return nil, false
			}
			ok = take(c)
		}
	}
}

// placeRedactions applies the spans found in the judged text (offsets into the parts
// joined) to the parts: overlapping spans merge, keeping the marker of the one that
// starts first (then of the longer), and each span's marker goes where it starts, the
// rest of the span being removed from the parts it covers.
func placeRedactions(parts []string, spans []redaction) []string {
	slices.SortStableFunc(spans, func(a, b redaction) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	merged := spans[:0:0]
	for _, s := range spans {
		if n := len(merged); n > 0 && s.start < merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	out := make([]string, len(parts))
	off, k := 0, 0
	for p, text := range parts {
		end := off + len(text)
		var b strings.Builder
		at := off
		for k < len(merged) && merged[k].start < end {
			s := merged[k]
			if s.start >= at {
				b.WriteString(text[at-off : s.start-off])
				b.WriteString(s.marker)
			}
			at = max(at, min(s.end, end))
			if s.end > end {
				break // the span goes on in the next part
			}
			k++
		}
		if b.Len() == 0 && at == off {
			out[p] = text
		} else {
			b.WriteString(text[at-off:])
			out[p] = b.String()
		}
		off = end
	}
	return out
}
