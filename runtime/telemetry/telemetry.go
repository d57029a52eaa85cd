// Package telemetry is where the guard's decisions and request outcomes go: Prometheus
// metrics with bounded labels (guardrail, classifier, category, phase, outcome, family —
// never request ids or content) and an opt-in JSON-lines decision log. Decision records
// carry no text (DESIGN.md §4.9), so neither do the log nor the metrics.
package telemetry

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
)

// Telemetry records decisions and request outcomes.
type Telemetry struct {
	Registry *prometheus.Registry

	requests       *prometheus.CounterVec
	decisions      *prometheus.CounterVec
	findings       *prometheus.CounterVec
	classifierTime *prometheus.HistogramVec
	addedLatency   *prometheus.HistogramVec
	heldBack       prometheus.Gauge
	aborted        *prometheus.CounterVec
	policyVersion  *prometheus.GaugeVec
	policyErrors   prometheus.Counter

	logMu sync.Mutex
	log   io.Writer

	// sink receives each request's decisions (OnRequest); nil when nobody listens.
	sink func(RequestDecisions)
	// evalSink receives every decision record (OnEvaluation).
	evalSink func(engine.Record)
	// bare is the Request of every request when nobody listens.
	bare *Request
}

// New returns telemetry with its own registry (Go and process collectors included).
// decisionLog, when not nil, receives one JSON line per decision record.
func New(decisionLog io.Writer) *Telemetry {
	t := &Telemetry{
		Registry: prometheus.NewRegistry(),
		log:      decisionLog,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guard_requests_total",
			Help: "Requests handled, by API family and outcome (allowed, blocked, failed, refused, upstream_error, passthrough).",
		}, []string{"family", "outcome"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guard_decisions_total",
			Help: "Guardrail evaluations, by guardrail, phase and outcome (allowed, warned, blocked, failed, notInspected, wouldBlock, ...).",
		}, []string{"guardrail", "phase", "outcome"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guard_findings_total",
			Help: "Matched categories and rules, by guardrail and category or rule name.",
		}, []string{"guardrail", "category"}),
		classifierTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "guard_classifier_duration_seconds",
			Help:    "Duration of classifier evaluations, by classifier.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"classifier"}),
		addedLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "guard_added_latency_seconds",
			Help:    "Time the guard added to a request or stream event, outside the upstream's own time, by API family.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"family"}),
		heldBack: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "guard_held_back_bytes",
			Help: "Bytes of streamed content currently withheld from clients (hold-back and tool calls).",
		}),
		aborted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guard_streams_aborted_total",
			Help: "Streams ended early, by reason (blocked, failed, client_gone, upstream_error).",
		}, []string{"reason"}),
		policyVersion: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "guard_policy_info",
			Help: "The policy snapshot in force (value 1), by version.",
		}, []string{"version"}),
		policyErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guard_policy_errors_total",
			Help: "Policy updates refused (the last good policy stays in force).",
		}),
	}
	t.bare = &Request{t: t}
	t.Registry.MustRegister(t.requests, t.decisions, t.findings, t.classifierTime, t.addedLatency,
		t.heldBack, t.aborted, t.policyVersion, t.policyErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return t
}

// Record takes one decision record: metrics, and the decision log when enabled.
func (t *Telemetry) Record(r engine.Record) {
	t.decisions.WithLabelValues(r.Guardrail, r.Phase.String(), string(r.Outcome)).Inc()
	for _, f := range r.Findings {
		t.findings.WithLabelValues(r.Guardrail, f.Name).Inc()
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
func (t *Telemetry) Added(family string, d time.Duration) {
	t.addedLatency.WithLabelValues(family).Observe(d.Seconds())
}

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
