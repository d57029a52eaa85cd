// Package telemetry is where the guard's decisions and request outcomes go: Prometheus
// metrics (package prom) with bounded labels (guardrail, classifier, category, phase,
// outcome, family — never request ids or content) and an opt-in JSON-lines decision log.
// Decision records carry no text, so neither do the log nor the metrics.
package telemetry

import (
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom"
)

// Telemetry records decisions and request outcomes.
type Telemetry struct {
	// Registry holds the guard's metrics; it serves the admin listener's /metrics.
	Registry *prom.Registry

	requests       *prom.CounterVec
	decisions      *prom.CounterVec
	findings       *prom.CounterVec
	pseudonymized  *prom.CounterVec
	classifierTime *prom.HistogramVec
	addedLatency   *prom.HistogramVec
	heldBack       *prom.Gauge
	aborted        *prom.CounterVec
	policyVersion  *prom.GaugeVec
	policyErrors   *prom.Counter
	mcp            *mcpMetrics
	providers      *providerMetrics

	logMu sync.Mutex
	log   io.Writer

	// sink receives each request's decisions (OnRequest); nil when nobody listens.
	sink func(RequestDecisions)
	// evalSink receives every decision record (OnEvaluation).
	evalSink func(engine.Record)
	// audit receives each request's decisions for the audit log (OnAudit); nil when off.
	audit func(RequestDecisions)
	// bare is the Request of every request when nobody listens.
	bare *Request
	// lastDecision holds, per phase, the decisions series recorded last: a stream's
	// evaluations record the same guardrail and outcome again and again, and comparing
	// those two strings is cheaper than finding the series by its three labels.
	lastDecision [4]atomic.Pointer[decisionSeries]
}

// decisionSeries is one series of guard_decisions_total with its labels.
type decisionSeries struct {
	guardrail string
	outcome   guardv1.Outcome
	c         *prom.Counter
}

// New returns telemetry with its own registry, the Go runtime's and the process's metrics
// included (prom.RegisterGo, prom.RegisterProcess). decisionLog, when not nil, receives one
// JSON line per decision record.
func New(decisionLog io.Writer) *Telemetry {
	reg := prom.NewRegistry()
	t := &Telemetry{
		Registry: reg,
		log:      decisionLog,
		requests: reg.NewCounterVec(prom.Opts{
			Name: "guard_requests_total",
			Help: "Requests handled, by API family and outcome (allowed, blocked, failed, refused, upstream_error, passthrough).",
		}, "family", "outcome"),
		decisions: reg.NewCounterVec(prom.Opts{
			Name: "guard_decisions_total",
			Help: "Guardrail evaluations, by guardrail, phase and outcome (allowed, warned, blocked, failed, notInspected, wouldBlock, ...).",
		}, "guardrail", "phase", "outcome"),
		findings: reg.NewCounterVec(prom.Opts{
			Name: "guard_findings_total",
			Help: "Matched categories and rules, by guardrail and category or rule name.",
		}, "guardrail", "category"),
		pseudonymized: reg.NewCounterVec(prom.Opts{
			Name: "guard_pseudonymized_values_total",
			Help: "Values replaced by placeholders (outcome pseudonymized) or that would have been (wouldPseudonymize, Report mode), by guardrail and category. Never the values.",
		}, "guardrail", "category", "outcome"),
		classifierTime: reg.NewHistogramVec(prom.HistogramOpts{
			Name:    "guard_classifier_duration_seconds",
			Help:    "Duration of classifier evaluations, by classifier.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, "classifier"),
		addedLatency: reg.NewHistogramVec(prom.HistogramOpts{
			Name:    "guard_added_latency_seconds",
			Help:    "Time the guard added to a request or stream event, outside the upstream's own time, by API family.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, "family"),
		heldBack: reg.NewGauge(prom.Opts{
			Name: "guard_held_back_bytes",
			Help: "Bytes of streamed content currently withheld from clients (hold-back and tool calls).",
		}),
		aborted: reg.NewCounterVec(prom.Opts{
			Name: "guard_streams_aborted_total",
			Help: "Streams ended early, by reason (blocked, failed, client_gone, upstream_error).",
		}, "reason"),
		policyVersion: reg.NewGaugeVec(prom.Opts{
			Name: "guard_policy_info",
			Help: "The policy snapshot in force (value 1), by version.",
		}, "version"),
		policyErrors: reg.NewCounter(prom.Opts{
			Name: "guard_policy_errors_total",
			Help: "Policy updates refused (the last good policy stays in force).",
		}),
	}
	t.mcp = newMCPMetrics(reg)
	t.providers = newProviderMetrics(reg)
	prom.RegisterGo(reg)
	prom.RegisterProcess(reg)
	t.bare = &Request{t: t}
	return t
}

// decision returns the decisions counter of r's guardrail, phase and outcome.
func (t *Telemetry) decision(r engine.Record) *prom.Counter {
	if int(r.Phase) >= len(t.lastDecision) {
		return t.decisions.WithLabelValues(r.Guardrail, r.Phase.String(), string(r.Outcome))
	}
	last := &t.lastDecision[r.Phase]
	if d := last.Load(); d != nil && d.guardrail == r.Guardrail && d.outcome == r.Outcome {
		return d.c
	}
	d := &decisionSeries{guardrail: r.Guardrail, outcome: r.Outcome,
		c: t.decisions.WithLabelValues(r.Guardrail, r.Phase.String(), string(r.Outcome))}
	last.Store(d)
	return d.c
}

// Record takes one decision record: metrics, and the decision log when enabled.
func (t *Telemetry) Record(r engine.Record) {
	t.decision(r).Inc()
	for _, f := range r.Findings {
		t.findings.WithLabelValues(r.Guardrail, f.Name).Inc()
		if f.Count > 0 {
			t.pseudonymized.WithLabelValues(r.Guardrail, f.Name, string(r.Outcome)).Add(uint64(f.Count))
		}
	}
	if r.Duration > 0 {
		t.classifierTime.WithLabelValues(r.Classifier).Observe(r.Duration.Seconds())
	}
	if t.log == nil {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		return // a record is plain data; this does not happen
	}
	b = append(b, '\n')
	t.logMu.Lock()
	_, _ = t.log.Write(b)
	t.logMu.Unlock()
}

// Request counts a request's outcome.
func (t *Telemetry) Request(family, outcome string) {
	t.requests.WithLabelValues(family, outcome).Inc()
}

// Added observes time the guard added to a request or stream event.
func (t *Telemetry) Added(family string, d time.Duration) { t.AddedFor(family).Observe(d) }

// AddedFor returns what Added observes for family, for a caller that observes it many
// times: a stream, once per event.
func (t *Telemetry) AddedFor(family string) Added {
	return Added{t.addedLatency.WithLabelValues(family)}
}

// Added observes the time the guard added, for one family.
type Added struct{ h *prom.Histogram }

// Observe counts d.
func (a Added) Observe(d time.Duration) { a.h.Observe(d.Seconds()) }

// HeldBack adds delta (positive or negative) to the bytes currently withheld.
func (t *Telemetry) HeldBack(delta int) { t.heldBack.Add(float64(delta)) }

// Aborted counts a stream ended early.
func (t *Telemetry) Aborted(reason string) { t.aborted.WithLabelValues(reason).Inc() }

// Policy records the snapshot now in force.
func (t *Telemetry) Policy(version string) {
	t.policyVersion.Reset()
	t.policyVersion.WithLabelValues(version).Set(1)
}

// PolicyError counts a refused policy update.
func (t *Telemetry) PolicyError() { t.policyErrors.Inc() }
