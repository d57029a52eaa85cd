package prom

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestConcurrentRecordingLosesNothing(t *testing.T) {
	r := NewRegistry()
	requests := r.NewCounterVec(Opts{Name: "requests_total", Help: "R."}, "family", "outcome")
	held := r.NewGauge(Opts{Name: "held_bytes", Help: "H."})
	latency := r.NewHistogramVec(HistogramOpts{Name: "latency_seconds", Help: "L.", Buckets: []float64{0.5, 1}}, "family")
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			// Each worker creates series others also create, while scrapes read them.
			for i := range each {
				requests.WithLabelValues("chat", strconv.Itoa(i%5)).Inc()
				requests.WithLabelValues("chat", "w"+strconv.Itoa(w)).Inc()
				held.Add(512)
				held.Add(-256)
				latency.WithLabelValues("chat").Observe(float64(i%3) / 2) // 0, 0.5, 1
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			_ = r.WriteText(io.Discard)
		}
	})
	wg.Wait()

	for i := range 5 {
		if v := requests.WithLabelValues("chat", strconv.Itoa(i)).Value(); v != workers*each/5 {
			t.Errorf("outcome %d: %d, want %d", i, v, workers*each/5)
		}
	}
	for w := range workers {
		if v := requests.WithLabelValues("chat", "w"+strconv.Itoa(w)).Value(); v != each {
			t.Errorf("worker %d: %d, want %d", w, v, each)
		}
	}
	if v := held.Value(); v != workers*each*256 {
		t.Errorf("gauge %v, want %d", v, workers*each*256)
	}
	var b strings.Builder
	_ = r.WriteText(&b)
	h := parse(t, b.String())["latency_seconds"].GetMetric()[0].GetHistogram()
	// i%3 over 2000 values: 667 zeros, 667 halves, 666 ones.
	if h.GetSampleCount() != workers*each || h.GetBucket()[0].GetCumulativeCount() != workers*1334 ||
		h.GetSampleSum() != workers*(667*0.5+666) {
		t.Errorf("histogram %v", h)
	}
}

func TestFindingAnExistingSeriesDoesNotAllocate(t *testing.T) {
	r := NewRegistry()
	decisions := r.NewCounterVec(Opts{Name: "decisions_total", Help: "D."}, "guardrail", "phase", "outcome")
	latency := r.NewHistogramVec(HistogramOpts{Name: "latency_seconds", Help: "L.", Buckets: []float64{1}}, "family")
	guardrail, phase := "team-a/pii", "Input"
	allocs := testing.AllocsPerRun(100, func() {
		decisions.WithLabelValues(guardrail, phase, "blocked").Inc()
		latency.WithLabelValues("chat").Observe(0.1)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per recording", allocs)
	}
}

func TestResetDropsEverySeries(t *testing.T) {
	r := NewRegistry()
	info := r.NewGaugeVec(Opts{Name: "policy_info", Help: "P."}, "version")
	info.WithLabelValues("v1").Set(1)
	info.Reset()
	info.WithLabelValues("v2").Set(1)
	var b strings.Builder
	_ = r.WriteText(&b)
	if strings.Contains(b.String(), "v1") || !strings.Contains(b.String(), `policy_info{version="v2"} 1`) {
		t.Errorf("after Reset:\n%s", b.String())
	}
}

func TestMistakesPanicWhenTheMetricIsCreated(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(r *Registry)
	}{
		{"a name registered twice", func(r *Registry) {
			r.NewCounter(Opts{Name: "x_total"})
			r.NewGaugeFunc(Opts{Name: "x_total"}, func() float64 { return 0 })
		}},
		{"an invalid metric name", func(r *Registry) { r.NewCounter(Opts{Name: "x-total"}) }},
		{"an invalid label name", func(r *Registry) { r.NewCounterVec(Opts{Name: "x_total"}, "a:b") }},
		{"a repeated label name", func(r *Registry) { r.NewCounterVec(Opts{Name: "x_total"}, "a", "a") }},
		{"a reserved label name", func(r *Registry) { r.NewCounterVec(Opts{Name: "x_total"}, "__name__") }},
		{"more than four labels", func(r *Registry) { r.NewCounterVec(Opts{Name: "x_total"}, "a", "b", "c", "d", "e") }},
		{"buckets that do not increase", func(r *Registry) {
			r.NewHistogramVec(HistogramOpts{Name: "x_seconds", Buckets: []float64{1, 1}})
		}},
		{"le as a histogram's label", func(r *Registry) { r.NewHistogramVec(HistogramOpts{Name: "x_seconds"}, "le") }},
		{"too few label values", func(r *Registry) { r.NewCounterVec(Opts{Name: "x_total"}, "a", "b").WithLabelValues("a") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.do(NewRegistry())
		})
	}
}

func BenchmarkCounterVecWithLabelValues(b *testing.B) {
	r := NewRegistry()
	decisions := r.NewCounterVec(Opts{Name: "decisions_total", Help: "D."}, "guardrail", "phase", "outcome")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			decisions.WithLabelValues("team-a/pii", "Input", "blocked").Inc()
		}
	})
}

func BenchmarkHistogramObserve(b *testing.B) {
	r := NewRegistry()
	h := r.NewHistogramVec(HistogramOpts{Name: "latency_seconds", Help: "L.",
		Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}, "family").WithLabelValues("chat")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Observe(0.0003)
		}
	})
}
