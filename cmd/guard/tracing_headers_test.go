package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
)

const headerCanary = "otlp-header-canary-31f7"

// The collector's headers delivered by the control plane, as the guard runs it (the
// subscription's client handing them to tracingHeaders), go with the guard's exports; they
// are in neither the guard's log nor its persisted snapshot. Over gRPC and HTTP.
func TestTracingHeadersFromTheControlPlane(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		start    func(testing.TB) *otlptest.Collector
	}{
		{"grpc", otlptest.NewGRPC},
		{"http/protobuf", otlptest.NewHTTP},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			col := tc.start(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
			t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
			var logBuf syncBuffer
			log := slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			tr := startTracing(options{pod: "p", namespace: "team-t"}, log)
			if tr == nil {
				t.Fatalf("tracing is off; log: %s", logBuf.String())
			}

			snap, err := json.Marshal(controlplane.Snapshot{Version: "v1", Namespace: "team-t",
				Classifiers: []policy.ClassifierObject{}, Guardrails: []policy.GuardrailObject{},
				Tracing: &controlplane.Tracing{Endpoint: col.Endpoint, Headers: map[string]string{
					"Authorization": "Bearer " + headerCanary, "X-Scope-Orgid": "guards"}}})
			if err != nil {
				t.Fatal(err)
			}
			var applied atomic.Int32
			op := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req controlplane.SubscribeRequest
				_ = json.NewDecoder(r.Body).Decode(&req)
				if req.Running == "v1" {
					time.Sleep(20 * time.Millisecond)
					w.WriteHeader(http.StatusNoContent)
					return
				}
				_, _ = w.Write(snap)
			}))
			t.Cleanup(op.Close)
			dir := t.TempDir()
			tok := filepath.Join(dir, "token")
			if err := os.WriteFile(tok, []byte("t"), 0o600); err != nil {
				t.Fatal(err)
			}
			c := &controlplane.Client{URL: op.URL, TokenFile: tok, SnapshotDir: dir, HTTPClient: op.Client(), Log: log,
				TracingHeaders: tracingHeaders(tr, log)}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.Run(ctx, func(*policy.Snapshot) error { applied.Add(1); return nil }, func(err error) { t.Error(err) })
			}()
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(logBuf.String(), "go with every export") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			<-done

			tr.StartCall(t.Context(), http.Header{}, tracing.CallInfo{Operation: "chat", Model: "m"}).End("allowed")
			stopTracing(tr, log)
			if len(col.WaitSpans(1, 5*time.Second)) != 1 {
				t.Fatal("no span exported")
			}
			var sent bool
			for _, h := range col.Headers() {
				for k, v := range h {
					if strings.EqualFold(k, "authorization") && len(v) == 1 && v[0] == "Bearer "+headerCanary {
						sent = true
					}
				}
			}
			if !sent {
				t.Errorf("the control plane's header was not sent: %v; log: %s", col.Headers(), logBuf.String())
			}
			if strings.Contains(logBuf.String(), headerCanary) || strings.Contains(strings.ToLower(logBuf.String()), "authorization") {
				t.Errorf("the guard's log names the header: %s", logBuf.String())
			}
			b, err := os.ReadFile(filepath.Join(dir, controlplane.SnapshotFile))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(headerCanary)) {
				t.Errorf("the persisted snapshot holds the header: %s", b)
			}
		})
	}
}

// Headers for another endpoint (a guard injected with an earlier setting) are not sent,
// which is logged without them; a malformed OTEL_EXPORTER_OTLP_HEADERS is a warning that
// does not quote it.
func TestTracingHeadersNotForThisGuard(t *testing.T) {
	col := otlptest.NewHTTP(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20"+headerCanary+"%0A")
	var logBuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	tr := startTracing(options{}, log)
	if tr == nil {
		t.Fatal("tracing is off")
	}
	if !strings.Contains(logBuf.String(), "OTEL_EXPORTER_OTLP_HEADERS is malformed") {
		t.Errorf("the malformed variable was not logged: %s", logBuf.String())
	}
	set := tracingHeaders(tr, log)
	set("http://another-collector:4318", map[string]string{"Authorization": "Bearer " + headerCanary})
	set("http://another-collector:4318", map[string]string{"Authorization": "Bearer " + headerCanary})
	if n := strings.Count(logBuf.String(), "without the control plane's OTLP headers"); n != 1 {
		t.Errorf("logged %d times, want once: %s", n, logBuf.String())
	}
	tr.StartCall(t.Context(), http.Header{}, tracing.CallInfo{Operation: "chat"}).End("allowed")
	stopTracing(tr, log)
	col.WaitSpans(1, 5*time.Second)
	for _, h := range col.Headers() {
		for k, v := range h {
			if strings.Contains(strings.Join(v, ","), headerCanary) {
				t.Errorf("header %s sent to a collector it was not for", k)
			}
		}
	}
	if strings.Contains(logBuf.String(), headerCanary) {
		t.Errorf("the guard's log holds the header: %s", logBuf.String())
	}
	// Off: nothing to set, nothing logged, no panic.
	tracingHeaders(nil, log)("x", map[string]string{"A": "b"})
}
