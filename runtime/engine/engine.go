package engine

import (
	"slices"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Backends resolves a classifier key (namespace/name) to the backend that judges for it;
// nil when there is none.
type Backends func(classifierKey string) classify.Classifier

// BackendMap returns Backends that look keys up in m.
func BackendMap(m map[string]classify.Classifier) Backends {
	return func(key string) classify.Classifier { return m[key] }
}

// Config is what an Engine enforces.
type Config struct {
	// Guardrails are the compiled guardrails that apply (those selecting the pod).
	Guardrails []*policy.Guardrail
	// Classifiers are the compiled classifiers they use (for example a snapshot's).
	Classifiers []*policy.Classifier
	// Backends resolves classifier keys to backends.
	Backends Backends
}

// guard is a guardrail prepared for enforcement.
type guard struct {
	g       *policy.Guardrail
	c       *policy.Classifier
	backend classify.Classifier
	// sanitizer guards run first, sequentially.
	sanitizer bool
	// maxChars is the effective maxInputChars: the smaller of the guardrail's and the
	// classifier's, 0 when neither is set.
	maxChars int
	// timeout bounds an evaluation: the smaller of the guardrail's and the classifier's.
	timeout time.Duration
	// slot is the guard's index among the engine's stream guards (-1 without Stream).
	slot int
	// spans: the classifier returns spans, so a stream's evaluations report pending text
	// (classify.Result.Open) and are incremental; hint is its longest match.
	spans bool
	hint  int
}

func (gd *guard) enforcing() bool { return gd.g.Mode == policy.ModeEnforce }

func (gd *guard) has(p policy.Phase) bool { return gd.g.Phases.Has(p) }

// hasPhase reports whether one of the engine's guardrails judges phase p.
func (e *Engine) hasPhase(p policy.Phase) bool { return len(e.phaseGuards(p)) > 0 }

// phaseGuards returns the guards that judge phase p, in run order.
func (e *Engine) phaseGuards(p policy.Phase) []*guard {
	if int(p) >= len(e.byPhase) {
		return nil
	}
	return e.byPhase[p]
}

// Engine enforces a set of guardrails. It is immutable and safe for concurrent use; each
// request gets its own Session.
type Engine struct {
	// guards in run order (policy.RunOrder): the cluster tier, then the namespace tier;
	// in each, sanitizers by priority then name, then the others by key.
	guards []*guard
	// stream are the guards with the Stream phase, in run order.
	stream []*guard
	// byPhase are, per phase, the guards that judge it, in run order.
	byPhase [policy.PhaseToolResults + 1][]*guard
	// holdBack is the largest fixed hold-back in characters over the Enforce guardrails
	// with the Stream phase, or policy.HoldBackUnbounded. Guardrails that follow pending
	// matches (policy.HoldBackPending) add their own limit per channel (releasable).
	holdBack int
	// pending is set when an Enforce stream guard follows pending matches or has a
	// span-capable classifier: releases then look at each guard's settled text.
	pending bool
	// sentences is set when a stream guard segments by sentences.
	sentences bool
	// window is the largest chunkWindow in use: how many delta starts a channel keeps.
	window int
	// headChars is how many leading characters of a streamed channel the Output phase
	// judges at its end: 0 when no guard has Output, -1 when one judges it whole.
	headChars int
	// pseudonymizes is set when a guardrail's action is Pseudonymize.
	pseudonymizes bool
	// clusterPhases are the phases ClusterGuardrails judge (restored.go).
	clusterPhases policy.PhaseSet
}

// New prepares an engine. A guardrail whose classifier or backend cannot be found is kept:
// each of its evaluations fails with code CLASSIFIER_FAILED, so that it refuses traffic
// unless its failurePolicy is Open.
func New(cfg Config) *Engine {
	e := &Engine{}
	classifiers := make(map[string]*policy.Classifier, len(cfg.Classifiers))
	for _, c := range cfg.Classifiers {
		classifiers[c.Key] = c
	}
	for _, g := range cfg.Guardrails {
		gd := &guard{g: g, c: classifiers[g.Classifier], sanitizer: g.Sanitizer(), timeout: g.Timeout, maxChars: g.MaxInputChars, slot: -1}
		if gd.c != nil && cfg.Backends != nil {
			gd.backend = cfg.Backends(g.Classifier)
		}
		if gd.c != nil {
			gd.maxChars = minPositive(gd.maxChars, gd.c.MaxInputChars)
			gd.timeout = minPositive(gd.timeout, gd.c.Timeout)
			gd.spans, gd.hint = gd.c.Spans && gd.backend != nil, gd.c.HoldBackHint
		}
		e.guards = append(e.guards, gd)
	}
	slices.SortStableFunc(e.guards, func(a, b *guard) int { return policy.RunOrder(a.g, b.g) })
	for _, gd := range e.guards {
		for p := range e.byPhase {
			if gd.has(policy.Phase(p)) {
				e.byPhase[p] = append(e.byPhase[p], gd)
			}
		}
		e.pseudonymizes = e.pseudonymizes || gd.g.Action == policy.ActionPseudonymize
		if gd.g.Cluster {
			e.clusterPhases |= gd.g.Phases
		}
		if gd.has(policy.PhaseOutput) {
			e.headChars = maxHead(e.headChars, gd.maxChars)
		}
		if !gd.has(policy.PhaseStream) {
			continue
		}
		gd.slot = len(e.stream)
		e.stream = append(e.stream, gd)
		e.window = max(e.window, gd.g.Streaming.ChunkWindow)
		e.sentences = e.sentences || gd.g.Streaming.Sentences
		e.pending = e.pending || gd.enforcing() && (gd.spans || gd.g.Streaming.HoldBack == policy.HoldBackPending)
		if gd.enforcing() && e.holdBack != policy.HoldBackUnbounded {
			if hb := gd.g.Streaming.HoldBack; hb == policy.HoldBackUnbounded || hb > e.holdBack {
				e.holdBack = hb
			}
		}
	}
	return e
}

func minPositive[T int | time.Duration](a, b T) T {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// maxHead folds a guard's Output truncation into the head length: -1 (whole) dominates.
func maxHead(head, chars int) int {
	if head < 0 || chars <= 0 {
		return -1
	}
	return max(head, chars)
}

// HoldBack returns the largest fixed hold-back of a stream in characters, or
// policy.HoldBackUnbounded. Guardrails that follow pending matches withhold, on top of
// it, the text their classifier reports pending or has not judged yet.
func (e *Engine) HoldBack() int { return e.holdBack }

// Options configure a session.
type Options struct {
	// IDs are copied into every decision record.
	IDs IDs
	// Record receives each decision record as it is made, synchronously, in a
	// deterministic order. The session keeps no records, so that its memory does not grow
	// with the stream. Nil drops them.
	Record func(Record)
	// Trace, when not nil, sees each decision record too, with the time its evaluation
	// started (zero when no classifier ran): tracing (runtime/tracing) makes a span of it.
	Trace Tracer
}

// Tracer sees a session's decision records as they are made (Options.Trace). start is when
// the evaluation began, zero for a record without one; rec.Duration is how long it took.
type Tracer interface {
	Evaluation(rec Record, start time.Time)
}

// NewSession starts enforcing one request. A session is used by one goroutine at a time.
func (e *Engine) NewSession(opts Options) *Session {
	return &Session{e: e, opts: opts, chans: map[content.Channel]*channel{}, evals: make([]int, len(e.stream)),
		windows: make([][]byte, len(e.stream))}
}

// Session enforces the guardrails on one request and its response. It is not safe for
// concurrent use: the proxy drives it from the request's goroutine. Calls may block while
// classifiers run; evaluations of non-sanitizing guardrails run concurrently inside a call,
// and every goroutine a call starts has ended when it returns.
type Session struct {
	e    *Engine
	opts Options
	// stop is the verdict that ended the request or stream; every later call returns it.
	stop     *Verdict
	finished bool
	chans    map[content.Channel]*channel
	last     *channel   // the channel chans gave last
	order    []*channel // channels in the order they opened
	// evals counts cadence evaluations per stream guard (maxEvaluations).
	evals  []int
	warned []string
	// dueBuf backs the list of guards due in a step; windows, per stream guard, the text
	// of its evaluation window.
	dueBuf  []*guard
	windows [][]byte
	// judged backs compose's list of the guards with a result to apply; round and items
	// are the rounds of stream evaluations and of whole items, kept for their buffers.
	judged []bool
	round  cadenceRound
	items  closureRound
	// release and scratch back the current step's chunks; reset by every call.
	release []Chunk
	scratch []byte
	// vault maps the values Pseudonymize guardrails replaced to their placeholders, for
	// this request only; nil when nothing was pseudonymized (pseudonym.go). restored backs
	// the restorations of a release.
	vault    *vault
	restored []restoration
}

// End drops what the session holds of the request: the pseudonymization mapping, whose
// values must not outlive it. The proxy calls it when the request is over; a session is
// not used after End.
func (s *Session) End() {
	s.vault.drop()
	s.vault = nil
	clear(s.restored[:cap(s.restored)])
}

// reservePlaceholders records the placeholders the request already spells, so that none
// is given to a value (see vault.reserve).
func (s *Session) reservePlaceholders(items []*item) {
	if !s.e.pseudonymizes {
		return
	}
	if s.vault == nil {
		s.vault = &vault{}
	}
	for _, it := range items {
		if it.doc != nil {
			s.vault.reserve(string(it.doc.buf))
		}
	}
}

// Warnings returns the keys of the Enforce guardrails that warned so far, sorted: the
// value of the response header listing warned guardrails.
func (s *Session) Warnings() []string { return slices.Clone(s.warned) }

func (s *Session) warn(key string) {
	if i, found := slices.BinarySearch(s.warned, key); !found {
		s.warned = slices.Insert(s.warned, i, key)
	}
}

func (s *Session) emit(r Record) { s.emitAt(r, time.Time{}) }

// emitAt emits the record of an evaluation that started at start.
func (s *Session) emitAt(r Record, start time.Time) {
	if s.opts.Record != nil {
		r.IDs = s.opts.IDs
		s.opts.Record(r)
	}
	if s.opts.Trace != nil {
		s.opts.Trace.Evaluation(r, start)
	}
}
