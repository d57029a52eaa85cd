package engine

import (
	"context"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Snapshot takes a new snapshot of the object channel (a response with a JSON
// response_format), which replaces the previous one. Every snapshot is classified by the
// Stream guards (each evaluation counts against maxEvaluations; the text sent is truncated
// to maxInputChars from the start), then released whole unless the hold-back is
// Unbounded, in which case only the final snapshot is released by EndChannel. The object
// is the whole output: Strip escalates to Block.
func (s *Session) Snapshot(ctx context.Context, ch content.Channel, text string) (Step, error) {
	if s.stop != nil {
		return Step{Stop: s.stop}, nil
	}
	c, err := s.begin(ch, func(k content.Kind) bool { return k != content.Object })
	if err != nil {
		return Step{}, err
	}
	c.obj, c.objReleased = newTextBuf(text), false
	for _, gd := range s.e.stream {
		cu := &c.cur[gd.slot]
		cu.judged = true
		if max := gd.g.Streaming.MaxEvaluations; max > 0 && s.evals[gd.slot] >= max {
			cu.judged = false
			if !cu.skipped {
				cu.skipped = true
				s.emit(Record{Guardrail: gd.g.Key, Generation: gd.g.Generation, Classifier: gd.g.Classifier,
					Phase: policy.PhaseStream, Where: channelLocation(c.id), Outcome: guardv1.OutcomeNotInspected,
					Mode: gd.g.Mode, Partial: true})
			}
		}
	}
	it := &item{where: channelLocation(c.id), doc: c.obj, counted: true}
	judged := func(gd *guard, _ *item) bool { return c.cur[gd.slot].judged }
	if v, err := s.judgeItems(ctx, policy.PhaseStream, []*item{it}, judged, wholeOutput); v != nil || err != nil {
		return s.end(v, err)
	}
	if s.e.holdBack != policy.HoldBackUnbounded {
		return s.end(s.releaseObject(ctx, c))
	}
	return s.end(nil, nil)
}

// endObject ends the object channel: the final snapshot is classified by the Stream guards
// that skipped it (maxEvaluations; recorded partial), then by the Output phase, and
// released.
func (s *Session) endObject(ctx context.Context, c *channel) (*Verdict, error) {
	c.ended = true
	if c.obj == nil {
		return nil, nil
	}
	skipped := func(gd *guard, _ *item) bool { return !c.cur[gd.slot].judged }
	it := &item{where: channelLocation(c.id), doc: c.obj, partial: true}
	if v, err := s.judgeItems(ctx, policy.PhaseStream, []*item{it}, skipped, wholeOutput); v != nil || err != nil {
		return v, err
	}
	it = &item{where: channelLocation(c.id), doc: c.obj}
	if v, err := s.judgeItems(ctx, policy.PhaseOutput, []*item{it}, always, wholeOutput); v != nil || err != nil {
		return v, err
	}
	restored := &item{where: channelLocation(c.id)}
	if v, err := s.judgeRestoredWhole(ctx, policy.PhaseOutput, c.obj, c.obj.base, c.obj.total, true, nil, restored, wholeOutput); v != nil || err != nil {
		return v, err
	}
	return s.releaseObject(ctx, c)
}

// releaseObject releases the current snapshot, unless it was released unchanged already.
// When it restores a value a namespaced Guardrail masked, the ClusterGuardrails of the
// Stream phase judge it restored first (restored.go).
func (s *Session) releaseObject(ctx context.Context, c *channel) (*Verdict, error) {
	o := c.obj
	if c.objReleased && len(o.edits) == c.objEdits {
		return nil, nil
	}
	restored := &item{where: channelLocation(c.id)}
	if v, err := s.judgeRestoredWhole(ctx, policy.PhaseStream, o, o.base, o.total, true, nil, restored, wholeOutput); v != nil || err != nil {
		return v, err
	}
	text := o.bytes(0, o.total.b)
	var rs []restoration
	if s.vault.active() {
		// A snapshot replaces the last one: a placeholder still arriving at its end is
		// restored by the next snapshot, which has it whole.
		_, rs = s.vault.scan(text, 0, len(text), true, true, func(a, b int) bool { return o.edited(a, b) }, nil)
	}
	if len(o.edits) > 0 || len(rs) > 0 {
		n := len(s.scratch)
		s.scratch = o.renderRestored(s.scratch, 0, o.total.b, rs)
		text = s.scratch[n:]
	}
	c.objReleased, c.objEdits = true, len(o.edits)
	s.release = append(s.release, Chunk{Channel: c.id, Text: text, Replace: true})
	return nil, nil
}
