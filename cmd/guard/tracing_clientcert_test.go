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
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
)

// The client certificate delivered by the control plane, as the guard runs it (the
// subscription's client handing it to tracingClientCertificate), is what the guard's
// exports present to a collector that requires one, the collector verified by the
// delivered CA; a rotation pushed by the control plane is presented from then on, by the
// same exporter, and a KeepLast keeps it. Neither the key nor the certificate is in the
// guard's log or its persisted snapshot. Over gRPC and HTTP.
func TestTracingClientCertificateFromTheControlPlane(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			pki := otlptest.NewPKI(t)
			col := otlptest.NewMTLS(t, protocol, pki.Server(t), pki.Pool)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
			var logBuf syncBuffer
			log := slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			tr := startTracing(options{pod: "p", namespace: "team-t"}, log)
			if tr == nil {
				t.Fatalf("tracing is off; log: %s", logBuf.String())
			}
			defer stopTracing(tr, log)

			// The operator: the snapshot of its current version until the guard runs it.
			var mu sync.Mutex
			var version string
			var snap []byte
			var keys []string
			serve := func(v string, cc *controlplane.ClientCertificate) {
				b, err := json.Marshal(controlplane.Snapshot{Version: v, Namespace: "team-t",
					Classifiers: []policy.ClassifierObject{}, Guardrails: []policy.GuardrailObject{},
					Tracing: &controlplane.Tracing{Endpoint: col.Endpoint, ClientCertificate: cc}})
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				version, snap = v, b
				if cc != nil && cc.Key != "" {
					keys = append(keys, cc.Key)
				}
			}
			pair := func(cn string) *controlplane.ClientCertificate {
				c, k := pki.Client(t, cn)
				return &controlplane.ClientCertificate{Certificate: string(c), Key: string(k), CA: string(pki.CAPEM)}
			}
			serve("v1", pair("guard-1"))
			op := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req controlplane.SubscribeRequest
				_ = json.NewDecoder(r.Body).Decode(&req)
				mu.Lock()
				v, b := version, snap
				mu.Unlock()
				if req.Running == v {
					time.Sleep(20 * time.Millisecond)
					w.WriteHeader(http.StatusNoContent)
					return
				}
				_, _ = w.Write(b)
			}))
			t.Cleanup(op.Close)
			dir := t.TempDir()
			tok := filepath.Join(dir, "token")
			if err := os.WriteFile(tok, []byte("t"), 0o600); err != nil {
				t.Fatal(err)
			}
			c := &controlplane.Client{URL: op.URL, TokenFile: tok, SnapshotDir: dir, HTTPClient: op.Client(), Log: log,
				TracingClientCertificate: tracingClientCertificate(tr, log)}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.Run(ctx, func(*policy.Snapshot) error { return nil }, func(err error) { t.Error(err) })
			}()
			defer func() { cancel(); <-done }()

			// presented exports one span until it arrives and returns the common name of
			// the certificate it came with.
			n := 0
			presented := func() string {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					n++
					model := "m" + strconv.Itoa(n)
					tr.StartCall(t.Context(), http.Header{}, tracing.CallInfo{Operation: "chat", Model: model}).End("allowed")
					for wait := time.Now().Add(time.Second); time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
						if slices.ContainsFunc(col.Spans(), func(s otlptest.Span) bool { return s.Name == "chat "+model }) {
							p := col.Peers()
							return p[len(p)-1]
						}
					}
				}
				t.Fatalf("no span arrived (%d received, server log %q); log: %s", len(col.Spans()), col.ServerLog(), logBuf.String())
				return ""
			}
			if cn := presented(); cn != "guard-1" {
				t.Fatalf("presented %q, want guard-1", cn)
			}
			serve("v2", pair("guard-2"))
			deadline := time.Now().Add(10 * time.Second)
			cn := presented()
			for cn != "guard-2" && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				cn = presented()
			}
			if cn != "guard-2" {
				t.Fatalf("after the rotation: presented %q, want guard-2", cn)
			}
			serve("v3", &controlplane.ClientCertificate{KeepLast: true})
			for !strings.Contains(logBuf.String(), "keep the last one") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if cn := presented(); cn != "guard-2" {
				t.Fatalf("after KeepLast: presented %q, want guard-2", cn)
			}

			mu.Lock()
			defer mu.Unlock()
			b, err := os.ReadFile(filepath.Join(dir, controlplane.SnapshotFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if strings.Contains(logBuf.String(), strings.TrimSpace(k)[30:60]) || bytes.Contains(b, []byte(strings.TrimSpace(k)[30:60])) {
					t.Error("the guard's log or persisted snapshot holds the client certificate's key")
				}
			}
			if strings.Contains(logBuf.String(), "PRIVATE KEY") || bytes.Contains(b, []byte("PRIVATE KEY")) || bytes.Contains(b, []byte("CERTIFICATE")) {
				t.Errorf("the guard's log or persisted snapshot holds PEM; log: %s\nsnapshot: %s", logBuf.String(), b)
			}
			if !strings.Contains(logBuf.String(), "present the control plane's client certificate") {
				t.Errorf("the certificate's arrival was not logged: %s", logBuf.String())
			}
		})
	}
}

// A certificate for another endpoint (a guard injected with an earlier setting) is not
// presented, which is logged without it; off, it is ignored.
func TestTracingClientCertificateNotForThisGuard(t *testing.T) {
	col := otlptest.NewHTTP(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	var logBuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	tr := startTracing(options{}, log)
	if tr == nil {
		t.Fatal("tracing is off")
	}
	defer stopTracing(tr, log)
	pki := otlptest.NewPKI(t)
	c, k := pki.Client(t, "guard")
	set := tracingClientCertificate(tr, log)
	set("https://another-collector:4318", &controlplane.ClientCertificate{Certificate: string(c), Key: string(k)})
	set("https://another-collector:4318", &controlplane.ClientCertificate{Certificate: string(c), Key: string(k)})
	if n := strings.Count(logBuf.String(), "without the control plane's client certificate"); n != 1 {
		t.Errorf("logged %d times, want once: %s", n, logBuf.String())
	}
	if tr.KeepsClientTLS(col.Endpoint) {
		t.Error("a certificate for another endpoint was taken")
	}
	set(col.Endpoint, &controlplane.ClientCertificate{Certificate: string(c), Key: "not a key"})
	if !strings.Contains(logBuf.String(), "cannot be used") || strings.Contains(logBuf.String(), "BEGIN") {
		t.Errorf("an unusable certificate: %s", logBuf.String())
	}
	tracingClientCertificate(nil, log)("x", &controlplane.ClientCertificate{Key: "k"})
}
