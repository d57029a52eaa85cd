package prom

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// RegisterGo registers the Go runtime's metrics under the names client_golang's Go
// collector gives them, so that dashboards and alerts written for it keep working:
//
//   - go_goroutines, go_threads, go_info{version};
//   - go_gc_duration_seconds, a summary of the garbage collector's stop-the-world pauses
//     (quantiles 0, 0.25, 0.5, 0.75, 1; its _count is the number of GC cycles, which
//     test/load reads);
//   - go_gc_gogc_percent, go_gc_gomemlimit_bytes, go_sched_gomaxprocs_threads;
//   - go_memstats_last_gc_time_seconds and the go_memstats_* of runtime.MemStats, read from
//     runtime/metrics (which does not stop the world): alloc_bytes, alloc_bytes_total,
//     buck_hash_sys_bytes, frees_total, gc_sys_bytes, heap_alloc_bytes, heap_idle_bytes,
//     heap_inuse_bytes, heap_objects, heap_released_bytes, heap_sys_bytes, mallocs_total,
//     mcache_inuse_bytes, mcache_sys_bytes, mspan_inuse_bytes, mspan_sys_bytes,
//     next_gc_bytes, other_sys_bytes, stack_inuse_bytes, stack_sys_bytes, sys_bytes.
//
// They are read once per scrape.
func RegisterGo(r *Registry) {
	c := &goCollector{index: map[string]int{}}
	for _, m := range fromRuntimeMetrics {
		for _, name := range m.sum {
			if _, ok := c.index[name]; !ok {
				c.index[name] = len(c.samples)
				c.samples = append(c.samples, metrics.Sample{Name: name})
			}
		}
	}
	c.gc.PauseQuantiles = make([]time.Duration, 5)
	c.read()
	for _, m := range fromRuntimeMetrics {
		if !c.supported(m.sum) {
			continue // a runtime/metrics name this Go no longer has: no series rather than 0
		}
		o := Opts{Name: m.name, Help: m.help}
		if m.counter {
			r.NewCounterFunc(o, func() float64 { return c.total(m.sum) })
		} else {
			r.NewGaugeFunc(o, func() float64 { return c.total(m.sum) })
		}
	}
	r.NewGaugeFunc(Opts{Name: "go_goroutines", Help: "Goroutines that currently exist."},
		func() float64 { return float64(runtime.NumGoroutine()) })
	r.NewGaugeFunc(Opts{Name: "go_threads", Help: "OS threads created."}, func() float64 {
		n, _ := runtime.ThreadCreateProfile(nil)
		return float64(n)
	})
	r.NewGaugeVec(Opts{Name: "go_info", Help: "The Go version the binary was built with (value 1)."}, "version").
		WithLabelValues(runtime.Version()).Set(1)
	r.NewGaugeFunc(Opts{Name: "go_memstats_last_gc_time_seconds", Help: "Unix time of the last garbage collection (0: none yet)."},
		func() float64 { return float64(c.gc.LastGC.UnixNano()) / 1e9 })
	r.register(&gcPauses{desc: desc{"go_gc_duration_seconds",
		"Stop-the-world pauses of the garbage collector, in seconds; _count is the number of GC cycles.", typeSummary}, c: c})
	r.onScrape(c.read)
}

// goCollector holds one scrape's reading of the runtime.
type goCollector struct {
	samples []metrics.Sample
	index   map[string]int // of samples, by runtime/metrics name
	gc      debug.GCStats
}

func (c *goCollector) read() {
	metrics.Read(c.samples)
	debug.ReadGCStats(&c.gc)
}

func (c *goCollector) supported(names []string) bool {
	for _, n := range names {
		if c.samples[c.index[n]].Value.Kind() == metrics.KindBad {
			return false
		}
	}
	return true
}

// total sums the runtime/metrics values named.
func (c *goCollector) total(names []string) float64 {
	t := 0.0
	for _, n := range names {
		switch v := c.samples[c.index[n]].Value; v.Kind() {
		case metrics.KindUint64:
			t += float64(v.Uint64())
		case metrics.KindFloat64:
			t += v.Float64()
		}
	}
	return t
}

// gcPauses is go_gc_duration_seconds.
type gcPauses struct {
	desc
	c *goCollector
}

var pauseQuantiles = [...]string{"0", "0.25", "0.5", "0.75", "1"}

func (g *gcPauses) write(w *textWriter) {
	w.header(&g.desc)
	for i, q := range g.c.gc.PauseQuantiles {
		w.sample(g.name, "", nil, nil, "quantile", pauseQuantiles[i], q.Seconds())
	}
	w.sample(g.name, "_sum", nil, nil, "", "", g.c.gc.PauseTotal.Seconds())
	w.sample(g.name, "_count", nil, nil, "", "", float64(g.c.gc.NumGC))
}

// The runtime/metrics that runtime.MemStats's fields are sums of (see the runtime/metrics
// documentation), under client_golang's names.
const (
	heapObjects  = "/memory/classes/heap/objects:bytes"
	heapUnused   = "/memory/classes/heap/unused:bytes"
	heapFree     = "/memory/classes/heap/free:bytes"
	heapReleased = "/memory/classes/heap/released:bytes"
	heapStacks   = "/memory/classes/heap/stacks:bytes"
	tinyAllocs   = "/gc/heap/tiny/allocs:objects"
	mcacheInuse  = "/memory/classes/metadata/mcache/inuse:bytes"
	mspanInuse   = "/memory/classes/metadata/mspan/inuse:bytes"
)

var fromRuntimeMetrics = []struct {
	name, help string
	counter    bool
	sum        []string
}{
	{"go_gc_gogc_percent", "The GOGC percentage in force (GOGC, debug.SetGCPercent).", false, []string{"/gc/gogc:percent"}},
	{"go_gc_gomemlimit_bytes", "The Go memory limit in force (GOMEMLIMIT, debug.SetMemoryLimit).", false, []string{"/gc/gomemlimit:bytes"}},
	{"go_memstats_alloc_bytes", "Bytes of heap objects allocated and in use.", false, []string{heapObjects}},
	{"go_memstats_alloc_bytes_total", "Bytes of heap objects allocated, freed or not.", true, []string{"/gc/heap/allocs:bytes"}},
	{"go_memstats_buck_hash_sys_bytes", "Bytes of the profiling bucket hash table.", false, []string{"/memory/classes/profiling/buckets:bytes"}},
	{"go_memstats_frees_total", "Heap objects freed.", true, []string{"/gc/heap/frees:objects", tinyAllocs}},
	{"go_memstats_gc_sys_bytes", "Bytes of garbage collection metadata.", false, []string{"/memory/classes/metadata/other:bytes"}},
	{"go_memstats_heap_alloc_bytes", "Bytes of heap objects allocated and in use (as go_memstats_alloc_bytes).", false, []string{heapObjects}},
	{"go_memstats_heap_idle_bytes", "Bytes of heap spans without objects, released to the OS or not.", false, []string{heapReleased, heapFree}},
	{"go_memstats_heap_inuse_bytes", "Bytes of heap spans with at least one object.", false, []string{heapObjects, heapUnused}},
	{"go_memstats_heap_objects", "Heap objects allocated and in use.", false, []string{"/gc/heap/objects:objects"}},
	{"go_memstats_heap_released_bytes", "Bytes of heap returned to the OS.", false, []string{heapReleased}},
	{"go_memstats_heap_sys_bytes", "Bytes of heap obtained from the OS.", false, []string{heapObjects, heapUnused, heapReleased, heapFree}},
	{"go_memstats_mallocs_total", "Heap objects allocated.", true, []string{"/gc/heap/allocs:objects", tinyAllocs}},
	{"go_memstats_mcache_inuse_bytes", "Bytes of mcache structures in use.", false, []string{mcacheInuse}},
	{"go_memstats_mcache_sys_bytes", "Bytes of mcache structures obtained from the OS.", false, []string{mcacheInuse, "/memory/classes/metadata/mcache/free:bytes"}},
	{"go_memstats_mspan_inuse_bytes", "Bytes of mspan structures in use.", false, []string{mspanInuse}},
	{"go_memstats_mspan_sys_bytes", "Bytes of mspan structures obtained from the OS.", false, []string{mspanInuse, "/memory/classes/metadata/mspan/free:bytes"}},
	{"go_memstats_next_gc_bytes", "Heap size the next garbage collection aims at.", false, []string{"/gc/heap/goal:bytes"}},
	{"go_memstats_other_sys_bytes", "Bytes of other runtime allocations.", false, []string{"/memory/classes/other:bytes"}},
	{"go_memstats_stack_inuse_bytes", "Bytes of goroutine stacks allocated from the heap.", false, []string{heapStacks}},
	{"go_memstats_stack_sys_bytes", "Bytes of stack memory obtained from the OS.", false, []string{heapStacks, "/memory/classes/os-stacks:bytes"}},
	{"go_memstats_sys_bytes", "Bytes obtained from the OS.", false, []string{"/memory/classes/total:bytes"}},
	{"go_sched_gomaxprocs_threads", "GOMAXPROCS: threads that may run Go code at once.", false, []string{"/sched/gomaxprocs:threads"}},
}
