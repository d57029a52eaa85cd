// Package prom is the guard's own small Prometheus instrumentation: counters, gauges and
// histograms with fixed label names, values read by a function at scrape time, the Go
// runtime's and the process's metrics (RegisterGo, RegisterProcess), and a writer of the
// text exposition format 0.0.4.
//
// Why not client_golang, which the manager uses and STYLE.md would prefer: the guard runs
// beside the app in every opted-in pod, and most of its idle memory is the pages of its own
// binary that running code touches, so every package linked costs memory in every pod.
// Linking client_golang (with prometheus/common, procfs and client_model) cost the guard
// 1 MiB of its 16 MiB idle; what the guard uses of it is this package. Left out on purpose:
// exemplars, native histograms, summaries (other than the Go runtime's pause summary),
// OpenMetrics, protobuf and compression.
//
// Recording is lock-free: a series is found by a map read (label values as the key, no
// allocation) and counted with an atomic add; callers may also keep the series they use.
// Metrics are created through a Registry, which panics on a name or label that is invalid or
// taken: those are programming errors, caught at start.
package prom

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ContentType is the media type of the text exposition format the registry writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Opts names and describes a metric.
type Opts struct {
	// Name is the full metric name, with its unit and _total suffixes.
	Name string
	// Help is one sentence saying what is measured.
	Help string
}

// HistogramOpts names and describes a histogram and fixes its buckets.
type HistogramOpts struct {
	// Name is the histogram's name; its series are Name_bucket, Name_sum and Name_count.
	Name string
	// Help is one sentence saying what is observed.
	Help string
	// Buckets are the upper bounds (inclusive) of the buckets, increasing. A +Inf bucket is
	// always added.
	Buckets []float64
}

// Registry holds metrics and writes them in the text exposition format.
type Registry struct {
	// mu guards families, which are kept sorted by name: the exposition's order.
	mu       sync.Mutex
	families []family
	// scrapeMu serializes scrapes: beforeScrape hooks fill the collectors' snapshots.
	scrapeMu     sync.Mutex
	beforeScrape []func()
	lastSize     int
}

// family is one metric name of the exposition: its HELP and TYPE lines and its samples.
type family interface {
	familyName() string
	// write appends the family to w; a family without series writes nothing.
	write(w *textWriter)
}

// metricType is the TYPE of a family.
type metricType string

const (
	typeCounter   metricType = "counter"
	typeGauge     metricType = "gauge"
	typeHistogram metricType = "histogram"
	typeSummary   metricType = "summary"
)

// desc is what every family has: its name, HELP and TYPE.
type desc struct {
	name, help string
	typ        metricType
}

func (d *desc) familyName() string { return d.name }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// register adds f in name order; a name taken or invalid panics.
func (r *Registry) register(f family) {
	name := f.familyName()
	if !validName(name, true) {
		panic("prom: invalid metric name " + strconv.Quote(name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i, found := slices.BinarySearchFunc(r.families, name, func(f family, name string) int {
		return strings.Compare(f.familyName(), name)
	})
	if found {
		panic("prom: metric " + name + " registered twice")
	}
	r.families = slices.Insert(r.families, i, f)
}

// onScrape runs f at the start of each scrape, before any family is written: a collector
// reads there, once, the values that are cheaper read together.
func (r *Registry) onScrape(f func()) {
	r.scrapeMu.Lock()
	r.beforeScrape = append(r.beforeScrape, f)
	r.scrapeMu.Unlock()
}

// NewCounterFunc registers a counter whose value f returns at each scrape; f must be safe
// to call from any goroutine.
func (r *Registry) NewCounterFunc(o Opts, f func() float64) {
	r.register(&funcFamily{desc: desc{o.Name, o.Help, typeCounter}, value: f})
}

// NewGaugeFunc registers a gauge whose value f returns at each scrape; f must be safe to
// call from any goroutine.
func (r *Registry) NewGaugeFunc(o Opts, f func() float64) {
	r.register(&funcFamily{desc: desc{o.Name, o.Help, typeGauge}, value: f})
}

// funcFamily is a single series read by a function.
type funcFamily struct {
	desc
	value func() float64
}

func (f *funcFamily) write(w *textWriter) {
	w.header(&f.desc)
	w.sample(f.name, "", nil, nil, "", "", f.value())
}

// WriteText writes every family that has a series, sorted by name, its series sorted by
// their label values, in the text exposition format 0.0.4.
func (r *Registry) WriteText(out io.Writer) error {
	_, err := out.Write(r.text())
	return err
}

func (r *Registry) text() []byte {
	r.scrapeMu.Lock()
	defer r.scrapeMu.Unlock()
	for _, f := range r.beforeScrape {
		f()
	}
	r.mu.Lock()
	families := slices.Clone(r.families)
	r.mu.Unlock()
	// The last scrape's size: one allocation, usually.
	w := textWriter{b: make([]byte, 0, r.lastSize+r.lastSize/8)}
	for _, f := range families {
		f.write(&w)
	}
	r.lastSize = len(w.b)
	return w.b
}

// ServeHTTP answers a scrape. It does not compress: the exposition is a few KiB read over
// the pod's network every few seconds, and a gzip writer would keep more memory than that
// in every guard.
func (r *Registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	b := r.text()
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// validName says whether s is a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, without
// colons, a label name.
func validName(s string, colon bool) bool {
	for i, c := range []byte(s) {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || colon && c == ':' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return s != ""
}
