package telemetry

import (
	"sync"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
)

// The unit the guard reports to the control plane is the request, not the evaluation: a
// streamed answer may be judged dozens of times, and "wouldBlock: 12" must mean twelve
// requests. A request counts once per guardrail per distinct outcome its evaluations came
// to; allowed counts only when nothing else happened (a request allowed at Input and
// blocked at Output counts as blocked, not also as allowed). A category or rule counts
// once per guardrail per request in which it matched.

// RequestDecisions is what one request came to, handed to the sink when it ends. The
// sink must not keep its slices: they are the request's own buffers.
type RequestDecisions struct {
	// Decisions are one record per guardrail and outcome the request came to: the
	// request's first record with that outcome, whose guardrail, generation, phase,
	// findings, code and ids describe the decision. Records hold no text.
	Decisions []engine.Record
	// Matches are the categories and rules that matched, once per guardrail and name.
	Matches []Match
	// End is when the request ended.
	End time.Time
}

// Match is a category or rule that matched in a request under a guardrail.
type Match struct {
	Guardrail, Name string
}

// OnRequest installs the sink of every guarded request's decisions; it is called once,
// synchronously, as the request ends. Install it before traffic starts.
func (t *Telemetry) OnRequest(sink func(RequestDecisions)) { t.sink = sink }

// OnEvaluation installs the sink of every decision record (one per evaluation), called
// synchronously by Request.Record. Install it before traffic starts.
func (t *Telemetry) OnEvaluation(sink func(engine.Record)) { t.evalSink = sink }

// OnAudit installs the audit log's sink (runtime/audit): like OnRequest's, called once,
// synchronously, as each guarded request ends, with the same decisions. Nil (the default)
// adds nothing to a request. Install it before traffic starts.
func (t *Telemetry) OnAudit(sink func(RequestDecisions)) { t.audit = sink }

// Begin starts recording one request's decisions; Done must follow.
func (t *Telemetry) Begin() *Request {
	if t.sink == nil && t.evalSink == nil && t.audit == nil {
		// Nobody listens (a standalone guard): a shared Request that only forwards.
		return t.bare
	}
	r := &Request{t: t}
	r.first, r.matches = r.firstBuf[:0], r.matchBuf[:0]
	return r
}

// Request folds one request's records into its decisions (see the counting unit above).
// Its memory is bounded by guardrails × outcomes, not by the number of evaluations.
type Request struct {
	t *Telemetry
	// mu: evaluations of several guardrails may record concurrently.
	mu      sync.Mutex
	first   []engine.Record
	matches []Match
	// Most requests meet a guardrail or two: no allocation beyond the Request's own.
	firstBuf [2]engine.Record
	matchBuf [2]Match
}

// Record takes one decision record: telemetry's metrics and log, and the request's fold.
func (r *Request) Record(rec engine.Record) {
	r.t.Record(rec)
	if r.t.evalSink != nil {
		r.t.evalSink(rec)
	}
	if r.t.sink == nil && r.t.audit == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := false
	for i := range r.first {
		if r.first[i].Guardrail == rec.Guardrail && r.first[i].Outcome == rec.Outcome {
			seen = true
			break
		}
	}
	if !seen {
		// The engine does not reuse a record's findings once emitted: kept as they are.
		r.first = append(r.first, rec)
	}
	for _, f := range rec.Findings {
		if f.Kind == engine.FindingNotInspected {
			continue
		}
		m := Match{Guardrail: rec.Guardrail, Name: f.Name}
		dup := false
		for _, x := range r.matches {
			dup = dup || x == m
		}
		if !dup {
			r.matches = append(r.matches, m)
		}
	}
}

// Done hands the request's decisions to the sink.
func (r *Request) Done() {
	if r.t.sink == nil && r.t.audit == nil {
		return
	}
	r.mu.Lock()
	rd := RequestDecisions{Decisions: Fold(r.first), Matches: r.matches, End: time.Now()}
	r.first, r.matches = nil, nil
	r.mu.Unlock()
	if len(rd.Decisions) > 0 {
		if r.t.audit != nil {
			r.t.audit(rd)
		}
		if r.t.sink != nil {
			r.t.sink(rd)
		}
	}
}

// Fold turns the first record of each (guardrail, outcome) of a request into its
// decisions: every outcome counts, except allowed when the guardrail decided something
// else in the same request. It filters first in place.
func Fold(first []engine.Record) []engine.Record {
	out := first[:0]
	for i := range first {
		if first[i].Outcome == guardv1.OutcomeAllowed && decidedOtherwise(first, first[i].Guardrail) {
			continue
		}
		out = append(out, first[i])
	}
	return out
}

func decidedOtherwise(first []engine.Record, guardrail string) bool {
	for _, r := range first {
		if r.Guardrail == guardrail && r.Outcome != guardv1.OutcomeAllowed {
			return true
		}
	}
	return false
}
