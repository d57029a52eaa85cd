package proxy

import (
	"net/http"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// serveRetrieval fetches a stored answer (GET /v1/responses/{id}) and judges it with the
// Output and ToolCalls phases as the answer to a non-streamed request, since it is the
// same object: the client receives it unchanged, rewritten, replaced by the verdict, or
// refused as a failure. There is no Input phase: nothing of the client's is sent. A
// retrieval asking for a stream is refused, as background requests are: the stream of a
// background response resumes at any event, and the guard judges a stream only whole.
// Stored chat completions are judged the same way, each one of a list as one answer
// (storedchat.go).
func (p *Proxy) serveRetrieval(w http.ResponseWriter, r *http.Request, f wire.Family, st *state) {
	x := &exchange{p: p, f: f, family: strings.TrimPrefix(f.Path(), "/v1/"), w: w, r: r, retrieved: true, st: st,
		req: wire.Request{Family: f, N: 1}}
	defer x.traceRefusal()
	if !x.loadPolicy() {
		return
	}
	if f == wire.FamilyChat {
		rec := p.cfg.Telemetry.Begin()
		defer rec.Done()
		defer x.endCall()
		x.storedChat(storedChatOf(r.URL.Path), rec.Record)
		return
	}
	if streamedRetrieval(r.URL.RawQuery) {
		x.refuse(wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_parameter",
			Message: "stream is refused by the guardrail sidecar on the retrieval of a stored response: " +
				"the guard judges a stored response only whole; retrieve it without stream"})
		return
	}
	rec := p.cfg.Telemetry.Begin()
	defer rec.Done()
	// The model is not known before the answer: the records of a retrieval carry none.
	x.begin(rec.Record)
	defer x.endCall()
	x.forward()
}

// loadPolicy checks the exchange has a policy to be judged by, and takes the upstream of
// the call (keyless.go); without a policy (the guard has not received any yet) it refuses
// the request, fail closed, and reports false, as it does a call the keyless rules keep in.
func (x *exchange) loadPolicy() bool {
	if x.st != nil {
		x.up, x.refusal = x.p.upstreamFor(x.w, x.r, x.st, x.f, x.family)
		if x.refusal != "" {
			x.result = "refused" // counted by upstreamFor
		}
		return x.refusal == ""
	}
	x.refuse(wire.APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "policy_not_loaded",
		Message: "the guardrail sidecar has no policy yet and refuses traffic"})
	return false
}
