package proxy

import (
	"net/http"
	"net/url"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// What the Envoy external processor (runtime/extproc) shares with the guard's HTTP side.
// It judges the same traffic with the same policy, so it takes the policy in force, the
// request's routing rules and the conversions between wire and engine types from here
// rather than keeping copies that could drift. Nothing here is used by the proxy itself.

// Policy is the policy in force as another front end of the guard uses it.
type Policy struct {
	// Engine judges with the guardrails selecting the pod, their classifiers and backends.
	Engine *engine.Engine
	// EnforcesAnswers is set when an Enforce guardrail judges answers (Stream, Output or
	// ToolCalls): answers the guard cannot judge are then refused.
	EnforcesAnswers bool
	// Version is the snapshot's version.
	Version string
}

// Policy returns the policy in force, read once so that a request keeps one policy
// whatever Apply does meanwhile; ok is false before the first Apply.
func (p *Proxy) Policy() (pol Policy, ok bool) {
	s := p.state.Load()
	if s == nil {
		return Policy{}, false
	}
	return Policy{Engine: s.engine, EnforcesAnswers: s.enforcesAnswers, Version: s.snap.Version}, true
}

// EngineMessages gives the engine a request's messages, as the proxy does.
func EngineMessages(msgs []wire.Message) []engine.Message { return toEngineMessages(msgs) }

// ApplyInput copies the engine's Input edits onto req; it reports whether anything changed.
func ApplyInput(req *wire.Request, msgs []engine.Message) bool { return applyInput(req, msgs) }

// EngineContents gives the engine a non-streamed response's contents.
func EngineContents(cs []wire.Content) []engine.Content { return toEngineContents(cs) }

// ApplyOutput copies the engine's Output edits onto cs; it reports whether anything changed.
func ApplyOutput(cs []wire.Content, res []engine.Content) bool { return applyOutput(cs, res) }

// KeptText returns, per choice, the answer text a blocked non-streamed response keeps
// before the reason.
func KeptText(contents []engine.Content) map[int]string { return keptText(contents) }

// UnforwardablePath returns why the guard does not forward a request to u, or "".
func UnforwardablePath(u *url.URL) string { return unforwardablePath(u) }

// VersionedPath returns the path the guard routes a request path as: under /v1 when it
// has no API version (see versioned).
func VersionedPath(path string) string {
	u := url.URL{Path: path}
	versioned(&u)
	return u.Path
}

// GeminiSSE reports whether a streamed Gemini call's query asks for server-sent events.
func GeminiSSE(rawQuery string) bool { return geminiSSE(rawQuery) }

// FamilyLabel is the family's guard_requests_total label for a request to path (a Gemini
// input-only call's is its method).
func FamilyLabel(f wire.Family, path string) string { return routeLabel(f, path) }

// FamilyOfUnguarded is the family whose error shape answers a request with these headers
// and path outside the guarded routes.
func FamilyOfUnguarded(h http.Header, path string) wire.Family {
	return familyOfUnguarded(&http.Request{Header: h, URL: &url.URL{Path: path}})
}

// Retrieval reports whether a request fetches stored answers the guard judges
// (GET /v1/responses/{id}, stored chat completions).
func Retrieval(method, path string) bool {
	_, ok := retrieval(method, path)
	return ok
}

// UpstreamUnreachable is the guard's answer when the provider's response cannot be had.
func UpstreamUnreachable(msg string) wire.APIError { return upstreamUnreachable(msg) }
