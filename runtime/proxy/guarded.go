package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// exchange is one guarded request on its way through the guard.
type exchange struct {
	p       *Proxy
	f       wire.Family
	family  string
	w       http.ResponseWriter
	r       *http.Request
	st      *state
	session *engine.Session
	req     wire.Request
	body    []byte
	// spent is the time the guard itself spent on the request so far (not upstream time).
	spent time.Duration
	// cancelUpstream ends the upstream call (forward cancels it on return, unless the
	// stream handed the call to a background drain).
	cancelUpstream context.CancelFunc
	// detach stops the client's context from cancelling the upstream call; it reports
	// false when the client has gone already (see stream).
	detach func() bool
	// drainsLater is set when a background drain owns the upstream's body and call.
	drainsLater bool
	// retrieved is set on the retrieval of a stored answer (see serveRetrieval): a GET
	// without a body, whose answer is judged as a non-streamed one.
	retrieved bool
	// up is where the call goes (keyless.go).
	up upstream
	// call is the exchange's span (tracing.go), nil when not traced; result is the
	// outcome it ends with.
	call   *tracing.Call
	result string
	// refusal is the code of the error a call refused before it was judged was answered
	// with (refuse, loadPolicy); such a call gets a span of its own (traceRefusal).
	refusal string
}

// serveGuarded runs the Input phase, calls the upstream, and judges the response.
func (p *Proxy) serveGuarded(w http.ResponseWriter, r *http.Request, f wire.Family, st *state) {
	start := time.Now()
	x := &exchange{p: p, f: f, family: routeLabel(f, r.URL.Path), w: w, r: r, st: st}
	defer x.traceRefusal()
	if !x.loadPolicy() {
		return
	}
	model, geminiMethod, _ := wire.GeminiMethod(r.URL.Path)
	geminiStream := geminiMethod == wire.GeminiStreamGenerateContent
	if f == wire.FamilyGemini && geminiStream && !geminiSSE(r.URL.RawQuery) {
		w.Header().Set("Connection", "close")
		x.refuse(wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_parameter",
			Message: "the guardrail sidecar serves streamGenerateContent as server-sent events only: add alt=sse to the query " +
				"(the official Gemini SDKs do)"})
		return
	}
	// ServeHTTP bounded r.Body by MaxBodyBytes. A body that declares a larger length is
	// read to the limit and discarded, not kept: buffering it cost the limit's size (16 MiB
	// by default) for nothing, which the guard's GOGC=400 multiplied. It is still read so
	// that a client that is sending it gets the 413, not a reset connection.
	var body []byte
	var err error
	if r.ContentLength > p.cfg.MaxBodyBytes {
		if _, err = io.Copy(io.Discard, r.Body); err == nil {
			err = &http.MaxBytesError{Limit: p.cfg.MaxBodyBytes}
		}
	} else {
		body, err = readAll(r.Body, r.ContentLength, p.cfg.MaxBodyBytes)
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			x.refuse(wire.APIError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
				Message: "the request body is larger than the guardrail sidecar accepts"})
		case errors.Is(err, io.ErrUnexpectedEOF):
			// A body shorter than its Content-Length, or a chunked body without its last
			// chunk. The server cancels the request's context on the EOF, but the client
			// may only have stopped sending (a half-closed connection) and still read: it
			// gets an answer, never the server's empty 200. A client that is really gone
			// loses nothing by it.
			x.refuse(wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_request",
				Message: "the request body ended before its declared length or its last chunk"})
		case clientGone(r.Context(), err):
			x.outcome("client_gone")
		default:
			// A body the server cannot decode (a malformed chunked encoding): the client is
			// still there and gets an answer, not an empty 200.
			x.refuse(wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_request",
				Message: "the guardrail sidecar could not read the request body"})
		}
		return
	}
	if f == wire.FamilyResponses {
		// Items the guard made (a block's message) are unknown to the provider: a
		// reference to one is given the provider as the message it was.
		body, err = wire.ResolveGuardItems(body)
	}
	x.body = body
	if err == nil {
		x.req, err = wire.ParseRequest(f, body)
		if f.Gemini() {
			// The model and the stream are in the path.
			x.req.Model, x.req.Stream = model, geminiStream
		}
	}
	if err != nil {
		x.refuse(wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_request",
			Message: "the guardrail sidecar could not read the request: " + err.Error()})
		return
	}
	if x.req.Background && x.st.enforcesAnswers {
		// The answer would be collected later, by GET /v1/responses/{id}, in pieces the
		// guard cannot judge as one answer (a stream resumed anywhere, a response still in
		// progress); see the package doc.
		x.refuse(wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_parameter",
			Message: "background: true is refused by the guardrail sidecar: a guardrail judges this pod's answers, " +
				"and an answer made in the background is collected where the guard cannot judge it; send the request without background"})
		return
	}
	// The request's decisions are counted when it has ended, stream included.
	rec := p.cfg.Telemetry.Begin()
	defer rec.Done()
	x.begin(rec.Record)
	defer x.endCall()
	// The pseudonymization mapping lives as long as the request, not longer.
	defer x.session.End()

	if !x.input() {
		return
	}
	x.spent = time.Since(start)
	x.forward()
}

func (x *exchange) outcome(o string) {
	x.p.cfg.Telemetry.Request(x.family, o)
	x.result = o
}

// refuse answers a call the guard refuses before judging it (before begin) with e, and
// counts it refused.
func (x *exchange) refuse(e wire.APIError) {
	x.outcome("refused")
	x.refusal = e.Code
	writeError(x.w, x.f, e)
}

// routeLabel is the family's guard_requests_total label: its route without /v1/
// (chat/completions, responses, embeddings, messages), generateContent for Gemini calls
// (streamed or not), and for the Gemini API's input-only calls the method of path
// (countTokens, embedContent, batchEmbedContents; geminiInput when it names none).
func routeLabel(f wire.Family, path string) string {
	switch f {
	case wire.FamilyGemini:
		return "generateContent"
	case wire.FamilyGeminiInput:
		if _, method, ok := wire.GeminiMethod(path); ok {
			return method
		}
		return "geminiInput"
	}
	return strings.TrimPrefix(f.Path(), "/v1/")
}

// withoutQuery returns err with the query removed from the URL it names (a *url.Error
// of the client), so that a key given as a query parameter (Gemini's ?key=) never
// reaches the log.
func withoutQuery(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil {
		return &url.Error{Op: ue.Op, URL: "(the upstream URL)", Err: ue.Err}
	}
	u.RawQuery, u.User = "", nil
	return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
}

// begin starts the engine's session of the exchange.
func (x *exchange) begin(record func(engine.Record)) {
	trace, span := telemetry.TraceIDs(x.r.Header)
	opts := engine.Options{
		IDs:    engine.IDs{Pod: x.p.cfg.Pod, RequestID: x.r.Header.Get("X-Request-Id"), TraceID: trace, SpanID: span, Model: x.req.Model},
		Record: record,
	}
	if x.p.cfg.Tracer != nil {
		if x.startCall(); x.call != nil {
			opts.Trace = x.call
		}
	}
	x.session = x.st.engine.NewSession(opts)
}

// input runs the Input phase; it answers the client itself and returns false when the
// request is refused.
func (x *exchange) input() bool {
	res, err := x.session.Input(x.r.Context(), toEngineMessages(x.req.Messages))
	if err != nil {
		x.outcome("client_gone")
		return false
	}
	if v := res.Stop; v != nil {
		x.setWarnings()
		if v.Kind == engine.Failed {
			x.outcome("failed")
			writeError(x.w, x.f, wire.Failed(v.Guardrail))
		} else {
			x.outcome("blocked")
			writeError(x.w, x.f, wire.Blocked(v.Reason, v.Guardrail))
		}
		return false
	}
	if applyInput(&x.req, res.Messages) {
		body, err := wire.RewriteRequest(x.body, &x.req)
		if err != nil {
			// The edit cannot be expressed: sending the original would leak what was
			// redacted, so the request is refused as a failure.
			x.p.cfg.Log.Error("Rewriting a request failed", "requestId", x.r.Header.Get("X-Request-Id"), "error", err.Error())
			x.outcome("failed")
			writeError(x.w, x.f, wire.Failed(""))
			return false
		}
		x.body = body
	}
	return true
}

// forward calls the upstream and hands its answer to the stream or response path.
func (x *exchange) forward() {
	// The upstream call ends with the client's request, as if its context were the
	// request's, but a stream can detach it to drain the provider's body after the
	// client's answer is complete (see drainLater).
	ctx, cancel := context.WithCancel(context.WithoutCancel(x.r.Context()))
	x.cancelUpstream, x.detach = cancel, context.AfterFunc(x.r.Context(), cancel)
	defer func() {
		if !x.drainsLater {
			x.detach()
			cancel()
		}
	}()
	method, body := http.MethodPost, io.Reader(bytes.NewReader(x.body))
	if x.retrieved {
		method, body = http.MethodGet, nil
	}
	// The request is made from the upstream URL as it is, not from its string form
	// parsed again (the same URL: upstreamURL leaves no RawPath to keep).
	out, err := http.NewRequestWithContext(ctx, method, "", body)
	if err != nil {
		x.outcome("failed")
		writeError(x.w, x.f, wire.Failed(""))
		return
	}
	out.URL = upstreamURL(x.up.base, x.r.URL)
	out.URL.Host = strings.TrimSuffix(out.URL.Host, ":") // an empty port, as NewRequest drops it
	out.Host = out.URL.Host
	copyHeaders(out.Header, x.r.Header)
	// The guard reads responses: let the transport negotiate (and undo) compression.
	out.Header.Del("Accept-Encoding")
	out.ContentLength = int64(len(x.body))
	if pr := x.up.provider; pr != nil {
		pr.authorize(out.Header)
		x.p.cfg.Telemetry.ProviderRequest(pr.p.Name)
	}

	resp, err := x.p.roundTrip(out)
	if err != nil {
		if clientGone(x.r.Context(), err) {
			x.outcome("client_gone")
			return
		}
		x.p.cfg.Log.Warn("Upstream call failed", "requestId", x.r.Header.Get("X-Request-Id"), "error", withoutQuery(err).Error())
		x.outcome("upstream_error")
		writeError(x.w, x.f, upstreamUnreachable("the guardrail sidecar could not reach the model provider"))
		return
	}
	defer func() {
		if !x.drainsLater {
			_ = resp.Body.Close()
		}
	}()

	x.setWarnings()
	if pr := x.up.provider; pr != nil && resp.StatusCode == http.StatusUnauthorized {
		x.p.cfg.Log.Warn("A model provider refused its ModelProvider's credential", "provider", pr.p.Name,
			"requestId", x.r.Header.Get("X-Request-Id"))
		x.outcome("upstream_error")
		writeError(x.w, x.f, providerCredentialRefused(pr.p.Name))
		return
	}
	if resp.StatusCode != http.StatusOK || x.f.InputOnly() {
		// Upstream errors, and responses with nothing to judge, pass through unchanged.
		if resp.StatusCode != http.StatusOK {
			x.outcome("upstream_error")
		} else {
			x.outcome("allowed")
		}
		if x.f == wire.FamilyGeminiInput && resp.StatusCode == http.StatusOK {
			x.passThroughGeminiInput(resp)
			return
		}
		x.passThrough(resp)
		return
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if x.retrieved {
			// Refused before the call (streamedRetrieval); a provider that streams anyway
			// is not passed on: a stream resumed at any event cannot be judged as one.
			x.fail("a retrieval was answered with a stream", nil)
			return
		}
		x.stream(resp)
		return
	}
	x.response(resp)
}

func (x *exchange) setWarnings() {
	if warned := x.session.Warnings(); len(warned) > 0 {
		x.w.Header().Set("X-Guardrail-Warnings", strings.Join(warned, ", "))
	}
}

// upstreamUnreachable is the answer when the provider's response cannot be had: HTTP 502
// without x-should-retry, so that the SDKs retry it as they retry a provider they cannot
// reach (without the guard, a refused connection is retried too). It is not a policy
// verdict: nothing was judged.
func upstreamUnreachable(msg string) wire.APIError {
	return wire.APIError{Status: http.StatusBadGateway, Type: "server_error", Code: codeUpstreamUnreachable, Message: msg}
}

const codeUpstreamUnreachable = "upstream_unreachable"

// passThrough copies the upstream response as it is.
func (x *exchange) passThrough(resp *http.Response) {
	copyHeaders(x.w.Header(), resp.Header)
	x.w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(x.w, resp.Body)
}

// roundTrip sends out as p.client does, without the Client's work per call that a guarded
// call has no use for (a copy of the request's headers for redirects, the redirect loop):
// no redirect is followed (a 3xx is the answer, as the Client's CheckRedirect has it), an
// error is a *url.Error naming the request (withoutQuery takes its query off) and the
// body of a response is never nil.
func (p *Proxy) roundTrip(out *http.Request) (*http.Response, error) {
	resp, err := p.cfg.Transport.RoundTrip(out)
	if err == nil && resp == nil {
		err = errors.New("the transport returned neither a response nor an error")
	}
	if err != nil {
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		var tlsErr tls.RecordHeaderError
		if errors.As(err, &tlsErr) && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: out.Method[:1] + strings.ToLower(out.Method[1:]), URL: out.URL.String(), Err: err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	return resp, nil
}

// readAll reads a body into one buffer sized from its Content-Length (bounded by max),
// instead of growing it step by step. A body of unknown length (chunked) is read by
// io.ReadAll, in chunks copied once at the end: about twice its size allocated, where
// growing one buffer as append does (a quarter at a time) allocated five times its size.
// r must be bounded (MaxBytesReader, LimitReader).
func readAll(r io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength <= 0 {
		return io.ReadAll(r)
	}
	buf := make([]byte, 0, min(contentLength+1, limit+1))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow as io.ReadAll does
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// hopHeaders are connection-scoped and never forwarded (RFC 9110 §7.6.1); they are in
// canonical form.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length"}

// copyHeaders copies end-to-end headers; credentials (Authorization, x-api-key) pass
// untouched, unless a keyless provider's replace them afterwards (providerRoute.authorize).
// The values of all the headers are copied into one slice, as http.Header.Clone does,
// rather than one slice per header.
func copyHeaders(dst, src http.Header) {
	n := 0
	for _, vs := range src {
		n += len(vs)
	}
	all := make([]string, n)
	for k, vs := range src {
		if len(vs) == 0 {
			dst[k] = nil
			continue
		}
		m := copy(all, vs)
		dst[k], all = all[:m:m], all[m:]
	}
	if c := src.Get("Connection"); c != "" {
		for f := range strings.SplitSeq(c, ",") {
			if f = strings.TrimSpace(f); f != "" {
				dst.Del(f)
			}
		}
	}
	for _, h := range hopHeaders {
		delete(dst, h)
	}
}
