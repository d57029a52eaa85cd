package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	dto "github.com/prometheus/client_model/go"

	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/guardproc"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom/promtest"
)

// TestMetricsArePrometheusTextWithEveryGuardMetric: what the admin listener's /metrics
// serves is read by Prometheus's own parser, and it has every metric the guard exported
// when it used client_golang, with the same type and labels.
func TestMetricsArePrometheusTextWithEveryGuardMetric(t *testing.T) {
	tel := telemetry.New(nil)
	guardproc.RegisterReporterMetrics(tel.Registry, controlplane.NewAggregator(), &controlplane.Reporter{})
	guardproc.RegisterAdminMetrics(tel.Registry, new(atomic.Int64))
	// One of each recording, with a rule name that needs escaping.
	r := engine.Record{Guardrail: "team-a/pii", Phase: policy.PhaseInput, Outcome: guardv1.OutcomeBlocked,
		Classifier: "team-a/builtin", Duration: time.Millisecond,
		Findings: []engine.Finding{{Kind: engine.FindingRule, Name: `no "quotes" \ here`}}}
	tel.Record(r)
	tel.Request("chat", "blocked")
	tel.Added("chat", 200*time.Microsecond)
	tel.HeldBack(10)
	tel.Aborted("client_gone")
	tel.Policy("181ebee012d33a85")
	tel.PolicyError()
	tel.ProviderRequest("openai-prod")
	tel.ProviderTokens("openai-prod", 0, 7) // one series: output only

	srv := httptest.NewServer(guardproc.AdminMux(proxy.New(proxy.Config{Telemetry: tel}), tel))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	families := promtest.Parse(t, string(body))

	guard := []struct {
		name   string
		typ    dto.MetricType
		labels []string // sorted, as written
	}{
		{"guard_requests_total", dto.MetricType_COUNTER, []string{"family", "outcome"}},
		{"guard_decisions_total", dto.MetricType_COUNTER, []string{"guardrail", "outcome", "phase"}},
		{"guard_findings_total", dto.MetricType_COUNTER, []string{"category", "guardrail"}},
		{"guard_classifier_duration_seconds", dto.MetricType_HISTOGRAM, []string{"classifier"}},
		{"guard_added_latency_seconds", dto.MetricType_HISTOGRAM, []string{"family"}},
		{"guard_held_back_bytes", dto.MetricType_GAUGE, nil},
		{"guard_streams_aborted_total", dto.MetricType_COUNTER, []string{"reason"}},
		{"guard_policy_info", dto.MetricType_GAUGE, []string{"version"}},
		{"guard_policy_errors_total", dto.MetricType_COUNTER, nil},
		{"guard_decisions_merged_total", dto.MetricType_COUNTER, nil},
		{"guard_decision_batches_failed_total", dto.MetricType_COUNTER, nil},
		{"guard_admin_connections_refused_total", dto.MetricType_COUNTER, nil},
		{"guard_provider_requests_total", dto.MetricType_COUNTER, []string{"provider"}},
		{"guard_provider_tokens_total", dto.MetricType_COUNTER, []string{"direction", "provider"}},
	}
	for _, want := range guard {
		f, ok := families[want.name]
		if !ok {
			t.Errorf("%s is missing", want.name)
			continue
		}
		if f.GetType() != want.typ || len(f.GetMetric()) != 1 {
			t.Errorf("%s: a %v of %d series, want a %v of 1", want.name, f.GetType(), len(f.GetMetric()), want.typ)
			continue
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		if strings.Join(labels, ",") != strings.Join(want.labels, ",") {
			t.Errorf("%s has labels %v, want %v", want.name, labels, want.labels)
		}
	}
	if v := families["guard_findings_total"].GetMetric()[0].GetLabel()[0].GetValue(); v != `no "quotes" \ here` {
		t.Errorf("the rule name reads back as %q", v)
	}
	if h := families["guard_added_latency_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleCount() != 1 || len(h.GetBucket()) != 15 {
		t.Errorf("guard_added_latency_seconds %v: want 1 observation in 14 buckets and +Inf", h)
	}

	// The Go runtime's and the process's: test/load reads go_gc_duration_seconds_count.
	others := []string{"go_gc_duration_seconds", "go_goroutines", "go_memstats_heap_alloc_bytes"}
	if runtime.GOOS == "linux" {
		others = append(others, "process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds",
			"process_start_time_seconds")
	}
	for _, name := range others {
		if _, ok := families[name]; !ok {
			t.Errorf("%s is missing", name)
		}
	}
}
