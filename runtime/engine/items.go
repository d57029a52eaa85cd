package engine

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// item is content a phase judges whole: an input part, a response content, a tool call
// alone or a choice's calls together, an object snapshot, or a streamed channel at its end.
type item struct {
	where    Location
	modality classify.Modality
	// doc is the text and its edits; nil for a media part, which media holds.
	doc   *textBuf
	media classify.Part
	// prefix is released text before doc.base (a streamed channel's kept head); floor is
	// where doc's text stops being released: nothing before it can change.
	prefix []byte
	floor  pos
	// held: a streamed channel, where Strip drops the text not yet released.
	held bool
	// tool: a tool call; Strip and Redact act as Block.
	tool bool
	// counted: an evaluation counts against the guard's maxEvaluations (object snapshots);
	// partial: evaluations are recorded as partial inspections.
	counted, partial bool
	// role and message of an input part; result: the part is a tool result.
	role    string
	message int
	dropped bool
	result  bool
}

// text returns what gd's classifier is sent for the item: the whole text with its edits,
// truncated to the guard's maxInputChars from the start, and whether it was truncated.
func (it *item) text(gd *guard) (string, window, bool) {
	d := it.doc
	w := window{from: d.base, to: d.total, prefix: len(it.prefix)}
	if d.frozen && len(it.prefix) == 0 && len(d.edits) == 0 {
		// The text as it is: a string's bytes, which nothing writes (newTextBuf).
		b := d.bytes(d.base.b, d.total.b)
		cut := headBytes(b, gd.maxChars)
		return unsafe.String(unsafe.SliceData(b), cut), w, cut < len(b)
	}
	b := make([]byte, 0, len(it.prefix)+d.total.b-d.base.b)
	b = d.render(append(b, it.prefix...), d.base.b, d.total.b)
	cut := headBytes(b, gd.maxChars)
	return string(b[:cut]), w, cut < len(b)
}

// headBytes returns the length in bytes of the first n characters of b (all of b when n
// is 0 or b is shorter).
func headBytes(b []byte, n int) int {
	if n <= 0 || len(b) <= n {
		return len(b)
	}
	i := 0
	for ; n > 0 && i < len(b); n-- {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return i
}

// tailBytes returns the length in bytes of the last n characters of b (all of b when n is
// 0 or b is shorter).
func tailBytes(b []byte, n int) int {
	if n <= 0 || len(b) <= n || utf8.RuneCount(b) <= n {
		return len(b)
	}
	i := len(b)
	for ; n > 0 && i > 0; n-- {
		if b[i-1] < utf8.RuneSelf {
			i--
			continue
		}
		_, size := utf8.DecodeLastRune(b[:i])
		i -= size
	}
	return len(b) - i
}

// blank reports whether s has no text to judge: "Messages and parts with no text pass
// without a classifier call"; whitespace is no text.
func blank(s string) bool { return strings.TrimFunc(s, unicode.IsSpace) == "" }

// judgeItem evaluates one item for gd; ok is false when the guard does not judge it (an
// excluded modality, no text).
func judgeItem(ctx context.Context, gd *guard, it *item) (ev evaluation, w window, ok bool) {
	if !gd.g.Modalities.Has(it.modality) {
		return ev, w, false
	}
	if gd.c != nil && !gd.c.Modalities.Has(it.modality) {
		return unsupported(gd, it.modality), w, true
	}
	if it.doc == nil {
		return evaluate(ctx, gd, classify.Input{Parts: []classify.Part{it.media}}), w, true
	}
	text, w, partial := it.text(gd)
	if blank(text) {
		return ev, w, false
	}
	ev = evaluate(ctx, gd, classify.Input{Text: text})
	ev.partial = partial || it.partial
	return ev, w, true
}

// judgeItems runs one round of phase over items (see compose). selects says which items a
// guard judges; required whether dropping an item would leave nothing, so that Strip
// escalates to Block. A guard judges its items in order and stops at the first that stops
// the content.
func (s *Session) judgeItems(ctx context.Context, phase policy.Phase, items []*item,
	selects func(gd *guard, it *item) bool, required func(it *item) bool) (*Verdict, error) {
	guards := s.e.phaseGuards(phase)
	switch {
	case len(guards) == 0:
		return nil, nil
	case len(items) == 0:
		return nil, ctx.Err() // what compose returns when no guard has anything to judge
	}
	type result struct {
		it *item
		ev evaluation
		w  window
	}
	r := &s.items
	r.applies = append(r.applies[:0], make([]func() *Verdict, len(guards))...)
	defer r.clear()
	r.evaluate = func(gd *guard) func() *Verdict {
		var rs []result
		for _, it := range items {
			if it.dropped || !selects(gd, it) {
				continue
			}
			ev, w, ok := judgeItem(ctx, gd, it)
			if !ok {
				continue
			}
			if it.counted {
				s.evals[gd.slot]++
			}
			rs = append(rs, result{it, ev, w})
			if ctx.Err() != nil || stops(gd, &ev) {
				break
			}
		}
		if len(rs) == 0 {
			return nil
		}
		return func() *Verdict {
			var stop *Verdict
			for i := range rs {
				r := &rs[i]
				a, v := s.decide(gd, phase, r.it.where, &r.ev, target{tool: r.it.tool, required: required(r.it)})
				if stop != nil {
					continue
				}
				stop = v
				switch {
				case v != nil:
				case a == policy.ActionRedact:
					r.it.doc.redact(&r.w, r.ev.j.spans, gd.c.Categories, r.it.floor)
				case a == policy.ActionPseudonymize:
					s.pseudonymize(r.it, &r.w, r.ev.j.spans, gd.c.Categories, gd.g.Cluster)
				case a == policy.ActionStrip && r.it.held:
					r.it.doc.strip(r.it.floor, r.it.doc.total)
				case a == policy.ActionStrip:
					r.it.dropped = true
				}
			}
			return stop
		}
	}
	return s.compose(ctx, guards, r)
}

// closureRound is a round whose judge returns the function that applies its result.
type closureRound struct {
	evaluate func(gd *guard) func() *Verdict
	applies  []func() *Verdict
}

func (r *closureRound) judge(_ context.Context, i int, gd *guard) bool {
	r.applies[i] = r.evaluate(gd)
	return r.applies[i] != nil
}

func (r *closureRound) apply(i int, _ *guard) *Verdict { return r.applies[i]() }

// clear drops what the round refers to.
func (r *closureRound) clear() {
	r.evaluate = nil
	clear(r.applies)
}

func always(*guard, *item) bool { return true }

func never(*item) bool { return false }

// toolCallText is what a tool call is judged as: {"name":…,"arguments":…}, the arguments
// embedded as JSON when they are JSON and as a string otherwise.
func toolCallText(name, args string) string {
	n, _ := json.Marshal(name)
	a := []byte(args)
	if strings.TrimSpace(args) == "" || !json.Valid(a) {
		a, _ = json.Marshal(args)
	}
	return `{"name":` + string(n) + `,"arguments":` + string(a) + `}`
}

// callsText is what a choice's tool calls are judged as together: a JSON array of their
// texts.
func callsText(calls []string) string { return "[" + strings.Join(calls, ",") + "]" }
