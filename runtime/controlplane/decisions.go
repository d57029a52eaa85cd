package controlplane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// Aggregator counts a guard's decisions for the control plane: cumulative since it was
// made, under a random incarnation. Its memory is bounded by MaxDecisionKeys,
// MaxOverflowKeys, MaxMatchNames per guardrail and MaxSamples, however long the operator
// is unreachable. Safe for concurrent use.
type Aggregator struct {
	incarnation string
	started     time.Time

	mu         sync.Mutex
	guardrails map[string]*guardrailAgg
	keys       int
	merged     int64
	samples    []guardv1.Sample // the latest guardv1.MaxSamples since the last delivered batch
	// version counts changes; a batch is sent only when it moved since the last delivery.
	version uint64
	// classifiers: call figures by classifier key.
	classifiers map[string]*guardv1.ClassifierCalls
	// providers: usage by ModelProvider name.
	providers map[string]*guardv1.ProviderUsage
}

type guardrailAgg struct {
	last    time.Time
	counts  map[countKey]int64
	matches map[string]int64
}

type countKey struct {
	generation int64
	phase, cat string
	outcome    guardv1.Outcome
	code       string
}

// NewAggregator starts an incarnation.
func NewAggregator() *Aggregator {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Aggregator{incarnation: hex.EncodeToString(b[:]), started: time.Now(), guardrails: map[string]*guardrailAgg{},
		classifiers: map[string]*guardv1.ClassifierCalls{}, providers: map[string]*guardv1.ProviderUsage{}}
}

// Incarnation is the aggregator's random id.
func (a *Aggregator) Incarnation() string { return a.incarnation }

// Merged is how many decisions were counted into overflow keys, the breakdown being full.
func (a *Aggregator) Merged() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.merged
}

// Add counts one request's decisions; it is the telemetry sink (Telemetry.OnRequest).
func (a *Aggregator) Add(rd telemetry.RequestDecisions) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.version++
	for i := range rd.Decisions {
		r := &rd.Decisions[i]
		g := a.guardrails[r.Guardrail]
		if g == nil {
			g = &guardrailAgg{counts: map[countKey]int64{}, matches: map[string]int64{}}
			a.guardrails[r.Guardrail] = g
		}
		if rd.End.After(g.last) {
			g.last = rd.End
		}
		k := countKey{generation: r.Generation, phase: r.Phase.String(), outcome: r.Outcome, code: string(r.Code)}
		if len(r.Findings) > 0 {
			k.cat = r.Findings[0].Name
		}
		if _, ok := g.counts[k]; !ok {
			if a.keys >= guardv1.MaxDecisionKeys {
				// The breakdown is full: the request still counts, in its outcome's
				// overflow key (at most one per guardrail and outcome).
				k = countKey{outcome: k.outcome}
				a.merged++
			} else {
				a.keys++
			}
		}
		g.counts[k]++
		if r.Outcome != guardv1.OutcomeAllowed {
			a.sample(r)
		}
	}
	for _, m := range rd.Matches {
		g := a.guardrails[m.Guardrail]
		if g == nil {
			continue // matched without a decision: not counted (cannot happen)
		}
		name := m.Name
		if _, ok := g.matches[name]; !ok && len(g.matches) >= guardv1.MaxMatchNames {
			name = guardv1.OtherMatches
		}
		g.matches[name]++
	}
}

// Evaluated counts one evaluation's classifier call; it is the telemetry evaluation sink
// (Telemetry.OnEvaluation). An evaluation with neither a duration nor an error code made
// no call (nothing to inspect).
func (a *Aggregator) Evaluated(r engine.Record) {
	if r.Classifier == "" || (r.Duration <= 0 && r.Code == "") {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.classifiers[r.Classifier]
	if c == nil {
		if len(a.classifiers) >= guardv1.MaxClassifiers {
			return // a snapshot holds far fewer; figures, not counts of decisions
		}
		c = &guardv1.ClassifierCalls{Classifier: r.Classifier, Latency: make([]int64, len(guardv1.LatencyBucketsMs)+1)}
		a.classifiers[r.Classifier] = c
	}
	a.version++
	c.Calls++
	if r.Code != "" {
		if c.Errors == nil {
			c.Errors = map[string]int64{}
		}
		c.Errors[string(r.Code)]++
	}
	ms := r.Duration.Milliseconds()
	i := 0
	for i < len(guardv1.LatencyBucketsMs) && ms > guardv1.LatencyBucketsMs[i] {
		i++
	}
	c.Latency[i]++
}

// ProviderUsed counts a ModelProvider's usage; it is the telemetry provider sink
// (Telemetry.OnProviderUsage).
func (a *Aggregator) ProviderUsed(u telemetry.ProviderUsage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.providers[u.Provider]
	if p == nil {
		if len(a.providers) >= guardv1.MaxProviders {
			return // a guard names at most one per API family
		}
		p = &guardv1.ProviderUsage{Provider: u.Provider}
		a.providers[u.Provider] = p
	}
	a.version++
	p.Requests += u.Requests
	p.InputTokens += u.InputTokens
	p.OutputTokens += u.OutputTokens
}

func (a *Aggregator) sample(r *engine.Record) {
	s := guardv1.Sample{Guardrail: r.Guardrail, Generation: r.Generation, Phase: r.Phase.String(), Outcome: r.Outcome,
		Code: string(r.Code)}
	if guardv1.ValidID(r.IDs.RequestID) {
		s.RequestID = r.IDs.RequestID
	}
	for _, f := range r.Findings {
		if len(s.Findings) == 4 {
			break
		}
		s.Findings = append(s.Findings, guardv1.SampleFinding{Name: f.Name, Score: f.Score, Threshold: f.Threshold})
	}
	if len(a.samples) == guardv1.MaxSamples {
		copy(a.samples, a.samples[1:])
		a.samples = a.samples[:guardv1.MaxSamples-1]
	}
	a.samples = append(a.samples, s)
}

// Batch returns the cumulative batch and its version.
func (a *Aggregator) Batch() (guardv1.DecisionsRequest, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	req := guardv1.DecisionsRequest{Incarnation: a.incarnation, Started: a.started.UnixMilli(), Merged: a.merged,
		Samples: append([]guardv1.Sample(nil), a.samples...)}
	names := make([]string, 0, len(a.guardrails))
	for n := range a.guardrails {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := a.guardrails[n]
		gd := guardv1.GuardrailDecisions{Guardrail: n, Last: g.last.UnixMilli(), Counts: make([]guardv1.DecisionCount, 0, len(g.counts))}
		for k, v := range g.counts {
			gd.Counts = append(gd.Counts, guardv1.DecisionCount{Generation: k.generation, Phase: k.phase, Outcome: k.outcome,
				Category: k.cat, Code: k.code, Requests: v})
		}
		sort.Slice(gd.Counts, func(i, j int) bool { return guardv1.LessCount(gd.Counts[i], gd.Counts[j]) })
		if len(g.matches) > 0 {
			gd.Matches = make(map[string]int64, len(g.matches))
			for k, v := range g.matches {
				gd.Matches[k] = v
			}
		}
		req.Guardrails = append(req.Guardrails, gd)
	}
	names = names[:0]
	for n := range a.classifiers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := *a.classifiers[n]
		c.Latency = append([]int64(nil), c.Latency...)
		if c.Errors != nil {
			errs := make(map[string]int64, len(c.Errors))
			for k, v := range c.Errors {
				errs[k] = v
			}
			c.Errors = errs
		}
		req.Classifiers = append(req.Classifiers, c)
	}
	names = names[:0]
	for n := range a.providers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		req.Providers = append(req.Providers, *a.providers[n])
	}
	return req, a.version
}

// delivered drops the samples a delivered batch carried (those still in the ring from
// before version are gone only if nothing was added since).
func (a *Aggregator) delivered(version uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.version == version {
		a.samples = a.samples[:0]
	}
}

// Reporter sends the aggregator's batch to the control plane every Interval and once
// more on Flush at shutdown. A failed send is not retried by itself: the next batch,
// cumulative, supersedes it.
type Reporter struct {
	URL       string
	TokenFile string
	CAFile    string
	// Interval between batches; zero means 10s.
	Interval time.Duration
	Agg      *Aggregator
	Log      *slog.Logger
	// HTTPClient overrides the client built from CAFile (tests).
	HTTPClient *http.Client

	mu       sync.Mutex // one send at a time
	failures int64
	hc       *http.Client
	sent     uint64
	failing  bool
	lastWarn time.Time
}

// Run sends a batch every interval until ctx ends.
func (r *Reporter) Run(ctx context.Context) {
	interval := r.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = r.Flush(ctx)
		}
	}
}

// Failures is how many batches could not be delivered (each superseded by the next).
func (r *Reporter) Failures() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures
}

// Flush sends the batch now if anything was counted since the last delivery.
func (r *Reporter) Flush(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	req, version := r.Agg.Batch()
	if version == r.sent {
		return nil
	}
	err := r.send(ctx, &req)
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err != nil {
		// Said when it begins and then at most every 5 minutes: the counts are kept.
		if !r.failing || time.Since(r.lastWarn) > 5*time.Minute {
			log.Warn("Decisions not delivered to the control plane; they are kept and sent with the next batch", "error", err.Error())
			r.lastWarn = time.Now()
		}
		r.failing = true
		r.failures++
		return err
	}
	if r.failing {
		log.Info("Decisions delivered to the control plane again")
	}
	r.failing = false
	r.sent = version
	r.Agg.delivered(version)
	return nil
}

func (r *Reporter) send(ctx context.Context, req *guardv1.DecisionsRequest) error {
	if r.hc == nil {
		hc := r.HTTPClient
		if hc == nil {
			var err error
			if hc, err = HTTPClientFor(r.CAFile); err != nil {
				return err
			}
		}
		r.hc = hc
	}
	token, err := os.ReadFile(r.TokenFile)
	if err != nil {
		return fmt.Errorf("reading the service-account token: %w", err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	u, err := url.JoinPath(r.URL, guardv1.DecisionsPath)
	if err != nil {
		return fmt.Errorf("control-plane URL: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	hr.Header.Set("Content-Type", "application/json")
	resp, err := r.hc.Do(hr)
	if err != nil {
		return fmt.Errorf("control plane: %w", redactURLError(err))
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("control plane answered %s: %s", resp.Status, firstLine(raw))
	}
	return nil
}
