package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

const tracePolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words, namespace: team-t}
spec:
  builtin:
    keywords: [{category: secret-project, words: [wombatcanary]}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: input-block, namespace: team-t}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input, Output]
  threshold: 0.5
  action: Block
  reason: Not discussed here.
`

const (
	traceCanaryPrompt     = "TRACE-CANARY-PROMPT-2b7e"
	traceCanaryCompletion = "TRACE-CANARY-COMPLETION-8d1f"
	traceCanaryKey        = "sk-TRACE-CANARY-KEY-c4a9"
)

// The guard's tracing, set up from its OTEL_* variables as main does, exports a span per
// call and per evaluation to a real OTLP/gRPC receiver on loopback, with none of the
// request's text, and ends with the guard (stopTracing flushes).
func TestTracingFromTheEnvironment(t *testing.T) {
	col := otlptest.NewGRPC(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "1")
	t.Setenv("OTEL_SERVICE_NAME", "checkout-guard")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20collector-secret")
	var logBuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	o := options{pod: "checkout-5f", namespace: "team-t"}
	tr := startTracing(o, log)
	if tr == nil {
		t.Fatalf("tracing is off with an endpoint set; log: %s", logBuf.String())
	}

	provider := fakeprovider.New()
	t.Cleanup(provider.Close)
	up := httptest.NewServer(provider)
	t.Cleanup(up.Close)
	upURL, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	tel := telemetry.New(nil)
	px := proxy.New(proxy.Config{OpenAIUpstream: upURL, AnthropicUpstream: upURL, Pod: o.pod, Namespace: o.namespace,
		Telemetry: tel, Log: log, Tracer: tr})
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(tracePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := (&policysource.File{Path: path}).Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := px.Apply(snap); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(routes(px, mcpHandler(o, px, tel, tr, log)))
	t.Cleanup(srv.Close)

	provider.Enqueue(fakeprovider.Reply(traceCanaryCompletion))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"`+traceCanaryPrompt+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+traceCanaryKey)
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}

	// As main does: the server stops (waiting for its handlers, which end a call's spans
	// after its answer is flushed), then tracing.
	srv.Close()
	stopTracing(tr, log)
	spans := col.WaitSpans(3, 5*time.Second)
	if len(spans) != 3 {
		t.Fatalf("%d spans exported, want the call's and two evaluations'", len(spans))
	}
	for _, s := range spans {
		if got := otlptest.Str(s.Resource, "service.name"); got != "checkout-guard" {
			t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", got)
		}
		if got := otlptest.Str(s.Resource, "k8s.pod.name"); got != o.pod {
			t.Errorf("k8s.pod.name %q", got)
		}
	}
	raw := col.Raw()
	for _, canary := range []string{traceCanaryPrompt, traceCanaryCompletion, traceCanaryKey, "collector-secret"} {
		if bytes.Contains(raw, []byte(canary)) {
			t.Errorf("the exported spans contain %q", canary)
		}
		if strings.Contains(logBuf.String(), canary) {
			t.Errorf("the guard's log contains %q", canary)
		}
	}
	if hs := col.Headers(); len(hs) == 0 || len(hs[0]["authorization"]) != 1 || hs[0]["authorization"][0] != "Bearer collector-secret" {
		t.Errorf("the collector's header was not sent: %v", hs)
	}
}

// Off without an endpoint; off, with an error logged, on settings it cannot use.
func TestTracingIsOffUnlessConfigured(t *testing.T) {
	var logBuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if tr := startTracing(options{}, log); tr != nil {
		t.Error("tracing is on without an endpoint")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if tr := startTracing(options{}, log); tr != nil {
		t.Error("tracing is on with an unknown protocol")
	}
	if !strings.Contains(logBuf.String(), "Tracing is off") {
		t.Errorf("the invalid setting was not logged: %s", logBuf.String())
	}
}

// A collector that is down is logged once per interval, not once per batch.
func TestTracingExportErrorsAreThrottled(t *testing.T) {
	var logBuf bytes.Buffer
	onError := exportErrors(slog.New(slog.NewJSONHandler(&logBuf, nil)), time.Hour)
	for range 5 {
		onError(io.ErrUnexpectedEOF)
	}
	if n := strings.Count(logBuf.String(), "spans not exported"); n != 1 {
		t.Errorf("%d lines logged for 5 failures, want 1", n)
	}
}
