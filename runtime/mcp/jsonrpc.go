package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// object is a JSON object read member by member with exact names, in order, so that a
// rewritten message keeps every member the guard does not touch as it was.
type object struct {
	keys []string
	vals []json.RawMessage
}

var errNotObject = errors.New("not a JSON object")

// parseObject reads a JSON object. A member named twice, in any case, is refused:
// implementations differ in which copy they read (Go's encoding/json matches names
// without regard to case and keeps the last, JavaScript keeps the last exact one), so the
// guard could judge one copy while the other side acts on another.
func parseObject(raw []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	o := &object{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		folded := strings.ToLower(strings.ToUpper(key)) // as encoding/json folds (K, ſ)
		if seen[folded] {
			return nil, fmt.Errorf("member %q is named twice", key)
		}
		seen[folded] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.keys, o.vals = append(o.keys, key), append(o.vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return nil, errors.New("data after the JSON object")
	}
	return o, nil
}

// get returns the member named key, in any case: parseObject refused objects where two
// members fold alike, and a receiver that matches names without regard to case (Go's
// encoding/json) reads the one member there is.
func (o *object) get(key string) json.RawMessage {
	for i, k := range o.keys {
		if strings.EqualFold(k, key) {
			return o.vals[i]
		}
	}
	return nil
}

func (o *object) has(key string) bool { return o.get(key) != nil }

func (o *object) set(key string, v json.RawMessage) {
	for i, k := range o.keys {
		if strings.EqualFold(k, key) {
			o.vals[i] = v
			return
		}
	}
	o.keys, o.vals = append(o.keys, key), append(o.vals, v)
}

func (o *object) del(key string) {
	for i, k := range o.keys {
		if strings.EqualFold(k, key) {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			o.vals = append(o.vals[:i], o.vals[i+1:]...)
			return
		}
	}
}

// str returns the member's value when it is a JSON string.
func (o *object) str(key string) (string, bool) {
	v := o.get(key)
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

func (o *object) obj(key string) (*object, bool) {
	v := o.get(key)
	if len(v) == 0 || v[0] != '{' {
		return nil, false
	}
	sub, err := parseObject(v)
	return sub, err == nil
}

// marshal writes the object with its members in order.
func (o *object) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(k))
		b.WriteByte(':')
		b.Write(o.vals[i])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// array reads a JSON array into its raw elements.
func array(raw json.RawMessage) ([]json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return nil, false
	}
	return elems, true
}

func marshalArray(elems []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// batch reads a POST body or an event's data: one JSON-RPC message, or a batch (an
// array of them; protocol version 2025-03-26). Each message is a JSON-RPC 2.0 object: a
// request or notification (method), or a response (result or error). Any other JSON is
// refused, so that the MCP route forwards nothing but MCP.
func batch(raw []byte) (msgs []*object, isBatch bool, err error) {
	msgs, isBatch, err = objects(raw)
	for _, m := range msgs {
		if v, _ := m.str("jsonrpc"); err == nil && (v != "2.0" || !m.has("method") && !m.has("result") && !m.has("error")) {
			err = errors.New("not a JSON-RPC 2.0 message")
		}
	}
	return msgs, isBatch, err
}

func objects(raw []byte) (msgs []*object, isBatch bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		elems, ok := array(raw)
		if !ok || len(elems) == 0 {
			return nil, true, errors.New("not a JSON-RPC batch")
		}
		for _, e := range elems {
			o, err := parseObject(e)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, o)
		}
		return msgs, true, nil
	}
	o, err := parseObject(raw)
	if err != nil {
		return nil, false, err
	}
	return []*object{o}, false, nil
}

// encodeBatch writes messages back as they came: one message, or a batch.
func encodeBatch(msgs []json.RawMessage, isBatch bool) json.RawMessage {
	if !isBatch && len(msgs) == 1 {
		return msgs[0]
	}
	return marshalArray(msgs)
}

// JSON-RPC error codes of the answers the guard writes itself.
const (
	// codeInvalidRequest: a message the guard does not forward (JSON-RPC's own code).
	codeInvalidRequest = -32600
	// codeParseError: a body that is not JSON-RPC (JSON-RPC's own code).
	codeParseError = -32700
	// codePolicyFailed: a fail-closed evaluation failure (JSON-RPC's internal error); the
	// error's data carries code policy_evaluation_failed, as the model routes' errors do.
	codePolicyFailed = -32603
	// codeUpstream: the MCP server could not be reached or broke its answer off (the
	// code the official TypeScript SDK gives a closed connection).
	codeUpstream = -32000
)

// Data codes of the guard's JSON-RPC errors (error.data.code).
const (
	dataPolicyFailed        = wire.CodePolicyEvaluationFailed
	dataUpstreamUnreachable = "upstream_unreachable"
	dataInvalidRequest      = "invalid_request"
)

// errorResponse is a JSON-RPC error answering id (null when unknown).
func errorResponse(id json.RawMessage, code int, message, dataCode, guardrail string) json.RawMessage {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	data := map[string]string{"code": dataCode}
	if guardrail != "" {
		data["guardrail"] = guardrail
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Data    map[string]string `json:"data"`
	}{code, message, data}})
	return b
}

// blockedToolResult is what a tool call the policy blocked answers, whether its
// arguments or its result were blocked: a CallToolResult with isError set and the
// guardrail's authored reason as its only content, the MCP spec's shape of a tool
// execution error, which clients hand to the model to read. It carries no content of
// the call.
func blockedToolResult(id json.RawMessage, reason string) json.RawMessage {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, struct {
		Content []textContent `json:"content"`
		IsError bool          `json:"isError"`
	}{[]textContent{{Type: "text", Text: reason}}, true}})
	return b
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// idKey is a request id as a map key: its JSON text.
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// isRequest reports whether m is a request (a method and an id); a notification has no id.
func isRequest(m *object) bool {
	return m.has("method") && m.has("id") && string(m.get("id")) != "null"
}

// isResponse reports whether m answers a request (a result or an error, no method).
func isResponse(m *object) bool { return !m.has("method") && (m.has("result") || m.has("error")) }

// maxDepth bounds the nesting of JSON the guard rewrites into its judged form.
const maxDepth = 64

// judgedJSON returns the text the guard judges for a JSON value (tool-call arguments,
// structuredContent, schemas): the value re-written with its members in order and its
// strings as plain text, no \u escapes and no white space, so that a classifier reads
// "BLOCK" however a client or server spelled it ("\u0042LOCK"). An object with a member
// named twice, in any case, at any depth, is refused, as in parseObject.
func judgedJSON(raw json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := writeJudged(&b, raw, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJudged(b *bytes.Buffer, raw json.RawMessage, depth int) error {
	raw = bytes.TrimSpace(raw)
	if depth > maxDepth {
		return errors.New("JSON nested too deep")
	}
	if len(raw) == 0 {
		return errors.New("empty JSON value")
	}
	switch raw[0] {
	case '{':
		o, err := parseObject(raw)
		if err != nil {
			return err
		}
		b.WriteByte('{')
		for i, k := range o.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writePlainString(b, k)
			b.WriteByte(':')
			if err := writeJudged(b, o.vals[i], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case '[':
		elems, ok := array(raw)
		if !ok {
			return errors.New("not a JSON array")
		}
		b.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJudged(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		writePlainString(b, s)
	default:
		if !json.Valid(raw) {
			return errors.New("not a JSON value")
		}
		b.Write(raw)
	}
	return nil
}

// writePlainString writes s as a JSON string escaping only what JSON requires (quotes,
// backslashes, control characters), not <, > and &.
func writePlainString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}
