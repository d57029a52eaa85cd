package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/egress"
	mcpupstream "github.com/guardrail-dev/guardrail-operator/runtime/mcp/upstream"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// PathPrefix is where the guard serves its MCP upstreams: PathPrefix + NAME.
const PathPrefix = mcpupstream.PathPrefix

// Config configures a Handler.
type Config struct {
	// Upstreams are the MCP servers' endpoint URLs by name; /mcp/NAME fronts Upstreams[NAME].
	Upstreams map[string]*url.URL
	// Judges judges the traffic; required.
	Judges Judges
	// Transport reaches the upstreams; nil means an egress transport (no proxy, the
	// system's CA bundle: runtime/egress).
	Transport http.RoundTripper
	// MaxBodyBytes bounds a client's POST body (413 beyond); 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxMessageBytes bounds one message of the MCP server (a JSON answer or one event);
	// 0 means 16 MiB. A larger one is not forwarded: the request it answers gets an error.
	MaxMessageBytes int
	// ReadIdleTimeout bounds each read of a client's body; 0 means 30 seconds.
	ReadIdleTimeout time.Duration
	// WriteIdleTimeout bounds each write to a client; 0 means 2 minutes.
	WriteIdleTimeout time.Duration
	// Telemetry counts exchanges by server; nil counts nothing anyone reads.
	Telemetry *telemetry.Telemetry
	// Tracer, when not nil, makes a span of each POST the guard judges, with its guardrail
	// evaluations as children (runtime/tracing, StartMCP).
	Tracer *tracing.Tracer
	Log    *slog.Logger
}

// Handler fronts named MCP servers over the streamable HTTP transport and judges what
// passes (see the package doc).
type Handler struct {
	cfg    Config
	client *http.Client
}

// New returns a Handler.
func New(cfg Config) *Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 16 << 20
	}
	if cfg.ReadIdleTimeout <= 0 {
		cfg.ReadIdleTimeout = 30 * time.Second
	}
	if cfg.WriteIdleTimeout <= 0 {
		cfg.WriteIdleTimeout = 2 * time.Minute
	}
	if cfg.Transport == nil {
		t := egress.Transport(nil)
		t.MaxIdleConnsPerHost = 64
		// A tool call answered with JSON sends its headers when the tool is done.
		t.ResponseHeaderTimeout = 10 * time.Minute
		cfg.Transport = t
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = telemetry.New(nil)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Handler{cfg: cfg, client: &http.Client{
		Transport: cfg.Transport,
		// Never follow redirects: a redirect would carry the client's credentials elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// exchange is one request of a client on its way through the guard.
type exchange struct {
	h        *Handler
	server   string
	upstream *url.URL
	w        http.ResponseWriter
	r        *http.Request
	rc       *http.ResponseController
	// pending are the ids of the requests forwarded and not answered yet: when the
	// server's stream ends before answering them, the client gets an error for each.
	pending map[string]json.RawMessage
	// outcome is the exchange's outcome for the requests counter: allowed, blocked,
	// failed, or a transport outcome.
	outcome string
	// span is the POST's span (tracing.go), nil when not traced.
	span *tracing.Call
}

// ServeHTTP serves PathPrefix + NAME.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, PathPrefix)
	up, ok := h.cfg.Upstreams[name]
	if !ok {
		writeJSON(w, http.StatusNotFound, errorResponse(nil, codeInvalidRequest,
			fmt.Sprintf("no MCP server named %q is configured on the guardrail sidecar (--mcp-upstream)", name), dataInvalidRequest, ""))
		return
	}
	x := &exchange{h: h, server: name, upstream: up, w: w, r: r, rc: http.NewResponseController(w),
		pending: map[string]json.RawMessage{}, outcome: "allowed"}
	switch r.Method {
	case http.MethodPost:
		x.post()
	case http.MethodGet:
		x.get()
	case http.MethodDelete:
		x.remove()
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		x.refuse(http.StatusMethodNotAllowed, r.Method+" is not a method of the MCP streamable HTTP transport")
	}
}

func (x *exchange) count() { x.h.cfg.Telemetry.MCPRequest(x.server, x.outcome) }

// refuse answers a request the guard does not forward with a JSON-RPC error.
func (x *exchange) refuse(status int, msg string) {
	x.outcome = "refused"
	x.count()
	if hasBody(x.r) {
		x.w.Header().Set("Connection", "close") // the body is not read
	}
	x.writeJSON(status, errorResponse(nil, codeInvalidRequest, msg, dataInvalidRequest, ""))
}

// stopped notes a message the policy stopped, for the exchange's outcome.
func (x *exchange) stopped(s *Stop) {
	switch {
	case s.Failed:
		x.outcome = "failed"
	case x.outcome != "failed":
		x.outcome = "blocked"
	}
}

// hidden reports a tool removed from a list.
func (x *exchange) hidden(tool string, s *Stop) {
	attrs := []any{"server", x.server, "tool", tool}
	if s != nil {
		attrs = append(attrs, "guardrail", s.Guardrail)
	}
	x.h.cfg.Log.Info("MCP tool hidden by policy", attrs...)
	x.h.cfg.Telemetry.MCPToolHidden(x.server)
}

// post forwards a POST of JSON-RPC messages: tools/call requests are judged first and
// never forwarded when stopped; the answer, JSON or an event stream, is judged as it
// comes.
func (x *exchange) post() {
	defer x.count()
	x.r.Body = http.MaxBytesReader(x.w, x.r.Body, x.h.cfg.MaxBodyBytes)
	rd := &idleReader{r: x.r.Body, rc: x.rc, timeout: x.h.cfg.ReadIdleTimeout}
	var body []byte
	var err error
	if x.r.ContentLength > x.h.cfg.MaxBodyBytes {
		// Read to the limit and discarded, not kept: buffering it would cost the limit's
		// size for nothing. It is still read so that a client that is sending it gets the
		// 413, not a reset connection.
		if _, err = io.Copy(io.Discard, rd); err == nil {
			err = &http.MaxBytesError{Limit: x.h.cfg.MaxBodyBytes}
		}
	} else {
		body, err = io.ReadAll(rd)
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			x.outcome = "refused"
			x.writeJSON(http.StatusRequestEntityTooLarge, errorResponse(nil, codeInvalidRequest,
				"the request body is larger than the guardrail sidecar accepts", dataInvalidRequest, ""))
		case x.r.Context().Err() != nil:
			x.outcome = "client_gone"
		default:
			x.outcome = "refused"
			x.writeJSON(http.StatusBadRequest, errorResponse(nil, codeInvalidRequest,
				"the guardrail sidecar could not read the request body", dataInvalidRequest, ""))
		}
		return
	}
	_ = x.rc.SetReadDeadline(time.Time{})
	msgs, isBatch, err := batch(body)
	if err != nil {
		x.outcome = "refused"
		x.writeJSON(http.StatusBadRequest, errorResponse(nil, codeParseError,
			"the guardrail sidecar could not read the JSON-RPC message: "+err.Error(), dataInvalidRequest, ""))
		return
	}
	if v := x.r.Header.Get("Mcp-Protocol-Version"); isBatch && !batchesAllowed(v) {
		x.outcome = "refused"
		x.writeJSON(http.StatusBadRequest, errorResponse(nil, codeInvalidRequest,
			"JSON-RPC batches are not part of MCP protocol version "+v, dataInvalidRequest, ""))
		return
	}
	j, ok := x.h.cfg.Judges.Begin(x.r, x.server)
	if !ok {
		x.noPolicy()
		return
	}
	defer j.Done()
	if x.startSpan(msgs); x.span != nil {
		defer func() { x.span.End(x.outcome) }()
		if tj, ok := j.(tracedJudge); ok {
			tj.setTrace(x.span)
		}
	}

	start := time.Now()
	var forward, local []json.RawMessage
	for i, m := range msgs {
		raw := rawOf(body, msgs, i, isBatch)
		answer, stopped, err := x.call(j, m)
		switch {
		case err != nil:
			x.outcome = "client_gone"
			return
		case stopped && isRequest(m):
			local = append(local, answer)
			continue
		case stopped:
			continue // a call sent as a notification has no answer; it is dropped
		}
		if isRequest(m) {
			x.pending[idKey(m.get("id"))] = m.get("id")
		}
		forward = append(forward, raw)
	}
	x.judged(start)
	if len(forward) == 0 {
		if len(local) == 0 {
			x.w.WriteHeader(http.StatusAccepted) // only notifications, all dropped
			return
		}
		x.writeJSON(http.StatusOK, encodeBatch(local, isBatch))
		return
	}
	if len(forward) < len(msgs) {
		body = encodeBatch(forward, isBatch)
	}
	resp, ok := x.send(http.MethodPost, body)
	if !ok {
		return
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case resp.StatusCode == http.StatusAccepted && len(local) > 0:
		// Only notifications and responses were forwarded; the calls the guard stopped
		// still need their answers.
		x.writeJSON(http.StatusOK, encodeBatch(local, isBatch))
	case resp.StatusCode != http.StatusOK:
		x.passThrough(resp)
	case isEventStream(resp):
		x.stream(resp, j, local)
	default:
		x.answer(resp, j, local, isBatch)
	}
}

// rawOf returns the bytes of the i-th message as the client sent it.
func rawOf(body []byte, msgs []*object, i int, isBatch bool) json.RawMessage {
	if !isBatch {
		return bytes.TrimSpace(body)
	}
	return msgs[i].marshal()
}

// call judges a message before it is forwarded: only tools/call carries content toward a
// tool, whether sent as a request or, against the spec, as a notification (a server may
// run it all the same). It returns the guard's own answer when the call is stopped.
func (x *exchange) call(j Judge, m *object) (json.RawMessage, bool, error) {
	if method, _ := m.str("method"); method != "tools/call" {
		return nil, false, nil
	}
	id := m.get("id")
	params, ok := m.obj("params")
	if !ok {
		// Nothing the guard can read is not forwarded: the server would read it otherwise.
		x.outcome = "refused"
		return errorResponse(id, codeInvalidRequest, "the guardrail sidecar could not read the tools/call parameters", dataInvalidRequest, ""), true, nil
	}
	tool, ok := params.str("name")
	if !ok && params.has("name") {
		x.outcome = "refused"
		return errorResponse(id, codeInvalidRequest, "the tools/call name is not a string", dataInvalidRequest, ""), true, nil
	}
	args, why := callArguments(params)
	if why != "" {
		x.outcome = "refused"
		return errorResponse(id, codeInvalidRequest, "the guardrail sidecar could not read the tools/call arguments: "+why, dataInvalidRequest, ""), true, nil
	}
	jd, err := j.Call(x.r.Context(), tool, args)
	if err != nil {
		return nil, false, err
	}
	if s := jd.Stop; s != nil {
		x.stopped(s)
		if s.Failed {
			return errorResponse(id, codePolicyFailed, wire.FailureMessage, dataPolicyFailed, s.Guardrail), true, nil
		}
		return blockedToolResult(id, s.Reason), true, nil
	}
	return nil, false, nil
}

// callArguments returns the judged form of a call's arguments ("{}" when there are
// none), or why they cannot be read.
func callArguments(params *object) (string, string) {
	a := params.get("arguments")
	if len(a) == 0 {
		return "{}", ""
	}
	args, err := judgedJSON(a)
	if err != nil {
		return "", err.Error()
	}
	return args, ""
}

// get opens the server's stream of messages. Its headers reach the client as soon as the
// server sends them; each message is judged as it comes.
func (x *exchange) get() {
	defer x.count()
	if hasBody(x.r) {
		x.outcome = "refused"
		x.w.Header().Set("Connection", "close")
		x.writeJSON(http.StatusBadRequest, errorResponse(nil, codeInvalidRequest,
			"a GET request with a body is not forwarded by the guardrail sidecar", dataInvalidRequest, ""))
		return
	}
	// Each message of the stream gets a judge of its own (judgeEvent); this one only
	// finds whether a policy is in force.
	j, ok := x.h.cfg.Judges.Begin(x.r, x.server)
	if !ok {
		x.noPolicy()
		return
	}
	j.Done()
	resp, ok := x.send(http.MethodGet, nil)
	if !ok {
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || !isEventStream(resp) {
		x.passThrough(resp)
		return
	}
	x.stream(resp, nil, nil)
}

// remove ends a session (DELETE): nothing to judge.
func (x *exchange) remove() {
	defer x.count()
	if hasBody(x.r) {
		x.outcome = "refused"
		x.w.Header().Set("Connection", "close")
		x.writeJSON(http.StatusBadRequest, errorResponse(nil, codeInvalidRequest,
			"a DELETE request with a body is not forwarded by the guardrail sidecar", dataInvalidRequest, ""))
		return
	}
	resp, ok := x.send(http.MethodDelete, nil)
	if !ok {
		return
	}
	defer func() { _ = resp.Body.Close() }()
	x.passThrough(resp)
}

// noPolicy refuses traffic while no policy is in force: the guard fails closed.
func (x *exchange) noPolicy() {
	x.outcome = "refused"
	x.writeJSON(http.StatusServiceUnavailable, errorResponse(nil, codeUpstream,
		"the guardrail sidecar has no policy yet and refuses MCP traffic", "no_policy", ""))
}

// send calls the MCP server with the client's request, its end-to-end headers and body.
func (x *exchange) send(method string, body []byte) (*http.Response, bool) {
	u := *x.upstream
	if u.RawQuery == "" {
		u.RawQuery = x.r.URL.RawQuery
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(x.r.Context(), method, u.String(), rd)
	if err != nil {
		x.outcome = "failed"
		x.writeJSON(http.StatusInternalServerError, errorResponse(nil, codeUpstream, "the guardrail sidecar could not build the upstream request", dataUpstreamUnreachable, ""))
		return nil, false
	}
	copyHeaders(out.Header, x.r.Header)
	// The guard reads answers: let the transport negotiate (and undo) compression.
	out.Header.Del("Accept-Encoding")
	resp, err := x.h.client.Do(out)
	if err != nil {
		if x.r.Context().Err() != nil {
			x.outcome = "client_gone"
			return nil, false
		}
		x.h.cfg.Log.Warn("MCP server unreachable", "server", x.server, "error", err.Error())
		x.outcome = "upstream_error"
		x.answerPending("the guardrail sidecar could not reach the MCP server " + x.server)
		return nil, false
	}
	return resp, true
}

// answerPending answers the forwarded requests with an upstream error (or one error
// without id when there are none), as JSON with status 502.
func (x *exchange) answerPending(msg string) {
	var out []json.RawMessage
	for _, id := range x.pending {
		out = append(out, errorResponse(id, codeUpstream, msg, dataUpstreamUnreachable, ""))
	}
	clear(x.pending)
	switch len(out) {
	case 0:
		x.writeJSON(http.StatusBadGateway, errorResponse(nil, codeUpstream, msg, dataUpstreamUnreachable, ""))
	case 1:
		x.writeJSON(http.StatusBadGateway, out[0])
	default:
		x.writeJSON(http.StatusBadGateway, marshalArray(out))
	}
}

// passThrough copies an answer with nothing to judge (202, errors, a 405 to GET) as it is,
// up to the message bound.
func (x *exchange) passThrough(resp *http.Response) {
	if resp.StatusCode >= 400 {
		x.outcome = "upstream_error"
	}
	copyHeaders(x.w.Header(), resp.Header)
	x.w.WriteHeader(resp.StatusCode)
	x.arm()
	_, _ = io.Copy(x.w, io.LimitReader(resp.Body, int64(x.h.cfg.MaxMessageBytes)))
}

// answer judges a JSON answer and writes it, with the guard's own answers to the calls it
// stopped appended to a batch.
func (x *exchange) answer(resp *http.Response, j Judge, local []json.RawMessage, isBatch bool) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(x.h.cfg.MaxMessageBytes)+1))
	switch {
	case err != nil && x.r.Context().Err() != nil:
		x.outcome = "client_gone"
		return
	case err != nil:
		x.outcome = "upstream_error"
		x.answerPending("the connection to the MCP server " + x.server + " broke before its answer was complete")
		return
	case len(body) > x.h.cfg.MaxMessageBytes:
		x.outcome = "failed"
		x.answerPending("the answer of the MCP server " + x.server + " is larger than the guardrail sidecar judges")
		return
	}
	start := time.Now()
	out, changed, err := x.judgeData(j, body)
	if err != nil {
		x.unreadable(err)
		x.answerPending("the guardrail sidecar could not read the answer of the MCP server " + x.server)
		return
	}
	if len(local) > 0 {
		msgs, _ := array(out)
		if msgs == nil {
			msgs = []json.RawMessage{out}
		}
		out, changed = encodeBatch(append(msgs, local...), isBatch), true
	}
	x.judged(start)
	copyHeaders(x.w.Header(), resp.Header)
	if changed {
		body = out
	}
	x.writeJSON(http.StatusOK, body)
}

// judgeData judges one JSON answer or event's data: a message or a batch. It returns the
// data to forward and whether it differs from what was read.
func (x *exchange) judgeData(j Judge, data []byte) (json.RawMessage, bool, error) {
	msgs, isBatch, err := batch(data)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	out := make([]json.RawMessage, len(msgs))
	changed := false
	for i, m := range msgs {
		o, ch, err := x.fromServer(x.r.Context(), j, m)
		if err != nil {
			return nil, false, err
		}
		if ch {
			out[i], changed = o, true
		} else {
			out[i] = rawOf(data, msgs, i, isBatch)
		}
	}
	if !changed {
		return data, false, nil
	}
	return encodeBatch(out, isBatch), true, nil
}

// unreadable records an answer of the server the guard could not judge: a recorded
// failure, fail closed.
func (x *exchange) unreadable(err error) {
	if x.r.Context().Err() != nil {
		x.outcome = "client_gone"
		return
	}
	x.outcome = "failed"
	x.h.cfg.Log.Error("MCP message not judged", "server", x.server, "error", err.Error())
}

// judged observes the time the guard spent judging since start (guard_mcp_added_latency_seconds):
// once for a POST's calls, once for a JSON answer, once per event of a stream.
func (x *exchange) judged(start time.Time) { x.h.cfg.Telemetry.MCPAdded(x.server, time.Since(start)) }

// writeJSON writes a whole JSON answer.
func (x *exchange) writeJSON(status int, body []byte) {
	x.w.Header().Del("Content-Length")
	x.arm()
	writeJSON(x.w, status, body)
}

// arm bounds the next write to the client by the write idle timeout.
func (x *exchange) arm() { _ = x.rc.SetWriteDeadline(time.Now().Add(x.h.cfg.WriteIdleTimeout)) }

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body) //nolint:gosec // JSON-RPC, served as application/json to the MCP client that asked (no HTML context)
}

func isEventStream(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

// batchesAllowed reports whether protocol version v (the MCP-Protocol-Version header)
// allows JSON-RPC batches: 2025-03-26 does, 2025-06-18 removed them. Without the header a
// server assumes 2025-03-26 (the transport spec), and so does the guard.
func batchesAllowed(v string) bool { return v == "" || v < "2025-06-18" }

// hasBody reports whether a request carries a body.
func hasBody(r *http.Request) bool { return r.ContentLength != 0 || len(r.TransferEncoding) > 0 }

// hopHeaders are connection-scoped and never forwarded (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length"}

// copyHeaders copies end-to-end headers: Mcp-Session-Id, MCP-Protocol-Version,
// Last-Event-ID and credentials pass untouched.
func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, f := range strings.Split(src.Get("Connection"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			dst.Del(f)
		}
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
}

// idleReader bounds each read of a client's body by the read idle timeout: a client that
// stops sending is dropped, however long a body that keeps coming takes.
type idleReader struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
}

func (r *idleReader) Read(b []byte) (int, error) {
	_ = r.rc.SetReadDeadline(time.Now().Add(r.timeout))
	return r.r.Read(b)
}
