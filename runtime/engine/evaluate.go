package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// evaluation is the result of one classifier call under one guardrail.
type evaluation struct {
	j judgment
	// code is set when the evaluation failed. The cause is not kept: it may quote content.
	code classify.Code
	dur  time.Duration
	// start is when the classifier call began (tracing); zero when none ran.
	start time.Time
	// partial: the text sent was truncated, or cadence evaluations were skipped.
	partial bool
	// open is where the text sent stops being settled (classify.Result.Open): the
	// classifier's when it reports pending text, the text's length otherwise.
	open int
}

// evaluate calls the guard's classifier under its timeout and judges the answer. A failed
// call, a deadline, an invalid answer or a rule that cannot be evaluated is an evaluation
// failure. The caller checks ctx afterwards: when the caller's own context ended, the
// evaluation decides nothing.
func evaluate(ctx context.Context, gd *guard, in classify.Input) (ev evaluation) {
	if gd.c == nil || gd.backend == nil {
		// A configuration error is not a runtime fail-open: it fails like
		// any evaluation, under the guardrail's failurePolicy.
		return failure(classify.CodeClassifierFailed)
	}
	start := time.Now()
	cctx := ctx
	if gd.timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, gd.timeout)
		defer cancel()
	}
	defer func() {
		// A backend's panic is its failure, not the sidecar's.
		if r := recover(); r != nil {
			ev = failure(classify.CodeClassifierFailed)
		}
		ev.dur, ev.start = time.Since(start), start
	}()
	res, err := gd.backend.Classify(cctx, in)
	if err != nil {
		code := classify.CodeOf(err)
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			code = classify.CodeTimeout
		}
		return failure(code)
	}
	if validate(gd.g, gd.c, res, len(in.Text)) != nil {
		return failure(classify.CodeInvalidAnswer)
	}
	open := len(in.Text)
	if in.More && gd.spans {
		if res.Open < 0 || res.Open > len(in.Text) {
			return failure(classify.CodeInvalidAnswer)
		}
		open, res = pending(res.Open, res)
	}
	j, err := judge(gd.g, gd.c, res)
	if err != nil {
		return failure(classify.CodeInvalidAnswer)
	}
	return evaluation{j: j, open: open}
}

// pending holds back what a span-capable classifier left undecided: a span that ends after
// open is pending, and so is the rest of the text from its start; a category matched only
// by pending spans does not match yet. The classifier already answers so
// (classify.Result.Open); the engine does not rely on it for the zero-leak property. It
// returns the settled length and the settled result (with fresh slices when anything was
// pending).
func pending(open int, res classify.Result) (int, classify.Result) {
	for changed := true; changed; {
		changed = false
		for _, sp := range res.Spans {
			if sp.End > open && sp.Start < open {
				open, changed = sp.Start, true
			}
		}
	}
	if !slices.ContainsFunc(res.Spans, func(sp classify.Span) bool { return sp.End > open }) {
		return open, res
	}
	var settled []classify.Span
	matched, held := make([]bool, len(res.Scores)), make([]bool, len(res.Scores))
	for _, sp := range res.Spans {
		in := sp.Category < len(res.Scores)
		switch {
		case sp.End <= open:
			settled = append(settled, sp)
			if in {
				matched[sp.Category] = true
			}
		case in:
			held[sp.Category] = true
		}
	}
	res.Spans = settled
	res.Scores = slices.Clone(res.Scores)
	for i := range res.Scores {
		if held[i] && !matched[i] {
			res.Scores[i] = 0
		}
	}
	return open, res
}

func failure(code classify.Code) evaluation { return evaluation{code: code} }

// unsupported is the decision on a part whose modality the guardrail selects but the
// classifier cannot inspect: an UNSUPPORTED failure when the
// policy is unset, otherwise a notInspected finding with Block, Warn or no action.
func unsupported(gd *guard, m classify.Modality) evaluation {
	if gd.g.Unsupported == policy.UnsupportedFail {
		return failure(classify.CodeUnsupported)
	}
	j := judgment{reason: gd.g.Reason, findings: []Finding{{Kind: FindingNotInspected, Name: m.String()}}}
	switch gd.g.Unsupported {
	case policy.UnsupportedBlock:
		j.action = policy.ActionBlock
	case policy.UnsupportedWarn:
		j.action = policy.ActionWarn
	}
	return evaluation{j: j}
}

// decide records an evaluation and returns the action to apply to the content (ActionAllow
// in Report mode) and, when the content must stop, the verdict. A failure stops the content
// under failurePolicy Closed, in either mode, and is recorded notInspected under Open.
func (s *Session) decide(gd *guard, phase policy.Phase, where Location, ev *evaluation, t target) (policy.Action, *Verdict) {
	g := gd.g
	rec := Record{Guardrail: g.Key, Generation: g.Generation, Classifier: g.Classifier, Phase: phase, Where: where,
		Mode: g.Mode, Duration: ev.dur, Partial: ev.partial}
	if ev.code != "" {
		rec.Code = ev.code
		if g.FailOpen {
			rec.Outcome = guardv1.OutcomeNotInspected
			s.emitAt(rec, ev.start)
			return policy.ActionAllow, nil
		}
		rec.Outcome = guardv1.OutcomeFailed
		s.emitAt(rec, ev.start)
		return policy.ActionAllow, &Verdict{Kind: Failed, Guardrail: g.Key, Reason: FailureMessage, Code: ev.code, Phase: phase}
	}
	a, escalated := effectOf(&ev.j, t)
	if a == policy.ActionPseudonymize {
		pseudonymCounts(&ev.j, gd.c.Categories)
	}
	rec.Outcome, rec.Findings, rec.Escalated = outcomeOf(a, g.Mode), ev.j.findings, escalated
	if rec.Outcome == guardv1.OutcomeAllowed && len(ev.j.findings) > 0 && ev.j.findings[0].Kind == FindingNotInspected {
		rec.Outcome = guardv1.OutcomeNotInspected
	}
	s.emitAt(rec, ev.start)
	if !gd.enforcing() {
		return policy.ActionAllow, nil
	}
	switch a {
	case policy.ActionWarn:
		s.warn(g.Key)
	case policy.ActionBlock:
		return a, &Verdict{Kind: Blocked, Guardrail: g.Key, Reason: ev.j.reason, Phase: phase}
	}
	return a, nil
}

// stops reports whether an evaluation of a non-sanitizing guard ends the content, so that
// the guard need not judge its remaining items.
func stops(gd *guard, ev *evaluation) bool {
	if ev.code != "" {
		return !gd.g.FailOpen
	}
	return gd.enforcing() && ev.j.action == policy.ActionBlock
}

// A round is the evaluations of one compose call. judge evaluates guard gd's share (gd is
// guards[i] of the call) and keeps the result; it reports whether there is anything to
// apply. judge runs concurrently for different guards. apply records a kept result and
// returns a verdict when the content must stop; it runs on the calling goroutine, in order.
type round interface {
	judge(ctx context.Context, i int, gd *guard) bool
	apply(i int, gd *guard) *Verdict
}

// compose runs one round of evaluations over guards, a run-ordered subset of the engine's, tier by tier (the ClusterGuardrails, then the namespace's): in a
// tier, sanitizers one after the other, each judging what the previous ones left, then
// the others concurrently on the sanitized content; the next tier judges what this one
// left, so a tenant's sanitizer never hides content from a ClusterGuardrail. The first sanitizer verdict
// ends the round; among the others, records are applied in key order and a block wins over
// a failure. When the caller's context ends, the round decides nothing more and returns its
// error. A round of one guard allocates nothing here.
func (s *Session) compose(ctx context.Context, guards []*guard, r round) (*Verdict, error) {
	// Tiers: ClusterGuardrails first, then the namespace's, each tier
	// judging what the one before left; guards is in run order, so a tier is a run.
	off := 0
	for off < len(guards) {
		end := off + 1
		for end < len(guards) && guards[end].g.Cluster == guards[off].g.Cluster {
			end++
		}
		if v, err := s.composeTier(ctx, guards, off, end, r); v != nil || err != nil {
			return v, err
		}
		off = end
	}
	return nil, nil
}

// composeTier is compose of one tier, guards[off:end].
func (s *Session) composeTier(ctx context.Context, guards []*guard, off, end int, r round) (*Verdict, error) {
	n := off
	for ; n < end && guards[n].sanitizer; n++ {
		judged := r.judge(ctx, n, guards[n])
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if judged {
			if v := r.apply(n, guards[n]); v != nil {
				return v, nil
			}
		}
	}
	judged := append(s.judged[:0], make([]bool, end-n)...)
	s.judged = judged
	if len(judged) == 1 {
		judged[0] = r.judge(ctx, n, guards[n])
	} else if len(judged) > 1 {
		runAll(guards[n:end], func(i int) { judged[i] = r.judge(ctx, n+i, guards[n+i]) })
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var stop *Verdict
	for i, ok := range judged {
		if !ok {
			continue
		}
		if v := r.apply(n+i, guards[n+i]); v != nil && (stop == nil || stop.Kind == Failed && v.Kind == Blocked) {
			stop = v
		}
	}
	return stop, nil
}

// runAll runs fn(i) for each guard and waits for all. Evaluations by remote backends, which
// wait on the network, run concurrently, one of them on the calling goroutine; built-in
// classifiers do microseconds of CPU work that a goroutine would only slow down, so they
// run on the calling goroutine while the remote calls are in flight.
func runAll(guards []*guard, fn func(i int)) {
	var wg *sync.WaitGroup
	first := -1
	for i, gd := range guards {
		switch {
		case !remote(gd):
		case first < 0:
			first = i
		default:
			if wg == nil {
				wg = &sync.WaitGroup{}
			}
			wg.Go(func() { fn(i) })
		}
	}
	for i, gd := range guards {
		if !remote(gd) {
			fn(i)
		}
	}
	if first >= 0 {
		fn(first)
	}
	if wg != nil {
		wg.Wait()
	}
}

// remote reports whether a guard's evaluation waits on a remote backend.
func remote(gd *guard) bool {
	return gd.c != nil && gd.backend != nil && gd.c.Backend != policy.BackendBuiltin
}
