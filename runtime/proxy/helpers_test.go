package proxy

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom/promtest"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Policies of the proxy's tests. The proxy knows nothing of rules; these only make the
// engine allow, block or redact so that each of the proxy's paths runs.

// inputPolicy blocks prompts that mention "bluebird"; responses are not judged.
const inputPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words}
spec:
  builtin:
    keywords: [{category: secret-project, words: [bluebird]}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: no-bluebird}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input]
  threshold: 0.5
  action: Block
  reason: Project Bluebird is not discussed here.
`

// streamPolicy blocks "bluebird" in prompts and in streamed and whole answers.
var streamPolicy = strings.Replace(inputPolicy, "phases: [Input]", "phases: [Input, Stream, Output, ToolCalls]", 1)

// compile compiles a policy file's text.
func compile(t testing.TB, text string) *policy.Snapshot {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := (&policysource.File{Path: path}).Load()
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// harness is a proxy with a policy, served on loopback, in front of a fake provider.
type harness struct {
	px  *Proxy
	tel *telemetry.Telemetry
	p   *fakeprovider.Provider
	srv *httptest.Server
	// upstreamConns counts the connections the proxy opened to the provider; clientConns
	// the client connections the proxy's server accepted and closed.
	upstreamConns, clientConns *connCounter
}

// harnessConfig is what the options of newHarness change.
type harnessConfig struct {
	Config
	// wrap, when set, wraps the fake provider's handler (to delay or gate it).
	wrap func(http.Handler) http.Handler
}

type harnessOpt func(*harnessConfig)

// withConfig changes the proxy's Config.
func withConfig(fn func(*Config)) harnessOpt { return func(c *harnessConfig) { fn(&c.Config) } }

// upstreamVia serves the fake provider through wrap.
func upstreamVia(wrap func(http.Handler) http.Handler) harnessOpt {
	return func(c *harnessConfig) { c.wrap = wrap }
}

// newHarness starts a fake provider and a proxy enforcing policyText in front of it.
func newHarness(t testing.TB, policyText string, opts ...harnessOpt) *harness {
	t.Helper()
	h := &harness{p: fakeprovider.New(), tel: telemetry.New(nil), upstreamConns: &connCounter{}, clientConns: &connCounter{}}
	t.Cleanup(h.p.Close)
	var hc harnessConfig
	for _, o := range opts {
		o(&hc)
	}
	// The provider is served through a server of ours that counts connections.
	var upstream http.Handler = h.p
	if hc.wrap != nil {
		upstream = hc.wrap(upstream)
	}
	up := httptest.NewUnstartedServer(upstream)
	up.Config.ConnState = h.upstreamConns.track
	up.Start()
	t.Cleanup(up.Close)
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := hc.Config
	if cfg.OpenAIUpstream == nil {
		cfg.OpenAIUpstream = u
	}
	if cfg.AnthropicUpstream == nil {
		cfg.AnthropicUpstream = u
	}
	if cfg.GeminiUpstream == nil {
		cfg.GeminiUpstream = u
	}
	cfg.Telemetry, cfg.Log = h.tel, discardLogger()
	h.px = New(cfg)
	if policyText != "" {
		if err := h.px.Apply(compile(t, policyText)); err != nil {
			t.Fatal(err)
		}
	}
	h.srv = httptest.NewUnstartedServer(h.px)
	h.srv.Config.ConnState = h.clientConns.track
	h.srv.Start()
	t.Cleanup(h.srv.Close)
	return h
}

// post sends a request and returns the response with its body read.
func (h *harness) post(t testing.TB, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return h.do(t, http.MethodPost, path, body, header...)
}

func (h *harness) do(t testing.TB, method, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp := h.open(t, method, path, body, header...)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// open sends a request and returns the response with its body still to be read (a stream,
// read as it arrives); the body is closed when the test ends.
func (h *harness) open(t testing.TB, method, path, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// counter returns the value of a counter series of the proxy's telemetry, read from its
// exposition as Prometheus reads it.
func (h *harness) counter(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	var text bytes.Buffer
	if err := h.tel.Registry.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, m := range promtest.Parse(t, text.String())[name].GetMetric() {
		if hasLabels(m, labels) {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func hasLabels(m *dto.Metric, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == kv[i] && l.GetValue() == kv[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// connCounter counts the connections a server accepted and closed.
type connCounter struct {
	mu             sync.Mutex
	opened, closed int
}

func (c *connCounter) track(_ net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		c.opened++
	case http.StateClosed, http.StateHijacked:
		c.closed++
	}
}

// count returns how many connections were opened.
func (c *connCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened
}

// closedCount returns how many connections were closed.
func (c *connCounter) closedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// sseEvents splits an event stream into events with their blank line.
func sseEvents(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.Index(b, []byte("\n\n"))
		if i < 0 {
			return append(out, b)
		}
		out = append(out, b[:i+2])
		b = b[i+2:]
	}
	return out
}

// eventually polls cond until it holds; the test fails after a generous deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
