package prom

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom/promtest"
)

func TestTheExpositionIsWrittenAsPrometheusReadsIt(t *testing.T) {
	r := NewRegistry()
	// Registered out of name order, labels declared out of name order.
	things := r.NewCounterVec(Opts{Name: "b_total", Help: "Counts \"things\" \\ by\nkind."}, "kind", "az")
	things.WithLabelValues("x", "2").Add(3)
	things.WithLabelValues("quote \" back \\ nl\n", "1").Inc()
	things.WithLabelValues("a", "2").Inc()
	r.NewCounterVec(Opts{Name: "c_never_total", Help: "Never counted: not written."}, "kind")
	r.NewCounterFunc(Opts{Name: "a_func_total", Help: "Read at scrape."}, func() float64 { return 42 })
	g := r.NewGauge(Opts{Name: "d_gauge", Help: "Goes up and down."})
	g.Add(2.5)
	g.Add(-1)
	h := r.NewHistogramVec(HistogramOpts{Name: "e_seconds", Help: "Observed.",
		Buckets: []float64{0.00005, 0.5, 1, math.Inf(1)}}, "family")
	for _, v := range []float64{0, 0.5, 0.75, 3} {
		h.WithLabelValues("chat").Observe(v)
	}
	h.WithLabelValues("embeddings") // a series without observations has its buckets at 0

	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `# HELP a_func_total Read at scrape.
# TYPE a_func_total counter
a_func_total 42
# HELP b_total Counts "things" \\ by\nkind.
# TYPE b_total counter
b_total{az="1",kind="quote \" back \\ nl\n"} 1
b_total{az="2",kind="a"} 1
b_total{az="2",kind="x"} 3
# HELP d_gauge Goes up and down.
# TYPE d_gauge gauge
d_gauge 1.5
# HELP e_seconds Observed.
# TYPE e_seconds histogram
e_seconds_bucket{family="chat",le="5e-05"} 1
e_seconds_bucket{family="chat",le="0.5"} 2
e_seconds_bucket{family="chat",le="1"} 3
e_seconds_bucket{family="chat",le="+Inf"} 4
e_seconds_sum{family="chat"} 4.25
e_seconds_count{family="chat"} 4
e_seconds_bucket{family="embeddings",le="5e-05"} 0
e_seconds_bucket{family="embeddings",le="0.5"} 0
e_seconds_bucket{family="embeddings",le="1"} 0
e_seconds_bucket{family="embeddings",le="+Inf"} 0
e_seconds_sum{family="embeddings"} 0
e_seconds_count{family="embeddings"} 0
`
	if b.String() != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", b.String(), want)
	}

	// And Prometheus's own parser reads back what was counted.
	families := parse(t, b.String())
	if v := families["b_total"].GetMetric()[0].GetLabel()[1].GetValue(); v != "quote \" back \\ nl\n" {
		t.Errorf("the escaped label value reads back as %q", v)
	}
	hist := families["e_seconds"].GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != 4 || hist.GetSampleSum() != 4.25 || len(hist.GetBucket()) != 4 || hist.GetBucket()[2].GetCumulativeCount() != 3 {
		t.Errorf("the histogram reads back as %v", hist)
	}
}

func TestValuesAreFormattedAsPrometheusFormatsThem(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1, "-1"}, {404, "404"}, {999999, "999999"},
		{1e6, "1e+06"}, {16777216, "1.6777216e+07"}, {0.25, "0.25"}, {0.0001, "0.0001"}, {0.00005, "5e-05"},
		{math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}, {math.NaN(), "NaN"},
	} {
		if got := formatFloat(tc.v); got != tc.want {
			t.Errorf("%v is written %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestAScrapeIsServedAsTextFormat004(t *testing.T) {
	r := NewRegistry()
	r.NewCounter(Opts{Name: "x_total", Help: "X."}).Inc()
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if got := rec.Body.String(); got != "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n" {
		t.Errorf("body %q", got)
	}
}

func TestTheGoRuntimeAndProcessMetricsAreThoseOfClientGolang(t *testing.T) {
	r := NewRegistry()
	RegisterGo(r)
	RegisterProcess(r)
	runtime.GC()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	families := parse(t, b.String())
	want := map[string]dto.MetricType{
		"go_goroutines": dto.MetricType_GAUGE, "go_threads": dto.MetricType_GAUGE, "go_info": dto.MetricType_GAUGE,
		"go_gc_duration_seconds": dto.MetricType_SUMMARY, "go_gc_gogc_percent": dto.MetricType_GAUGE,
		"go_gc_gomemlimit_bytes": dto.MetricType_GAUGE, "go_sched_gomaxprocs_threads": dto.MetricType_GAUGE,
		"go_memstats_last_gc_time_seconds": dto.MetricType_GAUGE,
		"go_memstats_alloc_bytes":          dto.MetricType_GAUGE, "go_memstats_alloc_bytes_total": dto.MetricType_COUNTER,
		"go_memstats_buck_hash_sys_bytes": dto.MetricType_GAUGE, "go_memstats_frees_total": dto.MetricType_COUNTER,
		"go_memstats_gc_sys_bytes": dto.MetricType_GAUGE, "go_memstats_heap_alloc_bytes": dto.MetricType_GAUGE,
		"go_memstats_heap_idle_bytes": dto.MetricType_GAUGE, "go_memstats_heap_inuse_bytes": dto.MetricType_GAUGE,
		"go_memstats_heap_objects": dto.MetricType_GAUGE, "go_memstats_heap_released_bytes": dto.MetricType_GAUGE,
		"go_memstats_heap_sys_bytes": dto.MetricType_GAUGE, "go_memstats_mallocs_total": dto.MetricType_COUNTER,
		"go_memstats_mcache_inuse_bytes": dto.MetricType_GAUGE, "go_memstats_mcache_sys_bytes": dto.MetricType_GAUGE,
		"go_memstats_mspan_inuse_bytes": dto.MetricType_GAUGE, "go_memstats_mspan_sys_bytes": dto.MetricType_GAUGE,
		"go_memstats_next_gc_bytes": dto.MetricType_GAUGE, "go_memstats_other_sys_bytes": dto.MetricType_GAUGE,
		"go_memstats_stack_inuse_bytes": dto.MetricType_GAUGE, "go_memstats_stack_sys_bytes": dto.MetricType_GAUGE,
		"go_memstats_sys_bytes":     dto.MetricType_GAUGE,
		"process_cpu_seconds_total": dto.MetricType_COUNTER, "process_resident_memory_bytes": dto.MetricType_GAUGE,
		"process_virtual_memory_bytes": dto.MetricType_GAUGE, "process_virtual_memory_max_bytes": dto.MetricType_GAUGE,
		"process_open_fds": dto.MetricType_GAUGE, "process_max_fds": dto.MetricType_GAUGE,
		"process_start_time_seconds":          dto.MetricType_GAUGE,
		"process_network_receive_bytes_total": dto.MetricType_COUNTER, "process_network_transmit_bytes_total": dto.MetricType_COUNTER,
	}
	if runtime.GOOS != "linux" {
		for name := range want {
			if strings.HasPrefix(name, "process_") {
				delete(want, name)
			}
		}
	}
	for name, typ := range want {
		if f, ok := families[name]; !ok || f.GetType() != typ {
			t.Errorf("%s: %v, want a %v", name, f.GetType(), typ)
		}
	}
	if len(families) != len(want) {
		t.Errorf("%d families, want %d", len(families), len(want))
	}

	value := func(name string) float64 {
		m := families[name].GetMetric()[0]
		return m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if gc := families["go_gc_duration_seconds"].GetMetric()[0].GetSummary(); gc.GetSampleCount() == 0 || gc.GetSampleCount() > uint64(ms.NumGC) ||
		len(gc.GetQuantile()) != 5 {
		t.Errorf("go_gc_duration_seconds %v after a GC (NumGC now %d)", gc, ms.NumGC)
	}
	if v := value("go_goroutines"); v < 1 {
		t.Errorf("go_goroutines %v", v)
	}
	if v := value("go_memstats_heap_alloc_bytes"); v <= 0 || v > float64(ms.HeapSys) {
		t.Errorf("go_memstats_heap_alloc_bytes %v, heap_sys %d", v, ms.HeapSys)
	}
	if v := value("go_sched_gomaxprocs_threads"); v != float64(runtime.GOMAXPROCS(0)) {
		t.Errorf("go_sched_gomaxprocs_threads %v", v)
	}
	if runtime.GOOS != "linux" {
		return
	}
	if v := value("process_resident_memory_bytes"); v < 1<<20 {
		t.Errorf("process_resident_memory_bytes %v", v)
	}
	if v := value("process_open_fds"); v < 3 || v > value("process_max_fds") {
		t.Errorf("process_open_fds %v", v)
	}
	if v := time.Unix(int64(value("process_start_time_seconds")), 0); time.Since(v) < 0 || time.Since(v) > time.Hour {
		t.Errorf("process_start_time_seconds %v: not the start of this test", v)
	}
}

func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	return promtest.Parse(t, text)
}
