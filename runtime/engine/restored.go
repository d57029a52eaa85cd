package engine

import (
	"context"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Restored answers and the cluster tier.
//
// A namespaced Guardrail's Pseudonymize masks values for the provider, and the answer's
// placeholders become the values again before the client receives them (restore.go).
// Stream and Output guardrails judge the answer as the provider wrote it, placeholders
// included, so a ClusterGuardrail that keeps, say, mail addresses out of answers would
// never see the addresses a tenant's Pseudonymize puts back: the tenant tier would undo
// what the cluster tier enforces. So the ClusterGuardrails that judge answers (Stream,
// Output) also judge what the client receives, the tenant's values restored, and their
// verdicts apply to it:
//
//   - a Block stops the answer: at the Stream phase before the release it judged, at
//     the Output phase as any Output block does (a stream's at its end);
//   - a Redact replaces what it matched; a match touching a value covers its whole
//     placeholder, which is released as the marker, never restored;
//   - a Strip drops the stream's text not yet released, and escalates to Block on an
//     answer text or object at the Output phase, as it does on the answer itself; on a
//     tool call Redact and Strip act as Block;
//   - Warn and Report mode record, as ever.
//
// The Stream phase judges each release of a stream that restores a value (the released
// text, restored); the Output phase each whole content of a non-streamed answer, and each
// streamed channel at its end (from its kept head), restored. Values a ClusterGuardrail
// masked itself stay placeholders in these evaluations: the cluster tier judges its own
// masking as before. Without a tenant's Pseudonymize having masked a value, or without a
// ClusterGuardrail judging the phase, nothing is judged again.

// restoresFor reports whether the cluster tier judges restored text at phase: a
// ClusterGuardrail judges the phase and a namespaced Guardrail pseudonymized a value.
func (s *Session) restoresFor(phase policy.Phase) bool {
	return s.e.clusterPhases.Has(phase) && s.vault.tenantMasked()
}

// tenantRestorations returns the restorations of t's whole text [from, to) (upstream
// offsets) of the values a namespaced Guardrail masked; placeholders an edit rewrote are
// none.
func (s *Session) tenantRestorations(t *textBuf, from, to pos, json bool) []restoration {
	_, rs := s.vault.scan(t.bytes(from.b, to.b), 0, to.b-from.b, true, json,
		func(a, b int) bool { return t.edited(a+from.b, b+from.b) }, nil)
	out := rs[:0]
	for _, r := range rs {
		if r.tenant {
			r.start += from.b
			r.end += from.b
			out = append(out, r)
		}
	}
	return out
}

// onlyTenant returns the restorations of rs a namespaced Guardrail's values make, in a
// new slice (rs may be the session's buffer).
func onlyTenant(rs []restoration) []restoration {
	var out []restoration
	for _, r := range rs {
		if r.tenant {
			out = append(out, r)
		}
	}
	return out
}

// restoreTenant returns text (rendered, whole) with the placeholders of the values a
// namespaced Guardrail masked restored.
func (s *Session) restoreTenant(text []byte, json bool) []byte {
	if len(text) == 0 {
		return text
	}
	t := newTextBuf(string(text))
	rs := s.tenantRestorations(t, t.base, t.total, json)
	if len(rs) == 0 {
		return text
	}
	return t.renderRestored(nil, 0, t.total.b, rs)
}

// restoredView returns t's text [from, to) as the client receives it with the
// restorations rs (upstream offsets inside the range, none overlapping an edit): a buffer
// over the same bytes and coordinates whose edits are t's in the range and, for each
// restoration, one that replaces the placeholder by its value. Rendering it gives the
// restored text, and its windows map what a classifier finds there back to upstream
// ranges of t: a span touching a value covers its whole placeholder. The view is only
// read; edits go to t (textBuf.redactOnto).
func (t *textBuf) restoredView(from, to pos, rs []restoration) *textBuf {
	lo, hi := from.b-t.base.b, to.b-t.base.b
	v := &textBuf{buf: t.buf[lo:hi:hi], base: from, total: to}
	edits := t.edits
	for len(edits) > 0 && edits[0].end.b <= from.b {
		edits = edits[1:]
	}
	cur := from
	for len(edits) > 0 && edits[0].start.b < to.b || len(rs) > 0 {
		if len(rs) == 0 || len(edits) > 0 && edits[0].start.b < to.b && edits[0].start.b < rs[0].start {
			e := edits[0]
			if e.end.b > to.b {
				// A strip of the stream's rest, made by an evaluation of this round.
				e.end = to
			}
			v.edits = append(v.edits, e)
			cur = e.end
			edits = edits[1:]
			continue
		}
		r := rs[0]
		rs = rs[1:]
		start := t.posOf(r.start, cur)
		end := t.posOf(r.end, start)
		v.edits = append(v.edits, edit{start: start, end: end, repl: r.value})
		cur = end
	}
	return v
}

// judgeRestored judges, with the ClusterGuardrails of phase, t's text [from, to) with the
// tenant restorations rs (see restoredView), and applies their verdicts to t (see the top
// of this file). base says what the text is: its location, the released text before it
// (prefix, already restored), where t stops being changeable (floor), whether it is a
// stream's held text or a tool call; a Strip of a content that is neither marks base
// dropped. required is as judgeItems'.
func (s *Session) judgeRestored(ctx context.Context, phase policy.Phase, t *textBuf, from, to pos, rs []restoration,
	base *item, required func(*item) bool) (*Verdict, error) {
	var guards []*guard
	for _, gd := range s.e.guards {
		if gd.g.Cluster && gd.has(phase) {
			guards = append(guards, gd)
		}
	}
	if len(guards) == 0 {
		return nil, nil
	}
	r := &restoredRound{s: s, phase: phase, t: t, from: from, to: to, rs: rs, base: base, required: required,
		kept: make([]restoredResult, len(guards))}
	return s.compose(ctx, guards, r)
}

// restoredRound is a round of cluster evaluations on restored text. Each evaluation is
// sent the text as it is when it runs: a sanitizer's redaction hides what it matched from
// the ones after it, as in any round.
type restoredRound struct {
	s        *Session
	phase    policy.Phase
	t        *textBuf
	from, to pos
	rs       []restoration
	base     *item
	required func(*item) bool
	kept     []restoredResult
}

type restoredResult struct {
	ev   evaluation
	w    window
	view *textBuf
}

func (r *restoredRound) judge(ctx context.Context, i int, gd *guard) bool {
	live := make([]restoration, 0, len(r.rs))
	for _, x := range r.rs {
		if !r.t.edited(x.start, x.end) {
			live = append(live, x)
		}
	}
	it := *r.base
	it.doc = r.t.restoredView(r.from, r.to, live)
	ev, w, ok := judgeItem(ctx, gd, &it)
	if ok {
		r.kept[i] = restoredResult{ev: ev, w: w, view: it.doc}
	}
	return ok
}

func (r *restoredRound) apply(i int, gd *guard) *Verdict {
	k := &r.kept[i]
	b := r.base
	a, v := r.s.decide(gd, r.phase, b.where, &k.ev, target{tool: b.tool, required: r.required(b)})
	switch {
	case v != nil:
	case a == policy.ActionRedact:
		k.view.redactOnto(r.t, &k.w, k.ev.j.spans, gd.c.Categories, b.floor)
	case a == policy.ActionStrip && b.held:
		r.t.strip(maxPos(b.floor, r.from), r.t.total)
	case a == policy.ActionStrip:
		b.dropped = true
	}
	*k = restoredResult{}
	return v
}

func maxPos(a, b pos) pos {
	if b.b > a.b {
		return b
	}
	return a
}

// judgeRestoredWhole judges, when the cluster tier judges restored text at phase, the whole
// text [from, to) of t restored, after head (released text before from, rendered), and
// applies the verdicts as judgeRestored does; nothing is judged when neither holds a value
// to restore. json says the text is JSON (tool-call arguments, the object channel).
func (s *Session) judgeRestoredWhole(ctx context.Context, phase policy.Phase, t *textBuf, from, to pos, json bool,
	head []byte, base *item, required func(*item) bool) (*Verdict, error) {
	if !s.restoresFor(phase) {
		return nil, nil
	}
	rs := s.tenantRestorations(t, from, to, json)
	prefix := s.restoreTenant(head, json)
	if len(rs) == 0 && string(prefix) == string(head) {
		return nil, nil
	}
	base.prefix = prefix
	return s.judgeRestored(ctx, phase, t, from, to, rs, base, required)
}
