package prom

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// maxLabels bounds the label names of a metric, so that label values fit in a fixed array
// that is a map key without allocating. A sidecar's metric with more labels than this would
// have more series than it should anyway.
const maxLabels = 4

// labelValues are a series' label values, in the order the labels were declared.
type labelValues [maxLabels]string

// vec is a family of series of one kind (M: Counter, Gauge, Histogram) told apart by their
// label values. Finding a series is a map read without a lock: the map is replaced, never
// changed, when a series is added (rare: label values are bounded) or all are dropped.
type vec[M any] struct {
	desc
	labels []string
	// emitNames are the label names as written: sorted, as Prometheus's clients write them;
	// emitIndex[i] is the declared index of emitNames[i].
	emitNames []string
	emitIndex []int
	newSeries func() *M
	// writeSeries writes one series' samples with its labels.
	writeSeries func(w *textWriter, name string, names, values []string, m *M)

	mu     sync.Mutex // serializes replacing series
	series atomic.Pointer[map[labelValues]*M]
}

func newVec[M any](d desc, labels []string, newSeries func() *M,
	writeSeries func(w *textWriter, name string, names, values []string, m *M)) *vec[M] {
	if len(labels) > maxLabels {
		panic("prom: " + d.name + " has more than " + strconv.Itoa(maxLabels) + " labels")
	}
	v := &vec[M]{desc: d, labels: slices.Clone(labels), newSeries: newSeries, writeSeries: writeSeries}
	v.emitNames = slices.Clone(labels)
	slices.Sort(v.emitNames)
	for i, n := range v.emitNames {
		if !validName(n, false) || strings.HasPrefix(n, "__") || (i > 0 && n == v.emitNames[i-1]) {
			panic("prom: " + d.name + ": invalid or repeated label name " + strconv.Quote(n))
		}
		v.emitIndex = append(v.emitIndex, slices.Index(labels, n))
	}
	v.series.Store(&map[labelValues]*M{})
	return v
}

// with returns the series of these label values (in declared order), creating it.
func (v *vec[M]) with(values []string) *M {
	if len(values) != len(v.labels) {
		panic("prom: " + v.name + " takes " + strconv.Itoa(len(v.labels)) + " label values, got " + strconv.Itoa(len(values)))
	}
	var k labelValues
	copy(k[:], values)
	if m, ok := (*v.series.Load())[k]; ok {
		return m
	}
	return v.add(k)
}

func (v *vec[M]) add(k labelValues) *M {
	v.mu.Lock()
	defer v.mu.Unlock()
	old := *v.series.Load()
	if m, ok := old[k]; ok {
		return m // added meanwhile
	}
	// The series keeps its own copies: a caller's value may be a slice of a larger buffer.
	for i := range k {
		k[i] = strings.Clone(k[i])
	}
	next := make(map[labelValues]*M, len(old)+1)
	for ok, om := range old {
		next[ok] = om
	}
	m := v.newSeries()
	next[k] = m
	v.series.Store(&next)
	return m
}

// reset drops every series.
func (v *vec[M]) reset() {
	v.mu.Lock()
	v.series.Store(&map[labelValues]*M{})
	v.mu.Unlock()
}

// write writes the family, its series sorted by their label values as written.
func (v *vec[M]) write(w *textWriter) {
	m := *v.series.Load()
	if len(m) == 0 {
		return
	}
	type entry struct {
		values labelValues // in emit order
		m      *M
	}
	entries := make([]entry, 0, len(m))
	for k, s := range m {
		e := entry{m: s}
		for i, j := range v.emitIndex {
			e.values[i] = k[j]
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b entry) int {
		for i := range a.values {
			if c := strings.Compare(a.values[i], b.values[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	w.header(&v.desc)
	n := len(v.labels)
	for i := range entries {
		v.writeSeries(w, v.name, v.emitNames, entries[i].values[:n], entries[i].m)
	}
}
