package proxy

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// What the guard forwards is decided on the request's path as it arrives, so the path
// the provider acts on must be that path. These pure functions refuse what a provider, or
// a proxy in front of it, could read as another path, and find the routes that return
// stored answers.

// unforwardablePath returns why the guard does not forward a request to u, or "" when it
// may. Refused: dot segments ("." and "..", also when percent-encoded: u.Path is decoded),
// empty segments (a//b), backslashes, control characters, and percent signs left after
// decoding (double encoding), all of which a provider or an intermediary may resolve to
// another path than the one the guard routed (GET /v1/../../internal/admin leaves /v1;
// /v1/x/../responses/id is a retrieval the guard would not recognise); and encoded slashes
// (%2F), which the upstream URL turns into real ones. Refusing is safer than normalising:
// the guard cannot know how each provider normalises, and no SDK sends such paths.
func unforwardablePath(u *url.URL) string {
	p := u.Path
	if strings.ContainsAny(p, `\%`) || hasControl(p) {
		return "the request path has a backslash, a control character or a doubly encoded character"
	}
	if raw := u.EscapedPath(); strings.Contains(raw, "%2F") || strings.Contains(raw, "%2f") {
		return "the request path has an encoded slash"
	}
	rest := strings.TrimPrefix(p, "/")
	for rest != "" {
		seg, after, more := strings.Cut(rest, "/")
		switch {
		case seg == "." || seg == "..":
			return "the request path has dot segments"
		case seg == "" && more:
			return "the request path has an empty segment"
		}
		rest = after
	}
	return ""
}

// versioned reads a path without the API version as the same path under /v1. Clients
// disagree on whether a base URL ends in /v1: the official SDKs append /v1/messages to
// ANTHROPIC_BASE_URL, the AI SDK's Anthropic provider and others append /messages to a
// base that is meant to hold /v1, and OpenAI-compatible clients do either. The guard
// serves both, so that one base URL (the one the injector sets) suits every client, and
// routes, judges and forwards the versioned path: the provider sees /v1/messages either
// way. Every path of the OpenAI and Anthropic APIs is under /v1.
//
// The Gemini API's paths carry their own version (/v1beta, /v1alpha), which @google/genai
// always writes: they are left as they are.
func versioned(u *url.URL) {
	if _, ok := cutPrefixFold(u.Path+"/", "/v1/"); ok {
		return // in any case, as retrieval reads it
	}
	if geminiVersioned(u.Path) {
		return
	}
	u.Path = "/v1" + u.Path
	u.RawPath = ""
}

// geminiVersioned reports whether a path is under a version only the Gemini API has
// (/v1beta, /v1alpha).
func geminiVersioned(path string) bool {
	for _, v := range []string{"/v1beta", "/v1alpha"} {
		if rest, ok := strings.CutPrefix(path, v); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// geminiSSE reports whether a streamed Gemini call asks for its stream as server-sent
// events: exactly one alt parameter, sse. Without it the API streams one JSON array,
// which the guard does not judge piece by piece; the official SDKs always ask for SSE.
func geminiSSE(rawQuery string) bool {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return false
	}
	n := 0
	for k, vs := range q {
		if strings.EqualFold(k, "alt") || strings.EqualFold(k, "$alt") {
			n += len(vs)
		}
	}
	return n == 1 && q.Get("alt") == "sse"
}

func hasControl(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// hasBody reports whether a request carries a body: a Content-Length other than 0, or a
// transfer coding (chunked).
func hasBody(r *http.Request) bool { return r.ContentLength != 0 || len(r.TransferEncoding) > 0 }

// retrieval reports whether a request fetches stored answers the guard judges, and of
// which family: GET /v1/responses/{id}, which returns a Responses answer (stored by
// default, or made with background: true) as the provider made it, and the stored chat
// completions (storedChatOf). Paths are matched without regard to case, as some servers
// read them, and may end in one slash. Other sub-routes
// (/v1/responses/{id}/input_items, the prompt as the guard forwarded it) are not stored
// answers.
func retrieval(method, path string) (wire.Family, bool) {
	if method != http.MethodGet {
		return 0, false
	}
	if storedChatOf(path) != 0 {
		return wire.FamilyChat, true
	}
	rest, ok := cutPrefixFold(path, "/v1/responses/")
	if !ok {
		return 0, false
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || strings.Contains(rest, "/") {
		return 0, false
	}
	return wire.FamilyResponses, true
}

// storedChat is which stored chat completions a GET returns (chat completions made with
// store: true, by this app or any other of the project, through the guard or not).
type storedChat uint8

const (
	// storedCompletion: GET /v1/chat/completions/{id}, one chat completion object.
	storedCompletion storedChat = iota + 1
	// storedCompletions: GET /v1/chat/completions, a list of them ({"object":"list",
	// "data":[…]}).
	storedCompletions
	// storedMessages: GET /v1/chat/completions/{id}/messages, a list of the messages of
	// one (ChatCompletionStoreMessage: content, content_parts, tool_calls, …).
	storedMessages
)

// storedChatOf returns which stored chat completions path names, 0 for none.
func storedChatOf(path string) storedChat {
	rest, ok := cutPrefixFold(path, "/v1/chat/completions")
	if !ok || rest != "" && rest[0] != '/' {
		return 0
	}
	rest = strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/")
	id, sub, nested := strings.Cut(rest, "/")
	switch {
	case rest == "":
		return storedCompletions
	case !nested:
		return storedCompletion
	case id != "" && strings.EqualFold(sub, "messages"):
		return storedMessages
	}
	return 0
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// streamedRetrieval reports whether a retrieval asks for its answer as a stream
// (?stream=true): any parameter named stream, in any case, whose value is not false. A
// query that does not parse counts as one, since the provider may read it otherwise.
func streamedRetrieval(rawQuery string) bool {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return true
	}
	for k, vs := range q {
		if !strings.EqualFold(k, "stream") {
			continue
		}
		for _, v := range vs {
			if b, err := strconv.ParseBool(v); err != nil || b {
				return true
			}
		}
	}
	return false
}
