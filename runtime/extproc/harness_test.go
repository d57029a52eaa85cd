package extproc

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The tests drive the server as Envoy does, over a real gRPC stream on loopback, with the
// filter configuration docs/extproc.md gives: request headers and a BUFFERED request
// body, response headers and a STREAMED response body, allow_mode_override. What the
// client would receive is what the server's mutations make of the provider's bytes, and
// it is compared with what the guard's own proxy sends for the same bytes.

// syncBuffer is a buffer safe for the server's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is a Server enforcing a policy, served on loopback, and a gRPC client of it.
type harness struct {
	t          testing.TB
	snapText   string
	px         *proxy.Proxy
	tel        *telemetry.Telemetry
	srv        *Server
	client     extprocv3.ExternalProcessorClient
	logs       *syncBuffer
	decisions  *syncBuffer
	secretText []string
}

// compile returns a policy holder with the policy of text in force.
func compile(t testing.TB, text string) *proxy.Proxy {
	t.Helper()
	px := proxy.New(proxy.Config{Log: slog.New(slog.DiscardHandler)})
	if err := px.Apply(compileSnap(t, text)); err != nil {
		t.Fatal(err)
	}
	return px
}

// newHarness starts a server enforcing policyText. The texts in secrets must never
// appear in its log.
func newHarness(t testing.TB, policyText string, secrets ...string) *harness {
	t.Helper()
	h := &harness{t: t, snapText: policyText, logs: &syncBuffer{}, decisions: &syncBuffer{}, secretText: secrets}
	h.tel = telemetry.New(h.decisions)
	h.px = compile(t, policyText)
	h.srv = New(Config{Policy: h.px, Telemetry: h.tel, Pod: "test-pod",
		Log: slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h.client = serve(t, h.srv)
	t.Cleanup(func() {
		for _, s := range h.secretText {
			if strings.Contains(strings.ToLower(h.logs.String()), strings.ToLower(s)) {
				t.Errorf("the server's log holds content %q:\n%s", s, h.logs.String())
			}
		}
	})
	return h
}

// serve serves srv on a loopback port and returns a client of it.
func serve(t testing.TB, srv *Server) extprocv3.ExternalProcessorClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	srv.Register(g)
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return extprocv3.NewExternalProcessorClient(conn)
}

// metrics returns the server's Prometheus exposition.
func (h *harness) metrics() string {
	rec := httptest.NewRecorder()
	h.tel.Registry.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// call is an HTTP call as Envoy sees it: the request, and the provider's answer in the
// chunks Envoy hands over.
type call struct {
	method, path string
	header       [][2]string
	body         []byte
	status       int
	contentType  string
	chunks       [][]byte
	// protocol, when set, is sent in the first message as Envoy does.
	protocol *extprocv3.ProtocolConfiguration
}

// result is what became of a call through the server.
type result struct {
	// immediate is set when the server answered itself; where says at which message.
	immediate *extprocv3.ImmediateResponse
	where     string
	// upstream is the request body the provider receives; upstreamHeaders the request
	// header mutations.
	upstream        []byte
	upstreamHeaders []*extprocv3.HeaderMutation
	// clientChunks are the answer's chunks as the client receives them; client their
	// concatenation; clientHeaders the response header mutations.
	clientChunks  [][]byte
	client        []byte
	clientHeaders []*extprocv3.HeaderMutation
	// buffered is set when the server asked for the answer BUFFERED (and got it so).
	buffered bool
}

func hdr(kv ...string) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return m
}

// mutate applies a body mutation to a chunk, as Envoy does.
func mutate(chunk []byte, m *extprocv3.BodyMutation) []byte {
	switch mm := m.GetMutation().(type) {
	case *extprocv3.BodyMutation_Body:
		return mm.Body
	case *extprocv3.BodyMutation_ClearBody:
		return nil
	}
	return chunk
}

// exchange runs c through the server as Envoy does.
func (h *harness) exchange(c call) result {
	t := h.t
	t.Helper()
	stream, err := h.client.Process(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var res result
	send := func(where string, req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatalf("%s: send: %v", where, err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("%s: recv: %v", where, err)
		}
		if ir := resp.GetImmediateResponse(); ir != nil {
			res.immediate, res.where = ir, where
		}
		return resp
	}
	defer func() {
		_ = stream.CloseSend()
		if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
			t.Errorf("the server did not end the stream after Envoy closed it: %v", err)
		}
	}()
	kv := []string{":method", c.method, ":path", c.path, ":scheme", "http", ":authority", "gateway"}
	for _, p := range c.header {
		kv = append(kv, p[0], p[1])
	}
	if len(c.body) > 0 {
		kv = append(kv, "content-length", strconv.Itoa(len(c.body)))
	}
	first := &extprocv3.ProcessingRequest{ProtocolConfig: c.protocol, Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: hdr(kv...), EndOfStream: len(c.body) == 0}}}
	resp := send("request headers", first)
	if res.immediate != nil {
		return res
	}
	if hm := resp.GetRequestHeaders().GetResponse().GetHeaderMutation(); hm != nil {
		res.upstreamHeaders = append(res.upstreamHeaders, hm)
	}
	responseMode := filterv3.ProcessingMode_STREAMED
	if mo := resp.GetModeOverride(); mo != nil {
		responseMode = mo.GetResponseBodyMode()
	}
	res.upstream = c.body
	if len(c.body) > 0 {
		resp = send("request body", &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: c.body, EndOfStream: true}}})
		if res.immediate != nil {
			return res
		}
		common := resp.GetRequestBody().GetResponse()
		res.upstream = mutate(c.body, common.GetBodyMutation())
		if hm := common.GetHeaderMutation(); hm != nil {
			res.upstreamHeaders = append(res.upstreamHeaders, hm)
		}
	}
	ct := c.contentType
	if ct == "" {
		ct = "application/json"
	}
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	rkv := []string{":status", strconv.Itoa(status), "content-type", ct}
	total := 0
	for _, ch := range c.chunks {
		total += len(ch)
	}
	if !strings.HasPrefix(ct, "text/event-stream") {
		rkv = append(rkv, "content-length", strconv.Itoa(total))
	}
	resp = send("response headers", &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: hdr(rkv...), EndOfStream: len(c.chunks) == 0}}})
	if res.immediate != nil {
		return res
	}
	if hm := resp.GetResponseHeaders().GetResponse().GetHeaderMutation(); hm != nil {
		res.clientHeaders = append(res.clientHeaders, hm)
	}
	if mo := resp.GetModeOverride(); mo != nil {
		responseMode = mo.GetResponseBodyMode()
	}
	chunks := c.chunks
	switch responseMode {
	case filterv3.ProcessingMode_NONE:
		for _, ch := range chunks {
			res.clientChunks = append(res.clientChunks, ch)
			res.client = append(res.client, ch...)
		}
		return res
	case filterv3.ProcessingMode_BUFFERED:
		res.buffered = true
		chunks = [][]byte{bytes.Join(chunks, nil)}
	}
	for i, ch := range chunks {
		resp = send("response body", &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: ch, EndOfStream: i == len(chunks)-1}}})
		if res.immediate != nil {
			return res
		}
		common := resp.GetResponseBody().GetResponse()
		out := mutate(ch, common.GetBodyMutation())
		if hm := common.GetHeaderMutation(); hm != nil {
			res.clientHeaders = append(res.clientHeaders, hm)
		}
		res.clientChunks = append(res.clientChunks, out)
		res.client = append(res.client, out...)
	}
	return res
}

// headerSet returns the value the mutations set for a header, and whether one did.
func headerSet(ms []*extprocv3.HeaderMutation, name string) (string, bool) {
	v, ok := "", false
	for _, m := range ms {
		for _, o := range m.GetSetHeaders() {
			if o.GetHeader().GetKey() == name {
				v, ok = string(o.GetHeader().GetRawValue()), true
			}
		}
	}
	return v, ok
}

func headerRemoved(ms []*extprocv3.HeaderMutation, name string) bool {
	for _, m := range ms {
		for _, r := range m.GetRemoveHeaders() {
			if r == name {
				return true
			}
		}
	}
	return false
}

// upstreamAnswer asks the fake provider for its answer to body on path under script: the
// exact bytes a provider sends, and their content type.
func upstreamAnswer(t testing.TB, path string, body []byte, script fakeprovider.Script) ([]byte, string) {
	t.Helper()
	p := fakeprovider.New()
	defer p.Close()
	p.Enqueue(script)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := p.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, resp.Header.Get("Content-Type")
}

// guardAnswer is what the guard's own proxy, enforcing the same policy, answers the
// client for the same request when its provider sends answer: the reference the server
// is held to.
type guardAnswer struct {
	status int
	body   []byte
	header http.Header
	// upstream is the request body the provider received.
	upstream []byte
}

func (h *harness) guard(path string, header [][2]string, body, answer []byte, contentType string) guardAnswer {
	t := h.t
	t.Helper()
	var (
		mu       sync.Mutex
		received []byte
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = b
		mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(answer)
	}))
	defer up.Close()
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := proxy.New(proxy.Config{OpenAIUpstream: u, AnthropicUpstream: u, GeminiUpstream: u, Log: slog.New(slog.DiscardHandler)})
	if err := px.Apply(compileSnap(t, h.snapText)); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(px)
	defer front.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, front.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range header {
		req.Header.Set(p[0], p[1])
	}
	req.Header.Set("X-Request-Id", "req-1")
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return guardAnswer{status: resp.StatusCode, body: b, header: resp.Header, upstream: received}
}

func compileSnap(t testing.TB, text string) *policy.Snapshot {
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
