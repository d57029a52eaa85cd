// Package otlptest is an OTLP trace receiver for tests: a gRPC server of the collector's
// TraceService (the OTLP protos' generated service, over gRPC's own library) or an
// OTLP/HTTP endpoint, on loopback, that keeps what it receives. Tests only: the guard
// does not link it (runtime/linkcheck_test.go).
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the gzip exports a collector accepts
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
)

// Collector keeps the spans it received.
type Collector struct {
	// Endpoint is what OTEL_EXPORTER_OTLP_ENDPOINT is set to.
	Endpoint string

	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	raw      [][]byte
	headers  []map[string][]string
	peers    []string
	// serverLog is what NewMTLS's server logged.
	serverLog []string
	changed   chan struct{}
	// discard: count spans, keep nothing (Discard).
	discard atomic.Bool
	count   atomic.Int64
}

// Discard makes the collector count the spans it receives (Count) and keep nothing: for a
// benchmark, whose spans would otherwise pile up.
func (c *Collector) Discard() { c.discard.Store(true) }

// Count returns how many spans the collector received.
func (c *Collector) Count() int64 { return c.count.Load() }

func newCollector() *Collector { return &Collector{changed: make(chan struct{}, 1)} }

func (c *Collector) keep(req *coltracepb.ExportTraceServiceRequest, h map[string][]string) {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	c.count.Add(int64(n))
	if c.discard.Load() {
		return
	}
	raw, _ := proto.Marshal(req)
	c.mu.Lock()
	c.requests = append(c.requests, req)
	c.raw = append(c.raw, raw)
	c.headers = append(c.headers, h)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

type service struct {
	coltracepb.UnimplementedTraceServiceServer
	c *Collector
}

func (s service) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	h := map[string][]string{}
	if md, ok := metadataFrom(ctx); ok {
		h = md
	}
	s.c.keep(req, h)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// NewGRPC starts an OTLP/gRPC receiver (plaintext, HTTP/2 with prior knowledge) on
// loopback; it stops with the test. Endpoint is http://127.0.0.1:port.
func NewGRPC(t testing.TB) *Collector {
	t.Helper()
	c := newCollector()
	var lc net.ListenConfig
	lis, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, service{c: c})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	c.Endpoint = "http://" + lis.Addr().String()
	return c
}

// NewGRPCTLS starts an OTLP/gRPC receiver over TLS (HTTP/2 by ALPN) on loopback, served by
// gRPC's server through net/http; it stops with the test. Endpoint is https://127.0.0.1:port
// and CAFile a PEM file of the certificate to trust.
func NewGRPCTLS(t testing.TB) (c *Collector, caFile string) {
	t.Helper()
	c = newCollector()
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, service{c: c})
	srv := httptest.NewUnstartedServer(gs)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	c.Endpoint = srv.URL
	return c, caFile
}

// NewHTTP starts an OTLP/HTTP receiver (binary protobuf at /v1/traces) on loopback; it
// stops with the test. Endpoint is its base URL.
func NewHTTP(t testing.TB) *Collector {
	t.Helper()
	c := newCollector()
	srv := httptest.NewServer(c.httpHandler())
	t.Cleanup(srv.Close)
	c.Endpoint = srv.URL
	return c
}

// NewMTLS starts an OTLP receiver over TLS on loopback, for protocol "grpc" (gRPC's
// server through net/http, HTTP/2 by ALPN) or "http/protobuf", that serves cert and
// requires every client to present a certificate chaining to clientCAs (crypto/tls's
// RequireAndVerifyClientCert): a client without one fails its handshake. It records the
// common name of each export's client certificate (Peers). It stops with the test;
// Endpoint is https://127.0.0.1:port.
func NewMTLS(t testing.TB, protocol string, cert tls.Certificate, clientCAs *x509.CertPool) *Collector {
	t.Helper()
	c := newCollector()
	h := c.httpHandler()
	if protocol == tracing.ProtocolGRPC {
		gs := grpc.NewServer()
		coltracepb.RegisterTraceServiceServer(gs, service{c: c})
		h = gs
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			c.mu.Lock()
			c.peers = append(c.peers, r.TLS.PeerCertificates[0].Subject.CommonName)
			c.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(handshakeLog{c}, "", 0) // the refused handshakes, which a test makes on purpose
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clientCAs,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c.Endpoint = srv.URL
	return c
}

// handshakeLog keeps the server's log lines: its refused handshakes.
type handshakeLog struct{ c *Collector }

func (h handshakeLog) Write(p []byte) (int, error) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.c.serverLog = append(h.c.serverLog, string(p))
	return len(p), nil
}

// ServerLog returns what the server of NewMTLS logged: why it refused handshakes ("tls:
// client didn't provide a certificate").
func (c *Collector) ServerLog() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.serverLog...)
}

// Peers returns the common name of the client certificate of each request received over
// mutual TLS (NewMTLS), in order.
func (c *Collector) Peers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.peers...)
}

// httpHandler is OTLP/HTTP: binary protobuf at /v1/traces.
func (c *Collector) httpHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.keep(req, r.Header.Clone())
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	})
}

// Span is a received span with its resource.
type Span struct {
	*tracepb.Span
	Resource []*commonpb.KeyValue
	Scope    string
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Span
	for _, req := range c.requests {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					out = append(out, Span{Span: sp, Resource: rs.GetResource().GetAttributes(), Scope: ss.GetScope().GetName()})
				}
			}
		}
	}
	return out
}

// Headers returns the headers (gRPC metadata) of each export received.
func (c *Collector) Headers() []map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string][]string(nil), c.headers...)
}

// Raw returns every export as received, encoded: what a test searches for text that must
// not be there.
func (c *Collector) Raw() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.raw, nil)
}

// WaitSpans waits until at least n spans have arrived, or d has passed, and returns them.
func (c *Collector) WaitSpans(n int, d time.Duration) []Span {
	deadline := time.After(d)
	for {
		if s := c.Spans(); len(s) >= n {
			return s
		}
		select {
		case <-c.changed:
		case <-deadline:
			return c.Spans()
		}
	}
}

// Attr returns the value of a span's (or resource's) attribute key, nil when absent.
func Attr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

// Str returns a string attribute's value, "" when absent.
func Str(kvs []*commonpb.KeyValue, key string) string { return Attr(kvs, key).GetStringValue() }

func metadataFrom(ctx context.Context) (map[string][]string, bool) {
	md, ok := metadata.FromIncomingContext(ctx)
	return md, ok
}

// Tracer sets up the guard's tracing against c as the guard does from its variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" or "http/protobuf"),
// for pod app-0; it is shut down with the test.
func Tracer(t testing.TB, c *Collector, protocol string) *tracing.Tracer {
	t.Helper()
	cfg, err := tracing.FromEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.Endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := tracing.Setup(context.Background(), cfg, tracing.Options{Pod: "app-0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tr.Shutdown(ctx)
	})
	return tr
}
