package tracing_test

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name      string
		vars      map[string]string
		endpoint  string
		protocol  string
		sampler   string
		ratio     float64
		warnings  int
		wantError bool
	}{
		{name: "off without an endpoint", vars: map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}},
		{name: "off when disabled", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "off with exporter none", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "http by default, /v1/traces added", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			endpoint: "http://c:4318/v1/traces", protocol: "http/protobuf", sampler: "parentbased_traceidratio", ratio: 1},
		{name: "base path kept", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c/otlp/"},
			endpoint: "https://c/otlp/v1/traces", protocol: "http/protobuf", sampler: "parentbased_traceidratio", ratio: 1},
		{name: "traces endpoint as it is", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom"},
			endpoint: "http://c:4318/custom", protocol: "http/protobuf", sampler: "parentbased_traceidratio", ratio: 1},
		{name: "grpc host:port is TLS", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			endpoint: "https://c:4317", protocol: "grpc", sampler: "parentbased_traceidratio", ratio: 1},
		{name: "grpc insecure", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_INSECURE": "true"},
			endpoint: "http://c:4317", protocol: "grpc", sampler: "parentbased_traceidratio", ratio: 1},
		{name: "sampler and ratio", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
			endpoint: "http://c:4318/v1/traces", protocol: "http/protobuf", sampler: "traceidratio", ratio: 0.25},
		{name: "unknown sampler and bad ratio warn", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_TRACES_SAMPLER": "jaeger_remote", "OTEL_TRACES_SAMPLER_ARG": "2", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon",
			"OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
			endpoint: "http://c:4318/v1/traces", protocol: "http/protobuf", sampler: "parentbased_traceidratio", ratio: 1, warnings: 4},
		{name: "bad protocol", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantError: true},
		{name: "bad endpoint", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://user:secret@c"}, wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tracing.FromEnv(env(tc.vars))
			if (err != nil) != tc.wantError {
				t.Fatalf("error %v, want error %v", err, tc.wantError)
			}
			if err != nil {
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("the error quotes the endpoint: %v", err)
				}
				return
			}
			if c.Enabled() != (tc.endpoint != "") || c.Endpoint != tc.endpoint || c.Protocol != tc.protocol ||
				c.Sampler != tc.sampler || c.SamplerArg != tc.ratio || len(c.Warnings) != tc.warnings {
				t.Errorf("got %+v", c)
			}
		})
	}
}

// A nil tracer and a nil call do nothing.
func TestOffIsNil(t *testing.T) {
	tr, err := tracing.Setup(t.Context(), tracing.Config{}, tracing.Options{})
	if err != nil || tr != nil {
		t.Fatalf("Setup of the zero config = %v, %v", tr, err)
	}
	c := tr.StartCall(t.Context(), http.Header{}, tracing.CallInfo{Operation: "chat"})
	if c != nil {
		t.Fatal("a nil tracer started a call")
	}
	c.Usage(1, 2)
	c.ResponseModel("m")
	c.Evaluation(engine.Record{}, time.Now())
	c.End("allowed")
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}

const (
	traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentID = "00f067aa0ba902b7"
)

func record(outcome guardv1.Outcome, findings ...engine.Finding) engine.Record {
	return engine.Record{Guardrail: "team-a/pii", Classifier: "builtin-pii", Phase: policy.PhaseInput,
		Where: engine.Location{Message: 1, Part: 0}, Outcome: outcome, Mode: policy.ModeEnforce,
		Findings: findings, Duration: 3 * time.Millisecond}
}

// The spans reach a real OTLP receiver, over both protocols: the call's span a child of the
// incoming traceparent, an evaluation's span a child of the call's, with their attributes.
func TestExportToCollector(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		gzip     bool
		start    func(testing.TB) *otlptest.Collector
	}{
		{"grpc", false, otlptest.NewGRPC},
		{"grpc", true, otlptest.NewGRPC},
		{"http/protobuf", false, otlptest.NewHTTP},
		{"http/protobuf", true, otlptest.NewHTTP},
	} {
		name := tc.protocol
		if tc.gzip {
			name += "+gzip"
		}
		t.Run(name, func(t *testing.T) {
			col := tc.start(t)
			vars := map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL": tc.protocol,
				"OTEL_EXPORTER_OTLP_HEADERS":  "x-collector-token=tok%20en",
			}
			if tc.gzip {
				vars["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
			}
			cfg, err := tracing.FromEnv(env(vars))
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("OTEL_SERVICE_NAME", "")
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
			tr, err := tracing.Setup(t.Context(), cfg, tracing.Options{Pod: "app-1", Namespace: "team-a"})
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			h.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
			call := tr.StartCall(context.Background(), h, tracing.CallInfo{Operation: "chat", Provider: "openai",
				Model: "gpt-4o-mini", Server: "api.openai.com", Port: 443})
			if call == nil {
				t.Fatal("a sampled call was not traced")
			}
			start := time.Now()
			call.Evaluation(record(guardv1.OutcomeBlocked,
				engine.Finding{Kind: engine.FindingCategory, Name: "email", Score: 0.9, Threshold: 0.5},
				engine.Finding{Kind: engine.FindingCategory, Name: "phone", Score: 0.7, Threshold: 0.5},
				engine.Finding{Kind: engine.FindingRule, Name: "no-secrets"}), start)
			failed := record(guardv1.OutcomeFailed)
			failed.Guardrail, failed.Code = "/cluster-wide", classify.CodeTimeout
			call.Evaluation(failed, time.Time{})
			call.Usage(12, 34)
			call.ResponseModel("gpt-4o-mini-2024-07-18")
			call.End("blocked")
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			spans := col.WaitSpans(3, 5*time.Second)
			if len(spans) != 3 {
				t.Fatalf("the collector received %d spans, want 3", len(spans))
			}
			byName := map[string]otlptest.Span{}
			for _, s := range spans {
				byName[s.GetName()] = s
			}
			callSpan, ok := byName["chat gpt-4o-mini"]
			if !ok {
				t.Fatalf("no call span among %v", byName)
			}
			if got := hex.EncodeToString(callSpan.GetTraceId()); got != traceID {
				t.Errorf("call trace id %s, want the incoming %s", got, traceID)
			}
			if got := hex.EncodeToString(callSpan.GetParentSpanId()); got != parentID {
				t.Errorf("call parent %s, want the incoming span %s", got, parentID)
			}
			if callSpan.GetKind().String() != "SPAN_KIND_CLIENT" {
				t.Errorf("call kind %s", callSpan.GetKind())
			}
			for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
				"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
				"server.address": "api.openai.com", "guardrail.request.outcome": "blocked"} {
				if got := otlptest.Str(callSpan.GetAttributes(), k); got != want {
					t.Errorf("call %s = %q, want %q", k, got, want)
				}
			}
			if in, out := otlptest.Attr(callSpan.GetAttributes(), "gen_ai.usage.input_tokens").GetIntValue(),
				otlptest.Attr(callSpan.GetAttributes(), "gen_ai.usage.output_tokens").GetIntValue(); in != 12 || out != 34 {
				t.Errorf("usage %d/%d, want 12/34", in, out)
			}
			for k, want := range map[string]string{"service.name": tracing.DefaultServiceName, "k8s.pod.name": "app-1",
				"k8s.namespace.name": "team-a", "deployment.environment.name": "test"} {
				if got := otlptest.Str(callSpan.Resource, k); got != want {
					t.Errorf("resource %s = %q, want %q", k, got, want)
				}
			}

			ev := byName["guardrail team-a/pii"]
			if ev.Span == nil {
				t.Fatalf("no evaluation span among %v", byName)
			}
			if string(ev.GetParentSpanId()) != string(callSpan.GetSpanId()) || string(ev.GetTraceId()) != string(callSpan.GetTraceId()) {
				t.Error("the evaluation span is not the call span's child")
			}
			for k, want := range map[string]string{"guardrail.name": "pii", "guardrail.namespace": "team-a",
				"guardrail.classifier": "builtin-pii", "guardrail.phase": "Input", "guardrail.outcome": "blocked",
				"guardrail.mode": "Enforce", "guardrail.location": "message[1].part[0]"} {
				if got := otlptest.Str(ev.GetAttributes(), k); got != want {
					t.Errorf("evaluation %s = %q, want %q", k, got, want)
				}
			}
			cats := otlptest.Attr(ev.GetAttributes(), "guardrail.category").GetArrayValue().GetValues()
			if len(cats) != 2 || cats[0].GetStringValue() != "email" || cats[1].GetStringValue() != "phone" {
				t.Errorf("guardrail.category = %v", cats)
			}
			if s := otlptest.Attr(ev.GetAttributes(), "guardrail.score").GetDoubleValue(); s != 0.9 {
				t.Errorf("guardrail.score = %v, want the highest, 0.9", s)
			}
			if d := time.Duration(ev.GetEndTimeUnixNano() - ev.GetStartTimeUnixNano()); d != 3*time.Millisecond {
				t.Errorf("evaluation span lasted %v, want the record's 3ms", d)
			}
			if got := ev.GetStartTimeUnixNano(); got != uint64(start.UnixNano()) { //nolint:gosec // a time after 1970
				t.Errorf("evaluation span starts at %d, want %d", got, start.UnixNano())
			}
			fail := byName["guardrail /cluster-wide"]
			if fail.Span == nil || fail.GetStatus().GetCode().String() != "STATUS_CODE_ERROR" ||
				otlptest.Str(fail.GetAttributes(), "guardrail.namespace") != "" ||
				otlptest.Str(fail.GetAttributes(), "guardrail.code") != string(classify.CodeTimeout) {
				t.Errorf("the failed evaluation's span: %v", fail.Span)
			}
			var token bool
			for _, h := range col.Headers() {
				token = token || (len(h["x-collector-token"]) == 1 && h["x-collector-token"][0] == "tok en")
				if len(h["X-Collector-Token"]) == 1 && h["X-Collector-Token"][0] == "tok en" {
					token = true
				}
			}
			if !token {
				t.Errorf("OTEL_EXPORTER_OTLP_HEADERS were not sent: %v", col.Headers())
			}
		})
	}
}

// gRPC over TLS: HTTP/2 negotiated by ALPN, the collector's certificate checked against
// OTEL_EXPORTER_OTLP_CERTIFICATE; without it the export fails (the system's roots).
func TestExportOverGRPCWithTLS(t *testing.T) {
	col, ca := otlptest.NewGRPCTLS(t)
	for _, trusted := range []bool{true, false} {
		vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
		if trusted {
			vars["OTEL_EXPORTER_OTLP_CERTIFICATE"] = ca
		}
		cfg, err := tracing.FromEnv(env(vars))
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 10)
		tr, err := tracing.Setup(t.Context(), cfg, tracing.Options{OnError: func(err error) {
			select {
			case errs <- err:
			default:
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		tr.StartCall(t.Context(), http.Header{}, tracing.CallInfo{Operation: "chat", Model: "tls"}).End("allowed")
		_ = tr.Shutdown(t.Context())
		if trusted {
			if n := len(col.WaitSpans(1, 5*time.Second)); n != 1 {
				t.Fatalf("%d spans over TLS, want 1", n)
			}
			continue
		}
		select {
		case err := <-errs:
			if !strings.Contains(err.Error(), "certificate") {
				t.Errorf("an untrusted collector: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("an export to an untrusted collector did not fail")
		}
	}
}

// Sampling follows OTEL_TRACES_SAMPLER: a call whose incoming trace is not sampled is not
// traced under the parent-based default; always_off traces nothing.
func TestSampling(t *testing.T) {
	col := otlptest.NewHTTP(t)
	for _, tc := range []struct {
		sampler string
		flags   string
		traced  bool
	}{
		{"", "01", true},
		{"", "00", false},
		{"", "", true}, // no traceparent: ratio 1.0
		{"always_off", "01", false},
		{"always_on", "00", true},
		{"traceidratio", "01", false}, // ratio 0 below, the parent ignored
	} {
		vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint, "OTEL_TRACES_SAMPLER": tc.sampler}
		if tc.sampler == "traceidratio" {
			vars["OTEL_TRACES_SAMPLER_ARG"] = "0"
		}
		cfg, err := tracing.FromEnv(env(vars))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := tracing.Setup(t.Context(), cfg, tracing.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		if tc.flags != "" {
			h.Set("Traceparent", "00-"+traceID+"-"+parentID+"-"+tc.flags)
		}
		call := tr.StartCall(t.Context(), h, tracing.CallInfo{Operation: "chat"})
		if (call != nil) != tc.traced {
			t.Errorf("sampler %q flags %q: traced %v, want %v", tc.sampler, tc.flags, call != nil, tc.traced)
		}
		call.End("allowed")
		_ = tr.Shutdown(t.Context())
	}
}

// A collector that answers with an error is reported, not fatal.
func TestExportErrors(t *testing.T) {
	srv := otlptest.NewHTTP(t)
	cfg, err := tracing.FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.Endpoint + "/wrong"}))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 10)
	tr, err := tracing.Setup(t.Context(), cfg, tracing.Options{OnError: func(err error) {
		select {
		case errs <- err:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	tr.StartCall(t.Context(), http.Header{}, tracing.CallInfo{Operation: "chat"}).End("allowed")
	_ = tr.Shutdown(t.Context())
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "HTTP 400") || strings.Contains(err.Error(), srv.Endpoint) {
			t.Errorf("the export error is %q, want the collector's HTTP 400 without the endpoint", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the export error was not reported")
	}
}

// Headers delivered by the control plane (SetHeaders) reach the collector with every
// export, over both protocols, beside those of OTEL_EXPORTER_OTLP_HEADERS and over them; a
// new set replaces the old (a rotation), headers for another endpoint are not sent, and
// empty ones remove them.
func TestDeliveredHeaders(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		start    func(testing.TB) *otlptest.Collector
	}{
		{"grpc", otlptest.NewGRPC},
		{"http/protobuf", otlptest.NewHTTP},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			col := tc.start(t)
			cfg, err := tracing.FromEnv(env(map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL": tc.protocol,
				"OTEL_EXPORTER_OTLP_HEADERS":  "x-from-env=env,authorization=from-env",
				"OTEL_TRACES_SAMPLER":         "always_on",
			}))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ConfiguredEndpoint != col.Endpoint {
				t.Fatalf("ConfiguredEndpoint %q, want %q", cfg.ConfiguredEndpoint, col.Endpoint)
			}
			tr, err := tracing.Setup(t.Context(), cfg, tracing.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tr.Shutdown(t.Context()) }()
			// export sends one span and returns the headers of the export that carried it.
			export := func(model string) map[string][]string {
				t.Helper()
				before := len(col.Headers())
				tr.StartCall(t.Context(), http.Header{}, tracing.CallInfo{Operation: "chat", Model: model}).End("allowed")
				if err := tr.ForceFlush(t.Context()); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(5 * time.Second)
				for len(col.Headers()) == before && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				hs := col.Headers()
				if len(hs) == before {
					t.Fatalf("no export of %s", model)
				}
				return lower(hs[len(hs)-1])
			}
			expect := func(h map[string][]string, name, want string) {
				t.Helper()
				got := ""
				if v := h[name]; len(v) > 0 {
					got = strings.Join(v, "|")
				}
				if got != want {
					t.Errorf("header %s = %q, want %q", name, got, want)
				}
			}

			h := export("before")
			expect(h, "authorization", "from-env")
			expect(h, "x-from-env", "env")

			if err := tr.SetHeaders(col.Endpoint, map[string]string{"Authorization": "Bearer first", "X-Tenant-Id": "guards"}); err != nil {
				t.Fatal(err)
			}
			h = export("first")
			expect(h, "authorization", "Bearer first")
			expect(h, "x-tenant-id", "guards")
			expect(h, "x-from-env", "env")

			// A rotation replaces the set: a header no longer delivered is no longer sent.
			if err := tr.SetHeaders(col.Endpoint, map[string]string{"Authorization": "Bearer second"}); err != nil {
				t.Fatal(err)
			}
			h = export("second")
			expect(h, "authorization", "Bearer second")
			expect(h, "x-tenant-id", "")

			// Headers for another collector are not sent, and remove those delivered before.
			if err := tr.SetHeaders("http://elsewhere:4318", map[string]string{"Authorization": "Bearer other"}); !errors.Is(err, tracing.ErrOtherEndpoint) {
				t.Errorf("SetHeaders for another endpoint: %v, want ErrOtherEndpoint", err)
			}
			h = export("other")
			expect(h, "authorization", "from-env")

			// Malformed ones are refused without quoting them.
			err = tr.SetHeaders(col.Endpoint, map[string]string{"Authorization": "Bearer evil\r\nX-Injected: 1"})
			if err == nil || strings.Contains(err.Error(), "evil") {
				t.Errorf("SetHeaders of a value with CRLF: %v", err)
			}
			if err := tr.SetHeaders(col.Endpoint, map[string]string{"Connection": "close"}); err == nil {
				t.Error("SetHeaders took a hop-by-hop header")
			}

			if err := tr.SetHeaders(col.Endpoint, map[string]string{"Authorization": "Bearer third"}); err != nil {
				t.Fatal(err)
			}
			expect(export("third"), "authorization", "Bearer third")
			if err := tr.SetHeaders(col.Endpoint, nil); err != nil {
				t.Fatal(err)
			}
			expect(export("removed"), "authorization", "from-env")
		})
	}
}

// A tracer that is off takes no headers.
func TestSetHeadersWhenOff(t *testing.T) {
	var tr *tracing.Tracer
	if err := tr.SetHeaders("http://c:4318", map[string]string{"Authorization": "x"}); !errors.Is(err, tracing.ErrNoExporter) {
		t.Errorf("SetHeaders on a nil tracer: %v", err)
	}
}

func lower(h map[string][]string) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[strings.ToLower(k)] = append(out[strings.ToLower(k)], v...)
	}
	return out
}
