package engine

import (
	"context"
	"slices"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Input judges the request's messages before the upstream call (the Input phase). Each
// text part and each media part is one classifier call per guardrail; a guardrail with
// messages: Last judges the parts of the last message that still has parts, one with All
// judges every message. Strip drops a part (a message whose parts are all dropped is
// dropped too), and escalates to Block when the part is the last user part left; Redact
// rewrites a text part.
//
// The result says whether the request is refused and, otherwise, what to send upstream.
// The error is the caller's context's when it ended during an evaluation.
func (s *Session) Input(ctx context.Context, msgs []Message) (InputResult, error) {
	if s.stop != nil {
		return InputResult{Stop: s.stop}, nil
	}
	if !slices.ContainsFunc(s.e.guards, func(gd *guard) bool { return gd.has(policy.PhaseInput) }) {
		return InputResult{Messages: msgs}, nil
	}
	var items []*item
	for mi, m := range msgs {
		for pi, p := range m.Parts {
			it := &item{where: inputLocation(mi, pi), modality: p.Modality, role: m.Role, message: mi, dropped: p.Dropped}
			if p.Modality == classify.Text {
				it.doc = newTextBuf(p.Text)
			} else {
				it.media = p.Media
			}
			items = append(items, it)
		}
	}
	selects := func(gd *guard, it *item) bool { return gd.g.AllMessages || it.message == lastMessage(items) }
	required := func(it *item) bool {
		return it.role == RoleUser && !slices.ContainsFunc(items, func(o *item) bool {
			return o != it && !o.dropped && o.role == RoleUser
		})
	}
	v, err := s.judgeItems(ctx, policy.PhaseInput, items, selects, required)
	if err != nil {
		return InputResult{}, err
	}
	if v != nil {
		s.stop = v
		return InputResult{Stop: v}, nil
	}
	out := make([]Message, len(msgs))
	k := 0
	for mi, m := range msgs {
		out[mi] = Message{Role: m.Role, Parts: make([]Part, len(m.Parts))}
		dropped := len(m.Parts) > 0
		for pi, p := range m.Parts {
			it := items[k]
			k++
			p.Dropped = it.dropped
			if it.doc != nil && len(it.doc.edits) > 0 {
				p.Text = it.doc.String()
			}
			out[mi].Parts[pi] = p
			dropped = dropped && p.Dropped
		}
		out[mi].Dropped = dropped || m.Dropped
	}
	return InputResult{Messages: out}, nil
}

// lastMessage returns the index of the last message with a part not dropped, or -1.
func lastMessage(items []*item) int {
	for i := len(items) - 1; i >= 0; i-- {
		if !items[i].dropped {
			return items[i].message
		}
	}
	return -1
}
