package extproc

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// stage is where an exchange is.
type stage uint8

const (
	// stageHeaders: the request's headers have not been seen (the zero value).
	_ stage = iota
	// stagePass: the request is not judged (a GET, a pass-through route); every later
	// message is answered unchanged.
	stagePass
	// stageBody: a guarded request whose body is being received.
	stageBody
	// stageForwarded: the judged request went to the provider; its answer is awaited.
	stageForwarded
	// stageWhole: a non-streamed answer is being received, to be judged whole.
	stageWhole
	// stageStream: a streamed answer is being judged event by event.
	stageStream
	// stageDone: the exchange has answered (a refusal, a verdict, an answer passed
	// through or judged to its end); every later body chunk is withheld.
	stageDone
)

// exchange is one HTTP request seen through its processing stream.
type exchange struct {
	s   *Server
	ctx context.Context
	// configured is set once the protocol configuration (the filter's body modes, sent
	// by Envoy in the stream's first message) was read.
	configured bool
	protocol   *extprocv3.ProtocolConfiguration

	stage  stage
	id     string
	hdr    headers
	f      wire.Family
	family string
	hadLen bool
	// reqCleared and answerCleared are set once a chunk of the request body or of a whole
	// answer was withheld: the last chunk then carries the whole body.
	reqCleared, answerCleared bool
	pol                       proxy.Policy
	body                      []byte
	req                       wire.Request
	session                   *engine.Session
	rec                       *telemetry.Request
	// result is the request's outcome (guard_requests_total), counted when it ends.
	result string
	// spent is the time the server spent judging the request (its share of the latency).
	spent time.Duration
	// answer is a non-streamed answer being received; st the streamed answer's state.
	answer []byte
	st     *streamer
	// gone is set when Envoy closed the stream before the exchange ended.
	gone bool
}

// outcome sets the request's outcome; the first one set stands.
func (x *exchange) outcome(o string) {
	if x.result == "" {
		x.result = o
	}
}

// close ends the exchange: its outcome and decisions are counted, the session's memory
// (the pseudonymization mapping included) dropped.
func (x *exchange) close() {
	if x.st != nil {
		x.s.cfg.Telemetry.HeldBack(-x.st.reported)
	}
	if x.family != "" {
		if x.result == "" {
			// Envoy ended the stream before the request had an outcome: the client went
			// away (or Envoy answered it itself).
			x.result = "client_gone"
		}
		x.s.cfg.Telemetry.Request(x.family, x.result)
	}
	if x.rec != nil {
		x.rec.Done()
	}
	if x.session != nil {
		x.session.End()
	}
}

// refuse answers the request with e (the guard's own error) and ends the exchange.
func (x *exchange) refuse(f wire.Family, e wire.APIError, outcome string) *extprocv3.ProcessingResponse {
	x.outcome(outcome)
	x.stage = stageDone
	var warned []string
	if x.session != nil {
		warned = x.session.Warnings()
	}
	return immediate(f, e, x.id, warned)
}

func invalid(msg string) wire.APIError {
	return wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_request", Message: msg}
}

// misconfigured is the answer when the filter's processing modes keep from the server
// what it must judge: a failure, fail closed, and logged for the operator of the gateway.
func (x *exchange) misconfigured(what string) *extprocv3.ProcessingResponse {
	x.s.cfg.Log.Error("Request refused: the ext_proc filter does not send what the guardrails judge; "+what,
		"requestId", x.id, "family", x.family)
	return x.refuse(x.f, wire.Failed(""), "failed")
}

// requestHeaders routes the request as the guard does: guarded routes are judged, GET
// routes and --pass-through routes go on unjudged, anything else is refused.
func (x *exchange) requestHeaders(h *extprocv3.HttpHeaders) *extprocv3.ProcessingResponse {
	x.hdr = readHeaders(h.GetHeaders())
	if x.id = x.hdr.h.Get("X-Request-Id"); x.id == "" {
		x.id = newRequestID()
	}
	hasBody := !h.GetEndOfStream()
	u, err := url.ParseRequestURI(x.hdr.path)
	if err != nil {
		return x.refuseUnguarded(invalid("the request path cannot be read; the guardrail sidecar does not forward it"))
	}
	if why := proxy.UnforwardablePath(u); why != "" {
		return x.refuseUnguarded(invalid(why + "; the guardrail sidecar does not forward it"))
	}
	path := proxy.VersionedPath(u.Path)
	f, guarded := wire.Route(x.hdr.method, path)
	if !guarded {
		return x.unguarded(path, hasBody)
	}
	x.f, x.family = f, proxy.FamilyLabel(f, path)
	pol, ok := x.s.cfg.Policy.Policy()
	if !ok {
		return x.refuse(f, wire.APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "policy_not_loaded",
			Message: "the guardrail sidecar has no policy yet and refuses traffic"}, "refused")
	}
	x.pol = pol
	if model, method, _ := wire.GeminiMethod(path); f.Gemini() {
		// The model and the stream are in the path.
		stream := method == wire.GeminiStreamGenerateContent
		if f == wire.FamilyGemini && stream && !proxy.GeminiSSE(u.RawQuery) {
			return x.refuse(f, wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_parameter",
				Message: "the guardrail sidecar serves streamGenerateContent as server-sent events only: add alt=sse to the query " +
					"(the official Gemini SDKs do)"}, "refused")
		}
		x.req.Model, x.req.Stream = model, stream
	}
	if pc := x.protocol; pc != nil {
		switch pc.GetRequestBodyMode() {
		case filterv3.ProcessingMode_BUFFERED, filterv3.ProcessingMode_STREAMED:
		default:
			// NONE sends no body; BUFFERED_PARTIAL sends a large body's first part only,
			// FULL_DUPLEX_STREAMED and GRPC expect other answers: none lets the whole body
			// be judged before any of it goes on.
			if hasBody {
				return x.misconfigured("request_body_mode must be BUFFERED")
			}
		}
		switch pc.GetResponseBodyMode() {
		case filterv3.ProcessingMode_STREAMED, filterv3.ProcessingMode_BUFFERED:
		default:
			if pol.EnforcesAnswers {
				return x.misconfigured("response_body_mode must be STREAMED")
			}
		}
	}
	x.hadLen = x.hdr.h.Get("Content-Length") != ""
	x.stage = stageBody
	if !hasBody {
		// No body: judged as the empty body it is (refused as unreadable).
		return x.judgeRequest(true)
	}
	// The answer is judged, so it must come uncompressed (the guard's proxy asks for it
	// so too).
	m := &mutation{remove: []string{"accept-encoding"}}
	if pc := x.protocol; pc != nil && pc.GetRequestBodyMode() != filterv3.ProcessingMode_BUFFERED && x.hadLen {
		// The headers go upstream before the body is judged: its length may change.
		m.remove = append(m.remove, "content-length")
		x.hadLen = false
	}
	return requestHeadersResponse(m, nil)
}

// refuseUnguarded refuses a request before any route, in the error shape its headers
// suggest.
func (x *exchange) refuseUnguarded(e wire.APIError) *extprocv3.ProcessingResponse {
	x.family = "unguarded"
	return x.refuse(proxy.FamilyOfUnguarded(x.hdr.h, x.hdr.path), e, "refused")
}

// unguarded handles a request outside the guarded routes as the guard does: GET and HEAD
// without a body, and --pass-through routes, go on unjudged (their answers too); stored
// answers, which the guard judges, are refused here (fail closed: this server does not
// judge them); anything else is refused.
func (x *exchange) unguarded(path string, hasBody bool) *extprocv3.ProcessingResponse {
	method := x.hdr.method
	f := proxy.FamilyOfUnguarded(x.hdr.h, path)
	get := method == http.MethodGet || method == http.MethodHead
	switch {
	case get && hasBody:
		return x.refuseUnguarded(invalid("a " + method + " request with a body is not forwarded by the guardrail sidecar"))
	case proxy.Retrieval(method, path):
		x.family = "unguarded"
		return x.refuse(f, wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_route",
			Message: "stored answers (" + method + " " + path + ") are not judged by the guardrail ext_proc server, so it does not let " +
				"them through"}, "refused")
	case get || x.s.passThrough[path]:
		x.family, x.stage = "passthrough", stagePass
		x.outcome("passthrough")
		// Nothing of this request is judged: its bodies need not come here.
		return requestHeadersResponse(nil, &filterv3.ProcessingMode{})
	}
	x.family = "unguarded"
	return x.refuse(f, wire.APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "route_not_guarded",
		Message: method + " " + path + " is not a route the guardrail sidecar guards; list it in --pass-through to forward it unguarded"},
		"refused")
}

// requestBody takes the request body: the whole of it in BUFFERED mode, chunk by chunk
// otherwise (each chunk withheld until the last, which carries the judged body).
func (x *exchange) requestBody(b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if x.stage != stageBody {
		if x.stage == stagePass {
			return requestBodyResponse(nil, body{})
		}
		return requestBodyResponse(nil, body{replace: true})
	}
	if int64(len(x.body)+len(b.GetBody())) > x.s.cfg.MaxBodyBytes {
		x.body = nil
		return x.refuse(x.f, wire.APIError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Code: "request_too_large", Message: "the request body is larger than the guardrail sidecar accepts"}, "refused")
	}
	x.body = append(x.body, b.GetBody()...)
	if !b.GetEndOfStream() {
		x.reqCleared = true
		return requestBodyResponse(nil, body{replace: true})
	}
	return x.judgeRequest(false)
}

// judgeRequest parses the whole request body and runs the Input phase: the request goes
// on (rewritten when the engine edited it) or is answered with the guard's error.
func (x *exchange) judgeRequest(noBody bool) *extprocv3.ProcessingResponse {
	start := time.Now()
	orig := x.body
	var err error
	if x.f == wire.FamilyResponses && len(x.body) > 0 {
		x.body, err = wire.ResolveGuardItems(x.body)
	}
	if err == nil {
		model, stream := x.req.Model, x.req.Stream
		x.req, err = wire.ParseRequest(x.f, x.body)
		if x.f.Gemini() {
			x.req.Model, x.req.Stream = model, stream
		}
	}
	if err != nil {
		return x.refuse(x.f, invalid("the guardrail sidecar could not read the request: "+err.Error()), "refused")
	}
	if x.req.Background && x.pol.EnforcesAnswers {
		return x.refuse(x.f, wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_parameter",
			Message: "background: true is refused by the guardrail sidecar: a guardrail judges this pod's answers, " +
				"and an answer made in the background is collected where the guard cannot judge it; send the request without background"},
			"refused")
	}
	x.begin()
	res, err := x.session.Input(x.ctx, proxy.EngineMessages(x.req.Messages))
	if err != nil {
		x.gone = true
		x.outcome("client_gone")
		x.stage = stageDone
		return x.refuse(x.f, wire.Failed(""), "client_gone")
	}
	if v := res.Stop; v != nil {
		if v.Kind == engine.Failed {
			return x.refuse(x.f, wire.Failed(v.Guardrail), "failed")
		}
		return x.refuse(x.f, wire.Blocked(v.Reason, v.Guardrail), "blocked")
	}
	changed := x.reqCleared || !sameBytes(orig, x.body)
	if proxy.ApplyInput(&x.req, res.Messages) {
		rewritten, err := wire.RewriteRequest(x.body, &x.req)
		if err != nil {
			// The edit cannot be expressed: sending the original would leak what was
			// redacted, so the request is refused as a failure.
			x.s.cfg.Log.Error("Rewriting a request failed", "requestId", x.id, "error", err.Error())
			return x.refuse(x.f, wire.Failed(""), "failed")
		}
		x.body, changed = rewritten, true
	}
	x.stage = stageForwarded
	x.spent = time.Since(start)
	if noBody || !changed {
		x.body = nil
		if noBody {
			return requestHeadersResponse(nil, nil)
		}
		return requestBodyResponse(nil, body{})
	}
	var m *mutation
	if x.hadLen {
		m = &mutation{}
		m.setHeader("content-length", contentLength(len(x.body)))
	}
	out := x.body
	x.body = nil
	return requestBodyResponse(m, body{replace: true, data: out})
}

// sameBytes reports whether b is a (the same memory as a, or equal to it).
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b)
}

// begin starts the engine's session of the request and the recording of its decisions.
func (x *exchange) begin() {
	x.rec = x.s.cfg.Telemetry.Begin()
	trace, span := telemetry.TraceIDs(x.hdr.h)
	x.session = x.pol.Engine.NewSession(engine.Options{
		IDs:    engine.IDs{Pod: x.s.cfg.Pod, RequestID: x.id, TraceID: trace, SpanID: span, Model: x.req.Model},
		Record: x.rec.Record,
	})
}

// responseHeaders decides how the provider's answer is judged: errors, embeddings and
// unjudged requests pass; an event stream is judged event by event; anything else whole.
func (x *exchange) responseHeaders(h *extprocv3.HttpHeaders) *extprocv3.ProcessingResponse {
	switch x.stage {
	case stageForwarded:
	case stageBody:
		// The request's body never came: the filter does not send it (request_body_mode
		// NONE), so the provider got a request nobody judged. Its answer is withheld.
		return x.misconfigured("the request body never reached the server; request_body_mode must be BUFFERED")
	case stagePass:
		return responseHeadersResponse(nil, nil)
	default:
		// Envoy ended or answered the request already; nothing more is sent downstream.
		return responseHeadersResponse(nil, nil)
	}
	rh := readHeaders(h.GetHeaders())
	m := &mutation{}
	if warned := x.session.Warnings(); len(warned) > 0 {
		m.setHeader(warningsHeader, strings.Join(warned, ", "))
	}
	if rh.status != "200" || x.f.InputOnly() || h.GetEndOfStream() {
		// Upstream errors, and answers with nothing to judge, pass through unchanged.
		if rh.status != "200" {
			x.outcome("upstream_error")
		} else {
			x.outcome("allowed")
		}
		x.stage = stagePass
		return responseHeadersResponse(m, bodyMode(filterv3.ProcessingMode_NONE))
	}
	if ce := rh.h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// Asked for without accept-encoding, and compressed anyway: not judged, not passed.
		return x.fail("the upstream response is compressed ("+ce+")", nil)
	}
	// The body the client receives is not the provider's: its length is not known yet.
	m.remove = append(m.remove, "content-length")
	if strings.HasPrefix(rh.h.Get("Content-Type"), "text/event-stream") {
		x.stage = stageStream
		x.st = newStreamer(x)
		return responseHeadersResponse(m, nil)
	}
	x.stage = stageWhole
	// A whole answer is judged whole: with allow_mode_override, Envoy buffers it and holds
	// its headers until it is judged, so that a failure can still replace it.
	return responseHeadersResponse(m, bodyMode(filterv3.ProcessingMode_BUFFERED))
}

// responseBody routes a chunk of the answer.
func (x *exchange) responseBody(b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	switch x.stage {
	case stageWhole:
		return x.wholeChunk(b)
	case stageStream:
		out := x.st.chunk(b.GetBody(), b.GetEndOfStream())
		if b.GetEndOfStream() {
			x.stage = stageDone
		}
		return responseBodyResponse(nil, body{replace: true, data: out})
	case stagePass:
		return responseBodyResponse(nil, body{})
	case stageForwarded:
		// An answer whose headers never came (response_header_mode SKIP): the server
		// cannot tell a stream from a whole answer, so nothing of it goes on.
		return x.misconfigured("the answer's headers never reached the server; response_header_mode must be SEND")
	case stageBody:
		return x.misconfigured("the request body never reached the server; request_body_mode must be BUFFERED")
	}
	// After a verdict: nothing more reaches the client.
	return responseBodyResponse(nil, body{replace: true})
}

// wholeChunk collects a non-streamed answer; at its end the Output and ToolCalls phases
// judge it, and it goes on unchanged, rewritten, replaced by the verdict, or refused as a
// failure (fail closed).
func (x *exchange) wholeChunk(b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if int64(len(x.answer)+len(b.GetBody())) > x.s.cfg.MaxResponseBytes {
		x.answer = nil
		return x.fail("the upstream response is larger than the guard judges", nil)
	}
	x.answer = append(x.answer, b.GetBody()...)
	if !b.GetEndOfStream() {
		x.answerCleared = true
		return responseBodyResponse(nil, body{replace: true})
	}
	start := time.Now()
	defer func() { x.s.cfg.Telemetry.Added(x.family, x.spent+time.Since(start)) }()
	x.stage = stageDone
	answer := x.answer
	x.answer = nil
	decoded, err := wire.DecodeResponse(x.f, &x.req, answer)
	if err != nil {
		return x.fail("the upstream response is malformed", err)
	}
	res, err := x.session.Output(x.ctx, proxy.EngineContents(decoded.Contents))
	if err != nil {
		x.gone = true
		return x.refuse(x.f, wire.Failed(""), "client_gone")
	}
	out, changed := answer, x.answerCleared
	switch v := res.Stop; {
	case v != nil && v.Kind == engine.Failed:
		return x.refuse(x.f, wire.Failed(v.Guardrail), "failed")
	case v != nil:
		if out, err = wire.BlockResponse(x.f, answer, v.Reason, proxy.KeptText(res.Contents)); err != nil {
			return x.fail("the upstream response cannot be replaced", err)
		}
		x.outcome("blocked")
		changed = true
	case proxy.ApplyOutput(decoded.Contents, res.Contents):
		if out, err = wire.RewriteResponse(x.f, answer, decoded.Contents, ""); err != nil {
			return x.fail("the upstream response cannot be rewritten", err)
		}
		x.outcome("allowed")
		changed = true
	default:
		x.outcome("allowed")
	}
	m := &mutation{}
	m.setHeader("content-length", contentLength(len(out)))
	if warned := x.session.Warnings(); len(warned) > 0 {
		m.setHeader(warningsHeader, strings.Join(warned, ", "))
	}
	if !changed {
		return responseBodyResponse(m, body{})
	}
	return responseBodyResponse(m, body{replace: true, data: out})
}

// fail answers an answer the server cannot judge: a recorded evaluation failure, fail
// closed (the client receives policy_evaluation_failed, never unjudged content). The
// log line names what failed, never content.
func (x *exchange) fail(what string, err error) *extprocv3.ProcessingResponse {
	attrs := []any{"requestId", x.id, "family", x.family}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	x.s.cfg.Log.Error("Upstream response not judged: "+what, attrs...)
	return x.refuse(x.f, wire.Failed(""), "failed")
}
