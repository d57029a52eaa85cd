package fakeprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is a request the provider received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Response is what the provider sent for one request: the exact bytes, and for a stream
// each event's bytes.
type Response struct {
	Path   string
	Status int
	Header http.Header
	Stream bool
	// Body is every byte written.
	Body []byte
	// Events are the bytes of each event of a stream, in order.
	Events [][]byte
	// Disconnected is set when the client went away before the stream ended.
	Disconnected bool
}

// Disconnect reports a client that went away in the middle of a stream.
type Disconnect struct {
	Path string
	// EventsSent is how many events had been written when it was noticed.
	EventsSent int
}

// Provider is a running fake provider. Its methods are safe for concurrent use.
type Provider struct {
	// URL is the base URL of the server (no trailing slash, no /v1).
	URL string

	srv         *httptest.Server
	mu          sync.Mutex
	queue       []Script
	fallback    Script
	handle      func(*Request) Script
	requests    []Request
	responses   []*Response
	seq         int
	disconnects chan Disconnect
	maxBody     int64
	// forget: a long-running server (NewHandler) keeps no requests or responses.
	forget bool
	// keys, when set, returns the API keys accepted (keys.go); seen counts keys received.
	keys func() []string
	seen map[string]int
}

// Option configures a Provider.
type Option func(*Provider)

// WithHandler makes the provider ask fn for the script of each request that has no
// queued script.
func WithHandler(fn func(*Request) Script) Option { return func(p *Provider) { p.handle = fn } }

// WithDefault sets the script of requests that have no queued script and no handler.
func WithDefault(s Script) Option { return func(p *Provider) { p.fallback = s } }

// New starts a provider on a loopback port. Close it when done.
func New(opts ...Option) *Provider {
	p := &Provider{disconnects: make(chan Disconnect, 64), maxBody: 64 << 20}
	for _, o := range opts {
		o(p)
	}
	p.srv = httptest.NewServer(p)
	p.URL = p.srv.URL
	return p
}

// NewHandler returns a provider that is only an http.Handler, for a long-running server of
// its own (the demo provider image): it keeps no record of requests or responses.
func NewHandler(opts ...Option) *Provider {
	p := &Provider{disconnects: make(chan Disconnect, 64), maxBody: 64 << 20, forget: true}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Close stops the server (and the streams still running).
func (p *Provider) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// Client returns an HTTP client for the server.
func (p *Provider) Client() *http.Client { return p.srv.Client() }

// Enqueue queues scripts: the next requests get them in order.
func (p *Provider) Enqueue(scripts ...Script) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, scripts...)
}

// Requests returns the requests received so far.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// LastRequest returns the latest request; ok is false when there was none.
func (p *Provider) LastRequest() (Request, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		return Request{}, false
	}
	return p.requests[len(p.requests)-1], true
}

// Responses returns copies of the responses sent so far (streams still running
// included, as far as they got).
func (p *Provider) Responses() []Response {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Response, len(p.responses))
	for i, r := range p.responses {
		out[i] = *r
		out[i].Body = append([]byte(nil), r.Body...)
		out[i].Events = append([][]byte(nil), r.Events...)
	}
	return out
}

// Disconnects delivers a Disconnect for each client that went away mid-stream (buffered;
// reports beyond the buffer are dropped, Responses still records them).
func (p *Provider) Disconnects() <-chan Disconnect { return p.disconnects }

// WaitDisconnect waits for the next client that went away mid-stream.
func (p *Provider) WaitDisconnect(ctx context.Context) (Disconnect, error) {
	select {
	case d := <-p.disconnects:
		return d, nil
	case <-ctx.Done():
		return Disconnect{}, ctx.Err()
	}
}

// next returns the script of a request.
func (p *Provider) next(r *Request) Script {
	p.mu.Lock()
	if len(p.queue) > 0 {
		s := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		return s
	}
	handle, fallback := p.handle, p.fallback
	p.mu.Unlock()
	if handle != nil {
		return handle(r)
	}
	return fallback
}

// ServeHTTP records the request and answers it from its script.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, p.maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	p.mu.Lock()
	p.seq++
	seq := p.seq
	resp := &Response{Path: r.URL.Path}
	if !p.forget {
		p.requests = append(p.requests, req)
		p.responses = append(p.responses, resp)
	}
	p.mu.Unlock()

	fam, known := families[r.Method+" "+r.URL.Path]
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		fam, known = familyModels, true
	}
	geminiModel, geminiStreams, gemini := geminiRoute(r.Method, r.URL.Path)
	if gemini {
		fam, known = familyGemini, true
	}
	geminiInput, geminiInputs := geminiInputRoute(r.Method, r.URL.Path)
	if geminiInputs {
		fam, known = familyGeminiInput, true
	}
	rw := &recorder{p: p, w: w, resp: resp, ctx: r.Context()}
	if !p.checkKey(r.Header, r.URL.Query()["key"]) {
		e := &Error{Type: "authentication_error", Message: "invalid x-api-key"}
		if fam != familyMessages {
			e = &Error{Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided."}
		}
		body := openAIError(e)
		switch fam {
		case familyMessages:
			body = anthropicError(e, seq)
		case familyGemini, familyGeminiInput:
			body = geminiError(http.StatusUnauthorized, &Error{Message: "API key not valid. Please pass a valid API key."})
		}
		rw.json(http.StatusUnauthorized, body)
		return
	}
	if !known {
		rw.json(http.StatusNotFound, openAIError(&Error{Type: "invalid_request_error", Message: "Unknown route " + r.URL.Path}))
		return
	}
	var params requestParams
	_ = json.Unmarshal(body, &params)
	if gemini {
		params = requestParams{Model: geminiModel, Stream: geminiStreams}
		params.geminiArray = geminiStreams && r.URL.Query().Get("alt") != "sse"
	}
	if geminiInputs {
		params = requestParams{geminiInput: geminiInput, geminiBody: body}
	}
	if fam == familyResponses {
		if id := unknownItem(params.Input); id != "" {
			// As OpenAI answers a reference to an item it never made or did not store.
			rw.json(http.StatusNotFound, openAIError(&Error{Type: "invalid_request_error",
				Message: fmt.Sprintf("Item with id '%s' not found.", id)}))
			return
		}
	}
	s := p.next(&req)
	if s.Model != "" {
		params.Model = s.Model
	}
	sleep(r.Context(), s.HeaderDelay)
	rw.setHeaders(fam, seq)
	g := &gen{script: &s, params: &params, seq: seq, w: rw, fam: fam}
	g.serve()
}

// Families of routes.
const (
	familyChat = iota + 1
	familyResponses
	familyEmbeddings
	familyMessages
	familyModels
	familyGemini
	// familyGeminiInput: the Gemini API's countTokens, embedContent and
	// batchEmbedContents.
	familyGeminiInput
)

var families = map[string]int{
	"POST /v1/chat/completions": familyChat,
	"POST /v1/responses":        familyResponses,
	"POST /v1/embeddings":       familyEmbeddings,
	"POST /v1/messages":         familyMessages,
}

// requestParams is what the provider reads of a request.
type requestParams struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	N             int    `json:"n"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
		// IncludeObfuscation: OpenAI pads the chunks of a stream unless it is false.
		IncludeObfuscation *bool `json:"include_obfuscation"`
	} `json:"stream_options"`
	Input json.RawMessage `json:"input"`
	// geminiArray: a Gemini stream asked for without alt=sse (one JSON array).
	geminiArray bool
	// geminiInput is the method of a Gemini input-only call (countTokens, embedContent,
	// batchEmbedContents), and geminiBody its request.
	geminiInput string
	geminiBody  []byte
}

// recorder writes a response and records its bytes.
type recorder struct {
	p    *Provider
	w    http.ResponseWriter
	resp *Response
	ctx  context.Context
	sent int
}

func (rw *recorder) setHeaders(fam, seq int) {
	h := rw.w.Header()
	if fam == familyMessages {
		h.Set("request-id", "req_fake_"+strconv.Itoa(seq))
	} else {
		h.Set("x-request-id", "req_fake_"+strconv.Itoa(seq))
		h.Set("openai-processing-ms", "1")
	}
}

// json writes a whole JSON response.
func (rw *recorder) json(status int, body []byte) {
	rw.w.Header().Set("Content-Type", "application/json")
	rw.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.write(status, body, false)
}

// start writes the headers of a stream.
func (rw *recorder) start(status int) {
	h := rw.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	rw.p.mu.Lock()
	rw.resp.Status, rw.resp.Header, rw.resp.Stream = status, h.Clone(), true
	rw.p.mu.Unlock()
	rw.w.WriteHeader(status)
	if f, ok := rw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// event writes one stream event after delay; ok is false when the client went away.
func (rw *recorder) event(delay time.Duration, b []byte) bool {
	if !sleep(rw.ctx, delay) || rw.ctx.Err() != nil {
		rw.disconnected()
		return false
	}
	if _, err := rw.w.Write(b); err != nil {
		rw.disconnected()
		return false
	}
	if f, ok := rw.w.(http.Flusher); ok {
		f.Flush()
	}
	rw.p.mu.Lock()
	rw.resp.Body = append(rw.resp.Body, b...)
	rw.resp.Events = append(rw.resp.Events, append([]byte(nil), b...))
	rw.p.mu.Unlock()
	rw.sent++
	return true
}

func (rw *recorder) write(status int, body []byte, stream bool) {
	rw.p.mu.Lock()
	rw.resp.Status, rw.resp.Header, rw.resp.Stream = status, rw.w.Header().Clone(), stream
	rw.resp.Body = append(rw.resp.Body, body...)
	rw.p.mu.Unlock()
	rw.w.WriteHeader(status)
	_, _ = rw.w.Write(body)
}

func (rw *recorder) disconnected() {
	rw.p.mu.Lock()
	rw.resp.Disconnected = true
	rw.p.mu.Unlock()
	select {
	case rw.p.disconnects <- Disconnect{Path: rw.resp.Path, EventsSent: rw.sent}:
	default:
	}
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// gen generates the response of one request.
type gen struct {
	script *Script
	params *requestParams
	seq    int
	w      *recorder
	fam    int
	events int
}

// serve answers from the script: an error, raw bytes, or the family's response.
func (g *gen) serve() {
	s := g.script
	switch {
	case s.Error != nil:
		status := s.Error.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		switch g.fam {
		case familyMessages:
			g.w.json(status, anthropicError(s.Error, g.seq))
		case familyGemini, familyGeminiInput:
			g.w.json(status, geminiError(status, s.Error))
		default:
			g.w.json(status, openAIError(s.Error))
		}
	case s.Raw != nil:
		g.raw()
	case g.fam == familyModels:
		g.w.json(http.StatusOK, g.models())
	case g.fam == familyEmbeddings:
		g.w.json(g.status(), g.embeddings())
	case g.fam == familyGeminiInput:
		g.w.json(g.status(), g.geminiInputAnswer())
	case g.params.geminiArray:
		g.w.json(g.status(), g.geminiArray())
	case !g.params.Stream:
		g.w.json(g.status(), g.whole())
	default:
		g.w.start(g.status())
		g.stream()
	}
}

func (g *gen) status() int {
	if g.script.Status != 0 {
		return g.script.Status
	}
	return http.StatusOK
}

// raw sends the script's raw bytes.
func (g *gen) raw() {
	s := g.script
	if !g.params.Stream {
		g.w.json(g.status(), s.Raw)
		return
	}
	g.w.start(g.status())
	n := max(s.RawChunks, 1)
	size := (len(s.Raw) + n - 1) / n
	for b := s.Raw; len(b) > 0; {
		k := min(size, len(b))
		if !g.w.event(s.Delay, b[:k]) {
			return
		}
		b = b[k:]
	}
}

// send writes one stream event, honouring the script's error and cut points; ok is false
// when the stream must end.
func (g *gen) send(delay time.Duration, b []byte) bool {
	s := g.script
	if s.StreamError != nil && g.events == s.ErrorAfter {
		g.w.event(s.Delay, g.errorEvent(s.StreamError))
		return false
	}
	if s.CutAfter > 0 && g.events >= s.CutAfter {
		return false
	}
	g.events++
	return g.w.event(delay, b)
}

// delayOf returns the delay before a delta.
func (g *gen) delayOf(d *Delta) time.Duration {
	if d != nil && d.Delay > 0 {
		return d.Delay
	}
	return g.script.Delay
}

func (g *gen) model() string {
	if g.params.Model == "" {
		return "fake-model"
	}
	return g.params.Model
}

func (g *gen) models() []byte {
	return mustJSON(map[string]any{"object": "list", "data": []map[string]any{
		{"id": g.model(), "object": "model", "created": created, "owned_by": "fakeprovider"},
	}})
}

// created is the fixed creation time of every response, for reproducible bytes.
const created = 1700000000

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakeprovider: %v", err))
	}
	return b
}

// sseEvent formats one event.
func sseEvent(typ string, data []byte) []byte {
	var b []byte
	if typ != "" {
		b = append(b, "event: "+typ+"\n"...)
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

var errUnknownFamily = errors.New("fakeprovider: unknown family")

// unknownItem returns the id of the first input item of a Responses request that refers
// to an item this provider did not make (an item_reference, or an item repeated inline
// with its id): OpenAI looks such ids up and answers 404. Ids it made have "_fake_".
func unknownItem(input json.RawMessage) string {
	var items []struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(input, &items) != nil {
		return ""
	}
	for _, it := range items {
		if it.ID != "" && !strings.Contains(it.ID, "_fake_") {
			return it.ID
		}
	}
	return ""
}
