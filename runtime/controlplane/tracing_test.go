package controlplane

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

const tracingCanary = "Bearer otlp-canary-header-7c3a"

// snapshotWithTracing is snapshot with the tracing headers h for endpoint (none when h is nil).
func snapshotWithTracing(t *testing.T, version, endpoint string, h map[string]string) []byte {
	t.Helper()
	var s Snapshot
	if err := json.Unmarshal(snapshotWithProvider(t, version), &s); err != nil {
		t.Fatal(err)
	}
	if h != nil {
		s.Tracing = &Tracing{Endpoint: endpoint, Headers: h}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rotatingOperator answers polls with its current snapshot until the guard runs it.
type rotatingOperator struct {
	mu    sync.Mutex
	snap  []byte
	ver   string
	polls []SubscribeRequest
}

func (o *rotatingOperator) set(ver string, snap []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ver, o.snap = ver, snap
}

func (o *rotatingOperator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req SubscribeRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	o.mu.Lock()
	o.polls = append(o.polls, req)
	ver, snap := o.ver, o.snap
	o.mu.Unlock()
	if req.Running == ver {
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	_, _ = w.Write(snap)
}

func (o *rotatingOperator) firstPoll() SubscribeRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.polls) == 0 {
		return SubscribeRequest{Running: "none yet"}
	}
	return o.polls[0]
}

// headersSeen records what the client handed to TracingHeaders.
type headersSeen struct {
	mu       sync.Mutex
	endpoint []string
	headers  []map[string]string
}

func (h *headersSeen) set(endpoint string, headers map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endpoint = append(h.endpoint, endpoint)
	h.headers = append(h.headers, headers)
}

func (h *headersSeen) last() (string, map[string]string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.headers) == 0 {
		return "", nil, 0
	}
	return h.endpoint[len(h.endpoint)-1], h.headers[len(h.headers)-1], len(h.headers)
}

func runClient(t *testing.T, op http.Handler, dir string, seen *headersSeen) {
	t.Helper()
	srv := httptest.NewTLSServer(op)
	t.Cleanup(srv.Close)
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Client{URL: srv.URL, TokenFile: tok, SnapshotDir: dir, HTTPClient: srv.Client(), MinBackoff: time.Millisecond,
		TracingHeaders: seen.set}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, func(*policy.Snapshot) error { return nil }, func(error) {}) }()
	t.Cleanup(func() { cancel(); <-done })
}

// The tracing headers of a pushed snapshot reach the guard's tracer, a rotation replaces
// them, a snapshot without them removes them; the snapshot on disk never holds them.
func TestTheGuardTakesTheTracingHeadersButPersistsTheSnapshotWithoutThem(t *testing.T) {
	const endpoint = "http://otel-collector.observability.svc:4318"
	op := &rotatingOperator{}
	op.set("v1", snapshotWithTracing(t, "v1", endpoint, map[string]string{"Authorization": tracingCanary}))
	dir := t.TempDir()
	var seen headersSeen
	runClient(t, op, dir, &seen)

	waitFor(t, "the headers", func() bool { _, _, n := seen.last(); return n == 1 })
	if e, h, _ := seen.last(); e != endpoint || h["Authorization"] != tracingCanary {
		t.Errorf("TracingHeaders(%q, %d headers), want the snapshot's endpoint and header", e, len(h))
	}
	waitFor(t, "the persisted snapshot", func() bool {
		_, err := os.Stat(filepath.Join(dir, SnapshotFile))
		return err == nil
	})
	b, err := os.ReadFile(filepath.Join(dir, SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "otlp-canary-header") || strings.Contains(string(b), `"headers":{"Authorization"`) {
		t.Errorf("the snapshot on disk holds the tracing headers:\n%s", b)
	}
	if !strings.Contains(string(b), "otel-collector.observability.svc") || !strings.Contains(string(b), "flamingo") {
		t.Errorf("the snapshot on disk lost more than the headers:\n%s", b)
	}

	rotated := "Bearer otlp-rotated-9e0f"
	op.set("v2", snapshotWithTracing(t, "v2", endpoint, map[string]string{"Authorization": rotated}))
	// The fake answers the poll held open with v1 only after it returns: a poll within 20 ms.
	waitFor(t, "the rotated headers", func() bool { _, h, _ := seen.last(); return h["Authorization"] == rotated })

	op.set("v3", snapshotWithTracing(t, "v3", "", nil))
	waitFor(t, "the headers removed", func() bool { e, h, n := seen.last(); return n == 3 && e == "" && h == nil })
	b, err = os.ReadFile(filepath.Join(dir, SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "otlp-") {
		t.Errorf("the snapshot on disk holds tracing headers:\n%s", b)
	}
}

// A guard restarted with a persisted snapshot that had tracing headers asks the operator
// for the whole snapshot again (it does not claim its version running), and gets them.
func TestARestartedGuardAsksForTheTracingHeadersAgain(t *testing.T) {
	const endpoint = "http://otel-collector:4318"
	dir := t.TempDir()
	raw := snapshotWithTracing(t, "v1", endpoint, map[string]string{"Authorization": tracingCanary})
	// Without providers, so that only the tracing headers are missing from the file.
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	s.Providers = nil
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Client{SnapshotDir: dir}).persist(raw); err != nil {
		t.Fatal(err)
	}
	loaded, err := (&Client{SnapshotDir: dir}).loadPersisted()
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Tracing == nil || loaded.Tracing.Endpoint != endpoint || len(loaded.Tracing.Headers) != 0 || !lacksCredentials(loaded) {
		t.Fatalf("persisted tracing %+v: want the endpoint without headers", loaded.Tracing)
	}

	op := &rotatingOperator{}
	op.set("v1", raw)
	var seen headersSeen
	runClient(t, op, dir, &seen)
	waitFor(t, "the headers", func() bool { _, h, _ := seen.last(); return h["Authorization"] == tracingCanary })
	if first := op.firstPoll(); first.Running != "" {
		t.Errorf("first poll claims %q running: the operator would never send the headers", first.Running)
	}
}

// certSeen records what the client handed to TracingClientCertificate.
type certSeen struct {
	mu       sync.Mutex
	endpoint string
	cert     *ClientCertificate
	n        int
}

func (c *certSeen) set(endpoint string, cc *ClientCertificate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endpoint, c.cert, c.n = endpoint, cc, c.n+1
}

func (c *certSeen) last() (string, *ClientCertificate, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endpoint, c.cert, c.n
}

// snapshotWithCert is snapshotWithTracing with a client certificate and no headers.
func snapshotWithCert(t *testing.T, version, endpoint string, cc *ClientCertificate) []byte {
	t.Helper()
	var s Snapshot
	if err := json.Unmarshal(snapshotWithProvider(t, version), &s); err != nil {
		t.Fatal(err)
	}
	s.Providers = nil
	if cc != nil {
		s.Tracing = &Tracing{Endpoint: endpoint, ClientCertificate: cc}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The client certificate of a pushed snapshot reaches the guard's tracer with its endpoint,
// a rotation and a KeepLast are handed over as they come, a snapshot without one removes
// it; the snapshot on disk holds none of it (certificate, key or CA), and a guard
// restarted from it asks the operator for the whole snapshot again.
func TestTheGuardTakesTheClientCertificateButPersistsTheSnapshotWithoutIt(t *testing.T) {
	const endpoint = "https://otel-collector.observability.svc:4318"
	const keyCanary = "-----BEGIN PRIVATE KEY-----\nY2xpZW50LWtleS1jYW5hcnk=\n-----END PRIVATE KEY-----\n"
	first := &ClientCertificate{Certificate: "cert-canary-1", Key: keyCanary, CA: "ca-canary-1"}
	op := &rotatingOperator{}
	op.set("v1", snapshotWithCert(t, "v1", endpoint, first))
	dir := t.TempDir()
	srv := httptest.NewTLSServer(op)
	t.Cleanup(srv.Close)
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var seen certSeen
	run := func() func() {
		c := &Client{URL: srv.URL, TokenFile: tok, SnapshotDir: dir, HTTPClient: srv.Client(), MinBackoff: time.Millisecond,
			TracingClientCertificate: seen.set}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); c.Run(ctx, func(*policy.Snapshot) error { return nil }, func(error) {}) }()
		return func() { cancel(); <-done }
	}
	stop := run()
	t.Cleanup(func() { stop() })

	waitFor(t, "the certificate", func() bool { _, c, _ := seen.last(); return c != nil && c.Key == keyCanary })
	if e, c, _ := seen.last(); e != endpoint || c.Certificate != "cert-canary-1" || c.CA != "ca-canary-1" {
		t.Errorf("TracingClientCertificate(%q, %+v), want the snapshot's endpoint and certificate", e, c != nil)
	}
	onDisk := func() string {
		t.Helper()
		waitFor(t, "the persisted snapshot", func() bool {
			_, err := os.Stat(filepath.Join(dir, SnapshotFile))
			return err == nil
		})
		b, err := os.ReadFile(filepath.Join(dir, SnapshotFile))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if b := onDisk(); strings.Contains(b, "canary") || strings.Contains(b, "PRIVATE KEY") || strings.Contains(b, "clientCertificate") {
		t.Errorf("the snapshot on disk holds the client certificate:\n%s", b)
	} else if !strings.Contains(b, "otel-collector.observability.svc") || !strings.Contains(b, "flamingo") {
		t.Errorf("the snapshot on disk lost more than the certificate:\n%s", b)
	}

	op.set("v2", snapshotWithCert(t, "v2", endpoint, &ClientCertificate{Certificate: "cert-canary-2", Key: keyCanary}))
	waitFor(t, "the rotated certificate", func() bool { _, c, _ := seen.last(); return c != nil && c.Certificate == "cert-canary-2" })
	op.set("v3", snapshotWithCert(t, "v3", endpoint, &ClientCertificate{KeepLast: true}))
	waitFor(t, "keep the last", func() bool { _, c, _ := seen.last(); return c != nil && c.KeepLast })
	op.set("v4", snapshotWithCert(t, "v4", "", nil))
	waitFor(t, "the certificate removed", func() bool { e, c, n := seen.last(); return n >= 4 && e == "" && c == nil })

	// A restart from a snapshot that had a certificate: the operator is asked again.
	op.set("v5", snapshotWithCert(t, "v5", endpoint, first))
	waitFor(t, "the certificate again", func() bool { _, c, _ := seen.last(); return c != nil && c.Certificate == "cert-canary-1" })
	stop()
	if b := onDisk(); strings.Contains(b, "canary") || strings.Contains(b, "PRIVATE KEY") {
		t.Errorf("the snapshot on disk holds the client certificate:\n%s", b)
	}
	loaded, err := (&Client{SnapshotDir: dir}).loadPersisted()
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Tracing == nil || loaded.Tracing.ClientCertificate != nil || !lacksCredentials(loaded) {
		t.Fatalf("persisted tracing %+v: want the endpoint without the certificate", loaded.Tracing)
	}
	op.mu.Lock()
	op.polls = nil
	op.mu.Unlock()
	stop = run()
	waitFor(t, "a poll after the restart", func() bool { return op.firstPoll().Running != "none yet" })
	if first := op.firstPoll(); first.Running != "" {
		t.Errorf("first poll after the restart claims %q running: the operator would never send the certificate", first.Running)
	}
}
