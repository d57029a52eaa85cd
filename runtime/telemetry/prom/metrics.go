package prom

import (
	"math"
	"slices"
	"sync/atomic"
)

// Counter counts events. It is a whole number: what the guard counts are events, and a
// whole number is one atomic add (counters of seconds and the like are CounterFuncs).
type Counter struct{ n atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.n.Add(n) }

// Value is the count.
func (c *Counter) Value() uint64 { return c.n.Load() }

// Gauge is a value that goes up and down.
type Gauge struct{ bits atomicFloat }

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.bits.store(v) }

// Add adds delta, which may be negative.
func (g *Gauge) Add(delta float64) { g.bits.add(delta) }

// Value is the gauge's value.
func (g *Gauge) Value() float64 { return g.bits.load() }

// Histogram counts observations in fixed buckets and sums them.
type Histogram struct {
	// upper are the buckets' upper bounds, shared by the series of a HistogramVec.
	upper []float64
	// counts[i] counts observations in (upper[i-1], upper[i]]; the last one, those above
	// every bound. The exposition's cumulative counts and _count are summed from them, so
	// a scrape never sees _count disagree with the +Inf bucket.
	counts []atomic.Uint64
	sum    atomicFloat
}

// Observe counts v in its bucket and adds it to the sum.
func (h *Histogram) Observe(v float64) {
	i := 0
	// A linear search: there are a dozen buckets and most observations fall in the first.
	for i < len(h.upper) && v > h.upper[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.add(v)
}

// atomicFloat is a float64 updated atomically.
type atomicFloat struct{ bits atomic.Uint64 }

func (f *atomicFloat) load() float64   { return math.Float64frombits(f.bits.Load()) }
func (f *atomicFloat) store(v float64) { f.bits.Store(math.Float64bits(v)) }

func (f *atomicFloat) add(delta float64) {
	for {
		old := f.bits.Load()
		if f.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+delta)) {
			return
		}
	}
}

// CounterVec is a counter per combination of label values.
type CounterVec struct{ v *vec[Counter] }

// WithLabelValues returns the counter of these label values, given in the order the labels
// were declared. It does not allocate once the series exists; the counter may be kept.
func (c *CounterVec) WithLabelValues(values ...string) *Counter { return c.v.with(values) }

// GaugeVec is a gauge per combination of label values.
type GaugeVec struct{ v *vec[Gauge] }

// WithLabelValues returns the gauge of these label values (see CounterVec.WithLabelValues).
func (g *GaugeVec) WithLabelValues(values ...string) *Gauge { return g.v.with(values) }

// Reset drops every series.
func (g *GaugeVec) Reset() { g.v.reset() }

// HistogramVec is a histogram per combination of label values.
type HistogramVec struct{ v *vec[Histogram] }

// WithLabelValues returns the histogram of these label values (see
// CounterVec.WithLabelValues).
func (h *HistogramVec) WithLabelValues(values ...string) *Histogram { return h.v.with(values) }

// NewCounter registers a counter without labels.
func (r *Registry) NewCounter(o Opts) *Counter { return r.NewCounterVec(o).WithLabelValues() }

// NewCounterVec registers a counter with these label names (at most four).
func (r *Registry) NewCounterVec(o Opts, labels ...string) *CounterVec {
	v := newVec(desc{o.Name, o.Help, typeCounter}, labels, func() *Counter { return &Counter{} },
		func(w *textWriter, name string, names, values []string, c *Counter) {
			w.sample(name, "", names, values, "", "", float64(c.Value()))
		})
	r.register(v)
	return &CounterVec{v}
}

// NewGauge registers a gauge without labels.
func (r *Registry) NewGauge(o Opts) *Gauge { return r.NewGaugeVec(o).WithLabelValues() }

// NewGaugeVec registers a gauge with these label names (at most four).
func (r *Registry) NewGaugeVec(o Opts, labels ...string) *GaugeVec {
	v := newVec(desc{o.Name, o.Help, typeGauge}, labels, func() *Gauge { return &Gauge{} },
		func(w *textWriter, name string, names, values []string, g *Gauge) {
			w.sample(name, "", names, values, "", "", g.Value())
		})
	r.register(v)
	return &GaugeVec{v}
}

// NewHistogramVec registers a histogram with these label names (at most four, not le).
func (r *Registry) NewHistogramVec(o HistogramOpts, labels ...string) *HistogramVec {
	upper := slices.Clone(o.Buckets)
	if n := len(upper); n > 0 && math.IsInf(upper[n-1], 1) {
		upper = upper[:n-1] // always there
	}
	for i, b := range upper {
		if math.IsNaN(b) || i > 0 && b <= upper[i-1] {
			panic("prom: " + o.Name + ": buckets must increase")
		}
	}
	if slices.Contains(labels, "le") {
		panic("prom: " + o.Name + ": le is the histogram's own label")
	}
	// The le label values, +Inf last, formatted once.
	le := make([]string, 0, len(upper)+1)
	for _, b := range upper {
		le = append(le, formatFloat(b))
	}
	le = append(le, "+Inf")
	v := newVec(desc{o.Name, o.Help, typeHistogram}, labels,
		func() *Histogram { return &Histogram{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)} },
		func(w *textWriter, name string, names, values []string, h *Histogram) {
			var cumulative uint64
			for i := range h.counts {
				cumulative += h.counts[i].Load()
				w.sample(name, "_bucket", names, values, "le", le[i], float64(cumulative))
			}
			w.sample(name, "_sum", names, values, "", "", h.sum.load())
			w.sample(name, "_count", names, values, "", "", float64(cumulative))
		})
	r.register(v)
	return &HistogramVec{v}
}
