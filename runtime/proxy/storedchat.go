package proxy

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// Stored chat completions. A chat completion made with store: true can be fetched again,
// by this app or by any other of the provider's project, and whether or not it went
// through a guard:
//
//   - GET /v1/chat/completions/{id} returns the chat completion object, as the answer to
//     a non-streamed POST is, and is judged as that answer: Output and ToolCalls phases;
//     allowed unchanged, redacted (the rewritten body), replaced by the verdict (each
//     choice's message the reason, finish_reason content_filter, as a blocked answer),
//     or refused as a failure (policy_evaluation_failed).
//   - GET /v1/chat/completions returns a list of them ({"object":"list","data":[…]}):
//     each is judged as one answer, on its own, and a blocked one is replaced as above in
//     the list; the rest of the list is kept.
//   - GET /v1/chat/completions/{id}/messages returns a list of a stored completion's
//     messages: each message's content, text content parts and tool calls are judged as
//     an answer (the Output and ToolCalls phases: what the client receives from the
//     provider), and a blocked message keeps its id and role with the reason as its
//     content.
//
// A failure judging any of them refuses the whole answer, fail closed. Errors pass
// through; an event stream, which none of these routes sends, is a recorded failure.
// Report-mode guardrails record and change nothing, as ever. The token usage a stored
// completion repeats was spent when it was made: it is not counted again.

// errStoredMalformed is a stored answer the guard cannot read or rewrite.
type errStoredMalformed struct {
	what string
	err  error
}

func (e *errStoredMalformed) Error() string { return e.what + ": " + e.err.Error() }

// errClientGone is a judgement cut short by the client going away.
var errClientGone = errors.New("the client went away")

// judgedAnswer is a stored answer as the client receives it.
type judgedAnswer struct {
	body []byte
	// changed: body is not the provider's; blocked: a verdict replaced the answer.
	changed, blocked bool
	// failed is an evaluation failure under failurePolicy Closed.
	failed *engine.Verdict
}

// storedChat fetches stored chat completions (kind) and judges them (see above); record
// receives the decision records.
func (x *exchange) storedChat(kind storedChat, record func(engine.Record)) {
	resp := x.fetchStored()
	if resp == nil {
		return
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := readAll(io.LimitReader(resp.Body, x.p.cfg.MaxResponseBytes+1), resp.ContentLength, x.p.cfg.MaxResponseBytes)
	if err != nil {
		if clientGone(x.r.Context(), err) {
			x.outcome("client_gone")
			return
		}
		x.p.cfg.Log.Warn("Upstream response cut short", "requestId", x.r.Header.Get("X-Request-Id"), "error", err.Error())
		x.outcome("upstream_error")
		writeError(x.w, x.f, upstreamUnreachable("the connection to the model provider broke before its response was complete"))
		return
	}
	start := time.Now()
	if int64(len(body)) > x.p.cfg.MaxResponseBytes {
		x.fail("the upstream response is larger than the guard judges", nil)
		return
	}
	var warned []string
	judge := func(raw []byte, one func([]byte) (judgedAnswer, error)) (judgedAnswer, error) {
		// Each stored answer is judged on its own, as the answer to its own request: a
		// verdict on one does not stop the next.
		x.begin(record)
		defer x.session.End()
		j, err := one(raw)
		warned = append(warned, x.session.Warnings()...)
		return j, err
	}
	var out judgedAnswer
	switch kind {
	case storedCompletion:
		out, err = judge(body, x.judgeCompletion)
	case storedCompletions:
		out, err = judgeList(body, func(raw []byte) (judgedAnswer, error) { return judge(raw, x.judgeCompletion) })
	default:
		out, err = judgeList(body, func(raw []byte) (judgedAnswer, error) { return judge(raw, x.judgeStoredMessage) })
	}
	var malformed *errStoredMalformed
	switch {
	case errors.Is(err, errClientGone):
		x.outcome("client_gone")
		return
	case errors.As(err, &malformed):
		x.fail(malformed.what, malformed.err)
		return
	case err != nil:
		x.fail("the stored chat completion cannot be judged", err)
		return
	case out.failed != nil:
		x.outcome("failed")
		writeError(x.w, x.f, wire.Failed(out.failed.Guardrail))
		return
	case out.blocked:
		x.outcome("blocked")
	default:
		x.outcome("allowed")
	}
	if len(warned) > 0 {
		slices.Sort(warned)
		x.w.Header().Set("X-Guardrail-Warnings", strings.Join(slices.Compact(warned), ", "))
	}
	copyHeaders(x.w.Header(), resp.Header)
	x.w.Header().Set("Content-Length", strconv.Itoa(len(out.body)))
	x.p.cfg.Telemetry.Added(x.family, time.Since(start))
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(out.body)
}

// fetchStored makes the upstream GET of a retrieval and returns the provider's answer
// when it is one to judge (HTTP 200, not a stream); otherwise it answers the client itself
// (an upstream error passes through) and returns nil.
func (x *exchange) fetchStored() *http.Response {
	out, err := http.NewRequestWithContext(x.r.Context(), http.MethodGet, upstreamURL(x.up.base, x.r.URL).String(), nil)
	if err != nil {
		x.outcome("failed")
		writeError(x.w, x.f, wire.Failed(""))
		return nil
	}
	copyHeaders(out.Header, x.r.Header)
	// The guard reads responses: let the transport negotiate (and undo) compression.
	out.Header.Del("Accept-Encoding")
	if pr := x.up.provider; pr != nil {
		pr.authorize(out.Header)
		x.p.cfg.Telemetry.ProviderRequest(pr.p.Name)
	}
	resp, err := x.p.client.Do(out)
	if err != nil {
		if clientGone(x.r.Context(), err) {
			x.outcome("client_gone")
			return nil
		}
		x.p.cfg.Log.Warn("Upstream call failed", "requestId", x.r.Header.Get("X-Request-Id"), "error", err.Error())
		x.outcome("upstream_error")
		writeError(x.w, x.f, upstreamUnreachable("the guardrail sidecar could not reach the model provider"))
		return nil
	}
	switch pr := x.up.provider; {
	case pr != nil && resp.StatusCode == http.StatusUnauthorized:
		_ = resp.Body.Close()
		x.p.cfg.Log.Warn("A model provider refused its ModelProvider's credential", "provider", pr.p.Name,
			"requestId", x.r.Header.Get("X-Request-Id"))
		x.outcome("upstream_error")
		writeError(x.w, x.f, providerCredentialRefused(pr.p.Name))
		return nil
	case resp.StatusCode != http.StatusOK:
		x.outcome("upstream_error")
		x.passThrough(resp)
		_ = resp.Body.Close()
		return nil
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		_ = resp.Body.Close()
		x.fail("a retrieval was answered with a stream", nil)
		return nil
	}
	return resp
}

// judgeList judges each element of a list's data ({"object":"list","data":[…], …}) with
// one. The list is returned as the provider sent it when no element changed; the first
// failure fails it whole.
func judgeList(body []byte, one func([]byte) (judgedAnswer, error)) (judgedAnswer, error) {
	o, err := jsonx.ParseObject(body)
	if err != nil {
		return judgedAnswer{}, &errStoredMalformed{"the stored list is malformed", err}
	}
	data := o.Get("data")
	items, err := o.Arr("data")
	if err != nil || len(data) == 0 || data[0] != '[' {
		if err == nil {
			err = errors.New("no data array")
		}
		return judgedAnswer{}, &errStoredMalformed{"the stored list is malformed", err}
	}
	list := judgedAnswer{body: body}
	for i, raw := range items {
		j, err := one(raw)
		if err != nil || j.failed != nil {
			return j, err
		}
		list.blocked = list.blocked || j.blocked
		if j.changed {
			items[i], list.changed = j.body, true
		}
	}
	if list.changed {
		o.Set("data", jsonx.MarshalArray(items))
		list.body = o.Bytes()
	}
	return list, nil
}

// judgeCompletion judges a stored chat completion object with the exchange's session as
// the answer to a non-streamed request.
func (x *exchange) judgeCompletion(body []byte) (judgedAnswer, error) {
	req := storedChatRequest(body)
	decoded, err := wire.DecodeResponse(wire.FamilyChat, &req, body)
	if err != nil {
		return judgedAnswer{}, &errStoredMalformed{"the stored chat completion is malformed", err}
	}
	res, err := x.session.Output(x.r.Context(), toEngineContents(decoded.Contents))
	if err != nil {
		return judgedAnswer{}, errClientGone
	}
	switch v := res.Stop; {
	case v != nil && v.Kind == engine.Failed:
		return judgedAnswer{failed: v}, nil
	case v != nil:
		out, err := wire.BlockResponse(wire.FamilyChat, body, v.Reason, keptText(res.Contents))
		if err != nil {
			return judgedAnswer{}, &errStoredMalformed{"the stored chat completion cannot be replaced", err}
		}
		return judgedAnswer{body: out, changed: true, blocked: true}, nil
	case applyOutput(decoded.Contents, res.Contents):
		out, err := wire.RewriteResponse(wire.FamilyChat, body, decoded.Contents, "")
		if err != nil {
			return judgedAnswer{}, &errStoredMalformed{"the stored chat completion cannot be rewritten", err}
		}
		return judgedAnswer{body: out, changed: true}, nil
	}
	return judgedAnswer{body: body}, nil
}

// storedChatRequest returns what of its request a stored chat completion repeats and the
// guard needs: its model, and whether its response_format made the answer a JSON object
// (the object channel). A body it cannot read is left to the decoder to refuse.
func storedChatRequest(body []byte) wire.Request {
	req := wire.Request{Family: wire.FamilyChat, N: 1}
	o, err := jsonx.ParseObject(body)
	if err != nil {
		return req
	}
	req.Model = o.Str("model")
	if f, err := o.Obj("response_format"); err == nil {
		switch f.Str("type") {
		case "json_schema", "json_object":
			req.Object = true
		}
	}
	return req
}

// judgeStoredMessage judges one message of a stored chat completion
// (ChatCompletionStoreMessage) as an answer: its content, reasoning and tool calls as a
// chat completion's message (read and rewritten by the same code, in a completion that
// holds it), and the text of its content_parts, which repeat the content as parts when the
// request sent parts.
func (x *exchange) judgeStoredMessage(raw []byte) (judgedAnswer, error) {
	malformed := func(err error) (judgedAnswer, error) {
		return judgedAnswer{}, &errStoredMalformed{"the stored chat message is malformed", err}
	}
	msg, err := jsonx.ParseObject(raw)
	if err != nil {
		return malformed(err)
	}
	wrapped := append(append([]byte(`{"choices":[{"index":0,"message":`), raw...), "}]}"...)
	decoded, err := wire.DecodeResponse(wire.FamilyChat, &wire.Request{Family: wire.FamilyChat, N: 1}, wrapped)
	if err != nil {
		return malformed(err)
	}
	parts, err := msg.Arr("content_parts")
	if err != nil {
		return malformed(err)
	}
	contents := toEngineContents(decoded.Contents)
	partAt := map[int]int{} // content index → content_parts index
	for i, p := range parts {
		po, err := jsonx.WalkObject(p)
		if err != nil {
			return malformed(err)
		}
		if po.Str("type") != "text" {
			continue // image parts: an answer's phases judge text
		}
		text, ok := jsonx.RawString(po.Get("text"))
		if !ok && !jsonx.IsNull(po.Get("text")) {
			return malformed(errors.New("a text part's text is not a string"))
		}
		if text == "" {
			continue
		}
		partAt[len(contents)] = i
		contents = append(contents, engine.Content{Channel: content.Channel{Kind: content.Text, Index: 1 + i}, Text: text})
	}
	res, err := x.session.Output(x.r.Context(), contents)
	if err != nil {
		return judgedAnswer{}, errClientGone
	}
	switch v := res.Stop; {
	case v != nil && v.Kind == engine.Failed:
		return judgedAnswer{failed: v}, nil
	case v != nil:
		// Contents come with a block of the tool calls only: the text before them is kept,
		// as an answer keeps it.
		reason := v.Reason
		if len(res.Contents) == len(contents) {
			if kept := keptText(res.Contents[:len(decoded.Contents)])[0]; kept != "" {
				reason = kept + wire.BlockSeparator + reason
			}
		}
		return judgedAnswer{body: blockedMessage(msg, reason), changed: true, blocked: true}, nil
	}
	changed := false
	if applyOutput(decoded.Contents, res.Contents) {
		out, err := wire.RewriteResponse(wire.FamilyChat, wrapped, decoded.Contents, "")
		if err != nil {
			return judgedAnswer{}, &errStoredMalformed{"the stored chat message cannot be rewritten", err}
		}
		if msg, err = unwrapMessage(out); err != nil {
			return judgedAnswer{}, &errStoredMalformed{"the stored chat message cannot be rewritten", err}
		}
		changed = true
	}
	for ci, pi := range partAt {
		if c := res.Contents[ci]; c.Dropped || c.Text != contents[ci].Text {
			po, _ := jsonx.WalkObject(parts[pi])
			if c.Dropped {
				po.Set("text", []byte(`""`))
			} else {
				po.Set("text", jsonx.Quote(c.Text))
			}
			parts[pi], changed = po.Bytes(), true
		}
	}
	if !changed {
		return judgedAnswer{body: raw}, nil
	}
	if len(partAt) > 0 {
		msg.Set("content_parts", jsonx.MarshalArray(parts))
	}
	return judgedAnswer{body: msg.Bytes(), changed: true}, nil
}

// unwrapMessage returns the message of the completion judgeStoredMessage wrapped it in.
func unwrapMessage(completion []byte) (*jsonx.Object, error) {
	o, err := jsonx.ParseObject(completion)
	if err != nil {
		return nil, err
	}
	choices, err := o.Arr("choices")
	if err != nil || len(choices) != 1 {
		return nil, errors.New("the wrapping completion lost its choice")
	}
	c, err := jsonx.WalkObject(choices[0])
	if err != nil {
		return nil, err
	}
	return c.Obj("message")
}

// blockedMessage is a stored message replaced by a verdict: its id, role and name, the
// reason as its content (and as its one text part when it had parts), refusal null;
// nothing else of it (tool calls, audio, annotations) is kept.
func blockedMessage(msg *jsonx.Object, reason string) []byte {
	out := &jsonx.Object{}
	for _, k := range []string{"id", "role", "name"} {
		if v := msg.Get(k); v != nil {
			out.Set(k, v)
		}
	}
	text := jsonx.Quote(reason)
	out.Set("content", text)
	if msg.Get("refusal") != nil {
		out.Set("refusal", []byte("null"))
	}
	if msg.Has("content_parts") {
		part, _ := json.Marshal([]map[string]string{{"type": "text", "text": reason}})
		out.Set("content_parts", part)
	} else if msg.Get("content_parts") != nil {
		out.Set("content_parts", []byte("null"))
	}
	return out.Bytes()
}
