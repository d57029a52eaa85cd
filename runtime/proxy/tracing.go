package proxy

import (
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// startCall starts the exchange's span (Config.Tracer, runtime/tracing) when the exchange
// has none: a stored-answer retrieval begins a session per answer, under one span. It
// carries names only: the operation, provider, requested model and upstream host.
func (x *exchange) startCall() {
	if x.call != nil {
		return
	}
	info := tracing.CallInfo{Operation: "chat", Provider: "openai", Model: x.req.Model}
	switch {
	case x.f == wire.FamilyEmbeddings:
		info.Operation = "embeddings"
	case x.f == wire.FamilyGeminiInput:
		info.Operation, info.Provider = "embeddings", "gcp.gemini"
		if _, method, _ := wire.GeminiMethod(x.r.URL.Path); method == wire.GeminiCountTokens {
			// The GenAI conventions name no operation for it: the guard's own name.
			info.Operation = "count_tokens"
		}
	case x.f.Gemini():
		info.Operation, info.Provider = "generate_content", "gcp.gemini"
	case x.f.Anthropic():
		info.Provider = "anthropic"
	}
	info.Server, info.Port = tracing.HostPort(x.up.base)
	x.call = x.p.cfg.Tracer.StartCall(x.r.Context(), x.r.Header, info)
}

// streamModel records the model a stream's events named (gen_ai.response.model), read
// from what the stream's decoder kept of them; nothing when the exchange has no span.
func (x *exchange) streamModel(st *wire.Stream) {
	if x.call != nil {
		x.call.ResponseModel(st.Model())
	}
}

// endCall ends the exchange's span with its outcome; nothing when it has none.
func (x *exchange) endCall() { x.call.End(x.result) }

// traceRefusal gives a call refused before it was judged (x.refusal: a body too large or
// unreadable, no policy yet, a keyless refusal, an unsupported parameter) a span of its
// own, ended at once with the outcome refused and the code the client was answered with,
// so that a trace shows why the call never reached the provider. A call that was judged
// has its span from begin, and a refusal is only ever made before it.
func (x *exchange) traceRefusal() {
	if x.refusal == "" || x.call != nil || x.p.cfg.Tracer == nil {
		return
	}
	if x.startCall(); x.call != nil {
		x.call.Refused(x.refusal)
		x.endCall()
	}
}
