package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// Judges starts judging the traffic of one exchange with a named MCP server. The guard's
// implementation is EngineJudges; tests of the transport use a fake.
type Judges interface {
	// Begin starts judging one exchange (a POST and its answer, or one message of a GET
	// stream) with server, a configured upstream name. It returns false when no policy is
	// in force: the guard then refuses MCP traffic, as it refuses model traffic.
	Begin(r *http.Request, server string) (Judge, bool)
}

// Judge judges the messages of one exchange. Its methods may be called concurrently (the
// tools of a list are judged at once); Done is called once, after every other call.
type Judge interface {
	// Call judges a tools/call request's arguments (a JSON text) before it is forwarded,
	// as a model's tool call is judged.
	Call(ctx context.Context, tool, arguments string) (Judgement, error)
	// Results judges the texts of one thing the MCP server sends toward the model: a tool
	// result, a tool's description and schema, a progress message.
	Results(ctx context.Context, texts []string) (Judgement, error)
	// Done ends the exchange: its decisions are counted.
	Done()
}

// Judgement is the verdict on what a Judge was given.
type Judgement struct {
	// Stop, when set, refuses the content.
	Stop *Stop
	// Texts are the texts to forward with redactions applied, in the order given; nil with
	// Stop, and for Call (a tool call is allowed whole or stopped).
	Texts []string
	// Dropped marks the texts a Strip removed.
	Dropped []bool
}

// Stop says why content is refused. It carries only authored text.
type Stop struct {
	// Failed is set for an evaluation failure under failurePolicy Closed; otherwise a
	// guardrail blocked the content.
	Failed bool
	// Reason is the guardrail's authored reason for a block.
	Reason string
	// Guardrail is the namespace/name of the guardrail that stopped the content.
	Guardrail string
}

// errUnreadable is a message of the MCP server the guard cannot read (a member named
// twice, a malformed content item): it is not forwarded, since the client might read in
// it what the guard did not judge.
var errUnreadable = errors.New("a message of the MCP server cannot be read")

// fromServer judges one message the MCP server sends, wherever it comes (a JSON answer,
// an event of a POST's stream or of the GET stream), by its shape rather than by the
// request it answers, so that a result delivered on another stream is judged alike:
//
//   - a result with a content array (tools/call, also fetched later as a task's result):
//     the text of each content item, embedded resources' text and structuredContent;
//   - a result with a tools array (tools/list): each tool's title, description and
//     schemas, on their own (tool poisoning);
//   - a progress notification's message.
//
// It returns the message to forward and whether it differs from the one read.
func (x *exchange) fromServer(ctx context.Context, j Judge, m *object) (json.RawMessage, bool, error) {
	if isResponse(m) {
		delete(x.pending, idKey(m.get("id")))
		result, ok := m.obj("result")
		if !ok {
			if len(m.get("result")) > 0 && m.get("result")[0] == '{' {
				return nil, false, errUnreadable // a result object that parseObject refused
			}
			return nil, false, nil
		}
		// A result with both is judged as both: a client may read either.
		var out json.RawMessage
		changed := false
		if result.has("tools") {
			o, ch, err := x.toolList(ctx, j, m, result)
			if err != nil || ch && !isResponseWithResult(o) {
				return o, ch, err // an error answer replaces the whole message
			}
			out, changed = o, ch
		}
		if result.has("content") {
			o, ch, err := x.toolResult(ctx, j, m, result)
			if err != nil || ch {
				return o, ch, err
			}
		}
		return out, changed, nil
	}
	if method, _ := m.str("method"); method == "notifications/progress" {
		return x.progress(ctx, j, m)
	}
	return nil, false, nil
}

// isResponseWithResult reports whether raw, a message the guard wrote, still carries a
// result (not an error answer).
func isResponseWithResult(raw json.RawMessage) bool {
	o, err := parseObject(raw)
	return err == nil && o.has("result")
}

// textAt is where a text part of a tool result sits: a content item's text or an
// embedded resource's text.
type textAt struct {
	item     int
	resource bool
}

// toolResult judges a CallToolResult. A block replaces it with an isError result
// carrying the reason; a fail-closed failure answers a JSON-RPC error; a redaction
// rewrites the texts in place. The text parts (content items' text, embedded resources'
// text) are judged as one text, joined in order, and each on its own (joined.go): an
// entity split across items is redacted in all of them. structuredContent is judged as
// one text, its JSON: when a redaction leaves valid JSON (a redacted span inside a string
// value) it is kept redacted, otherwise it is dropped, the text content carrying the
// same result redacted.
func (x *exchange) toolResult(ctx context.Context, j Judge, m, result *object) (json.RawMessage, bool, error) {
	items, ok := array(result.get("content"))
	if !ok {
		return nil, false, errUnreadable
	}
	parsed := make([]*object, len(items))
	var parts []string
	var where []textAt
	for i, raw := range items {
		it, err := parseObject(raw)
		if err != nil {
			return nil, false, errUnreadable
		}
		parsed[i] = it
		if s, ok := it.str("text"); ok {
			parts, where = append(parts, s), append(where, textAt{item: i})
		}
		if res, ok := it.obj("resource"); ok {
			if s, ok := res.str("text"); ok {
				parts, where = append(parts, s), append(where, textAt{item: i, resource: true})
			}
		} else if it.has("resource") && string(it.get("resource")) != "null" {
			return nil, false, errUnreadable
		}
	}
	structured, hasStructured := "", false
	if sc := result.get("structuredContent"); len(sc) > 0 && string(sc) != "null" {
		text, err := judgedJSON(sc)
		if err != nil {
			return nil, false, errUnreadable
		}
		structured, hasStructured = text, true
	}
	if len(parts) == 0 && !hasStructured {
		return nil, false, nil
	}
	// texts: the parts joined (when there are two or more), each part, structuredContent.
	joined := len(parts) > 1
	texts := make([]string, 0, len(parts)+2)
	if joined {
		texts = append(texts, strings.Join(parts, ""))
	}
	texts = append(texts, parts...)
	if hasStructured {
		texts = append(texts, structured)
	}
	jd, err := j.Results(ctx, texts)
	if err != nil {
		return nil, false, err
	}
	if jd.Stop != nil {
		x.stopped(jd.Stop)
		if jd.Stop.Failed {
			return errorResponse(m.get("id"), codePolicyFailed, wire.FailureMessage, dataPolicyFailed, jd.Stop.Guardrail), true, nil
		}
		return blockedToolResult(m.get("id"), jd.Stop.Reason), true, nil
	}
	dropped := func(k int) bool { return k < len(jd.Dropped) && jd.Dropped[k] }
	outs, drops, err := judgedParts(parts, texts, jd, joined, dropped)
	if err != nil {
		return nil, false, err
	}
	changed := false
	drop := make([]bool, len(items))
	for k, at := range where {
		if !drops[k] && outs[k] == parts[k] {
			continue
		}
		changed = true
		switch {
		case drops[k]:
			drop[at.item] = true
		case at.resource:
			res, _ := parsed[at.item].obj("resource")
			res.set("text", jsonString(outs[k]))
			parsed[at.item].set("resource", res.marshal())
		default:
			parsed[at.item].set("text", jsonString(outs[k]))
		}
	}
	if k := len(texts) - 1; hasStructured && (dropped(k) || jd.Texts[k] != structured) {
		changed = true
		if !dropped(k) && json.Valid([]byte(jd.Texts[k])) {
			result.set("structuredContent", json.RawMessage(jd.Texts[k]))
		} else {
			result.del("structuredContent")
		}
	}
	if !changed {
		return nil, false, nil
	}
	kept := make([]json.RawMessage, 0, len(items))
	for i, it := range parsed {
		if !drop[i] {
			kept = append(kept, it.marshal())
		}
	}
	result.set("content", marshalArray(kept))
	m.set("result", result.marshal())
	return m.marshal(), true, nil
}

// judgedParts returns the text parts of a tool result as judged, and which were
// dropped. Alone, a part is as its judgement says; joined, each part gets the redactions
// of the joined text and of its own judgement, placed by placeRedactions (a dropped joined
// text drops every part).
func judgedParts(parts, texts []string, jd Judgement, joined bool, dropped func(int) bool) ([]string, []bool, error) {
	outs, drops := make([]string, len(parts)), make([]bool, len(parts))
	if !joined {
		for k := range parts {
			outs[k], drops[k] = jd.Texts[k], dropped(k)
		}
		return outs, drops, nil
	}
	spans, ok := redactionsIn(texts[0], jd.Texts[0])
	if !ok {
		return nil, nil, errUnplaced
	}
	off := 0
	for k, p := range parts {
		drops[k] = dropped(0) || dropped(1+k)
		own, ok := redactionsIn(p, jd.Texts[1+k])
		if !ok {
			return nil, nil, errUnplaced
		}
		for _, s := range own {
			spans = append(spans, redaction{start: off + s.start, end: off + s.end, marker: s.marker})
		}
		off += len(p)
	}
	if len(spans) == 0 {
		copy(outs, parts)
		return outs, drops, nil
	}
	return placeRedactions(parts, spans), drops, nil
}

// toolList judges each tool of a ListToolsResult on its own (title, description, input
// and output schemas), concurrently. A tool the policy blocks is removed from the list
// and reported; a redaction rewrites the text (a schema the redaction leaves invalid
// removes the tool); a fail-closed failure answers the whole list with a JSON-RPC error,
// since a list the guard could not judge is not shown.
func (x *exchange) toolList(ctx context.Context, j Judge, m, result *object) (json.RawMessage, bool, error) {
	raws, ok := array(result.get("tools"))
	if !ok {
		return nil, false, errUnreadable
	}
	tools := make([]*object, len(raws))
	for i, raw := range raws {
		t, err := parseObject(raw)
		if err != nil {
			return nil, false, errUnreadable
		}
		tools[i] = t
	}
	type outcome struct {
		keep, changed bool
		stop          *Stop
		err           error
	}
	outcomes := make([]outcome, len(tools))
	var wg sync.WaitGroup
	sem := make(chan struct{}, toolsJudgedAtOnce)
	for i, t := range tools {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			keep, changed, stop, err := judgeTool(ctx, j, t)
			outcomes[i] = outcome{keep, changed, stop, err}
		}()
	}
	wg.Wait()
	changed := false
	kept := make([]json.RawMessage, 0, len(tools))
	for i, o := range outcomes {
		if o.err != nil {
			return nil, false, o.err
		}
		if o.stop != nil && o.stop.Failed {
			x.stopped(o.stop)
			return errorResponse(m.get("id"), codePolicyFailed, wire.FailureMessage, dataPolicyFailed, o.stop.Guardrail), true, nil
		}
		if !o.keep {
			changed = true
			if o.stop != nil {
				x.stopped(o.stop)
			}
			name, _ := tools[i].str("name")
			x.hidden(name, o.stop)
			continue
		}
		if o.changed {
			changed = true
			kept = append(kept, tools[i].marshal())
		} else {
			kept = append(kept, raws[i])
		}
	}
	if !changed {
		return nil, false, nil
	}
	result.set("tools", marshalArray(kept))
	m.set("result", result.marshal())
	return m.marshal(), true, nil
}

// toolsJudgedAtOnce bounds the concurrent judging of a tool list.
const toolsJudgedAtOnce = 8

// judgeTool judges one tool of a list; it rewrites t in place when a text is redacted.
func judgeTool(ctx context.Context, j Judge, t *object) (keep, changed bool, stop *Stop, err error) {
	var texts, fields []string
	for _, f := range []string{"title", "description"} {
		if s, ok := t.str(f); ok && s != "" {
			texts, fields = append(texts, s), append(fields, f)
		}
	}
	for _, f := range []string{"inputSchema", "outputSchema"} {
		if v := t.get(f); len(v) > 0 && string(v) != "null" {
			text, err := judgedJSON(v)
			if err != nil {
				return false, false, nil, errUnreadable
			}
			texts, fields = append(texts, text), append(fields, f)
		}
	}
	if len(texts) == 0 {
		return true, false, nil, nil
	}
	jd, err := j.Results(ctx, texts)
	if err != nil || jd.Stop != nil {
		return false, false, jd.Stop, err
	}
	for k, f := range fields {
		dropped := k < len(jd.Dropped) && jd.Dropped[k]
		if !dropped && jd.Texts[k] == texts[k] {
			continue
		}
		changed = true
		switch {
		case f == "inputSchema" && (dropped || !json.Valid([]byte(jd.Texts[k]))):
			return false, false, nil, nil // a tool without its input schema cannot be called
		case dropped:
			t.del(f)
		case f == "inputSchema" || f == "outputSchema":
			if !json.Valid([]byte(jd.Texts[k])) {
				t.del(f)
				continue
			}
			t.set(f, json.RawMessage(jd.Texts[k]))
		default:
			t.set(f, jsonString(jd.Texts[k]))
		}
	}
	return true, changed, nil, nil
}

// progress judges a progress notification's message as it comes (not held until the
// result): a block replaces the message with the reason, a failure with the fixed
// failure message, a redaction rewrites it. The notification itself is always
// forwarded: its progress carries no text.
func (x *exchange) progress(ctx context.Context, j Judge, m *object) (json.RawMessage, bool, error) {
	params, ok := m.obj("params")
	if !ok {
		if m.has("params") {
			return nil, false, errUnreadable // a params object parseObject refused
		}
		return nil, false, nil
	}
	msg, ok := params.str("message")
	if !ok || msg == "" {
		return nil, false, nil
	}
	jd, err := j.Results(ctx, []string{msg})
	if err != nil {
		return nil, false, err
	}
	switch {
	case jd.Stop != nil && jd.Stop.Failed:
		x.stopped(jd.Stop)
		params.set("message", jsonString(wire.FailureMessage))
	case jd.Stop != nil:
		x.stopped(jd.Stop)
		params.set("message", jsonString(jd.Stop.Reason))
	case len(jd.Dropped) > 0 && jd.Dropped[0]:
		params.del("message")
	case jd.Texts[0] != msg:
		params.set("message", jsonString(jd.Texts[0]))
	default:
		return nil, false, nil
	}
	m.set("params", params.marshal())
	return m.marshal(), true, nil
}
