package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Object is a JSON object that keeps its members in order with their raw values, so that a
// rewritten response or event keeps every field the guard does not touch as it was.
type Object struct {
	keys []string
	vals []json.RawMessage
}

// Len returns how many members o has, repeated names included.
func (o *Object) Len() int { return len(o.keys) }

// AllNull reports whether every member of o is null (true when o has none).
func (o *Object) AllNull() bool {
	for _, v := range o.vals {
		if !IsNull(v) {
			return false
		}
	}
	return true
}

var errNotObject = errors.New("not a JSON object")

// ParseObject parses a JSON object: validated once (Valid does not allocate), then
// walked with the scanner, its values slices of one copy of b (the caller's buffer may be
// reused). Members keep their order, duplicates included, as encoding/json's Token walk
// kept them; this runs for every event the guard rewrites, where the Token walk cost about
// half the guard's CPU on a judged stream.
func ParseObject(b []byte) (*Object, error) {
	if !Valid(b) {
		return nil, errInvalidJSON(b)
	}
	return WalkObject(bytes.Clone(b))
}

// WalkObject parses b, valid JSON (a value of an object ParseObject made), without
// validating or copying it again.
func WalkObject(b []byte) (*Object, error) {
	it, ok := IterOf(b, '{')
	if !ok {
		return nil, errNotObject
	}
	o := &Object{keys: make([]string, 0, 8), vals: make([]json.RawMessage, 0, 8)}
	for {
		k, v, ok := it.Member()
		if !ok {
			break
		}
		key, known := commonKeys[string(k)] // no allocation for the keys every event has
		if !known {
			key = string(k)
		}
		if bytes.IndexByte(k, '\\') >= 0 {
			u, ok := Unescape(nil, k)
			if !ok {
				return nil, errNotObject
			}
			key = string(u)
		}
		o.keys, o.vals = append(o.keys, key), append(o.vals, v)
	}
	return o, nil
}

// commonKeys are the member names of the events and responses the guard rewrites, so that
// parsing one does not allocate a string per key.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"id", "object", "created", "model", "choices", "index", "delta", "message", "content",
		"role", "finish_reason", "logprobs", "usage", "system_fingerprint", "service_tier",
		"refusal", "tool_calls", "function", "name", "arguments", "type", "annotations",
		"obfuscation", "text", "item_id", "output_index", "content_index", "sequence_number",
		"response", "item", "part", "output", "status", "stop_reason", "stop_sequence",
		"content_block", "input", "partial_json", "prompt_tokens", "completion_tokens",
		"total_tokens", "input_tokens", "output_tokens",
	} {
		m[k] = k
	}
	return m
}()

// errInvalidJSON says why b is not valid JSON, as encoding/json would.
func errInvalidJSON(b []byte) error {
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return errNotObject
}

// Get returns the raw value of key, nil when absent.
func (o *Object) Get(key string) json.RawMessage {
	for i, k := range o.keys {
		if k == key {
			return o.vals[i]
		}
	}
	return nil
}

// Has reports whether key is present with a value other than null.
func (o *Object) Has(key string) bool {
	v := o.Get(key)
	return len(v) > 0 && string(v) != "null"
}

// Set replaces the value of key, or appends the member.
func (o *Object) Set(key string, v []byte) {
	for i, k := range o.keys {
		if k == key {
			o.vals[i] = v
			return
		}
	}
	o.keys, o.vals = append(o.keys, key), append(o.vals, v)
}

// Del removes key.
func (o *Object) Del(key string) {
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			o.vals = append(o.vals[:i], o.vals[i+1:]...)
			return
		}
	}
}

// Str returns the string value of key ("" when absent or not a string).
func (o *Object) Str(key string) string {
	var s string
	if v := o.Get(key); len(v) > 0 && v[0] == '"' {
		_ = json.Unmarshal(v, &s)
	}
	return s
}

// Obj parses the object value of key.
func (o *Object) Obj(key string) (*Object, error) { return WalkObject(o.Get(key)) }

// Arr parses the array value of key; a missing or null value is an empty array. The
// elements are slices of the object's (valid) JSON.
func (o *Object) Arr(key string) ([]json.RawMessage, error) {
	v := o.Get(key)
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	it, ok := IterOf(v, '[')
	if !ok {
		var a []json.RawMessage
		return nil, json.Unmarshal(v, &a) // the error encoding/json gives for a non-array
	}
	var a []json.RawMessage
	for {
		e, ok := it.Elem()
		if !ok {
			return a, nil
		}
		a = append(a, e)
	}
}

// AppendTo appends the object's JSON.
func (o *Object) AppendTo(dst []byte) []byte {
	dst = append(dst, '{')
	for i, k := range o.keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		dst = append(dst, o.vals[i]...)
	}
	return append(dst, '}')
}

// Bytes returns the object's JSON.
func (o *Object) Bytes() []byte { return o.AppendTo(nil) }

// MarshalArray returns a JSON array of raw values.
func MarshalArray(vals []json.RawMessage) []byte { return AppendArray(nil, vals) }

// AppendArray appends a JSON array of raw values.
func AppendArray(dst []byte, vals []json.RawMessage) []byte {
	dst = append(dst, '[')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, v...)
	}
	return append(dst, ']')
}

// Int reads a JSON integer (an index) without reflection; ok is false for anything else.
func Int(v []byte) (n int, ok bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || len(v) > 9 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Quote returns s as a JSON string.
func Quote(s string) []byte { return AppendString(nil, s) }

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string without allocating: quotes, backslashes,
// control characters, U+2028 and U+2029 are escaped (not <, > and &, which JSON does not
// require) and invalid UTF-8 becomes U+FFFD, as encoding/json does.
func AppendString[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendInt appends a JSON number.
func AppendInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }

// RawString decodes a JSON string value; ok is false when raw is not a string.
func RawString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	// Fast path: a valid JSON string without escapes is its own contents. (Prompts are
	// mostly such strings; decoding them again was the guard's largest cost per request.)
	if n := len(raw); n >= 2 && raw[n-1] == '"' && PlainString(raw[1:n-1]) {
		return string(raw[1 : n-1]), true
	}
	// Escapes (a prompt's newlines) or bytes that are not UTF-8: the literal is checked and
	// unescaped as the decoder does, by encoding/json's rules (FuzzRawString), without a
	// pass of encoding/json's state machine (three times the cost of the rest of parsing a
	// chat request with a 2 KB prompt).
	end, ok := ValidString(raw, 0)
	if !ok || SkipWS(raw, end) != len(raw) {
		return "", false
	}
	u, ok := Unescape(make([]byte, 0, end-2), raw[1:end-1])
	if !ok || len(u) == 0 {
		return "", ok
	}
	return unsafe.String(unsafe.SliceData(u), len(u)), true // u is this string's alone
}

// SharedMin is the length from which SharedString and DecodeShared return a string
// without escapes as the document's own bytes. A shorter one (a model name, a role, a
// tool's name) is copied: it costs little, and it may be kept after the request, as a
// label or in a record, where it would hold the whole body.
const SharedMin = 64

// SharedString is RawString for raw, a value of a document Valid accepted that does not
// change while the string is in use (a request or response body read whole, not a
// reused buffer): a string of SharedMin bytes or more without escapes, valid UTF-8, is
// raw's own bytes rather than a copy, and is not scanned again for what Valid checked
// (quotes and control characters). Anything else is read as RawString reads it, so the
// result is RawString's (FuzzSharedString).
func SharedString(raw []byte) (string, bool) {
	n := len(raw)
	if n < SharedMin+2 || raw[0] != '"' || raw[n-1] != '"' {
		return RawString(raw)
	}
	inner := raw[1 : n-1]
	// A quote inside would be a document Valid refused; it is left to RawString, which
	// refuses it, rather than trusted.
	if bytes.IndexByte(inner, '\\') >= 0 || bytes.IndexByte(inner, '"') >= 0 || !utf8.Valid(inner) {
		return RawString(raw)
	}
	return unsafe.String(unsafe.SliceData(inner), len(inner)), true
}

// StringValue is how DecodeShared reads the string value b of a document Valid accepted
// (SharedString from SharedMin bytes on, StringOf below); ok is false when b is not a
// string. A decoder of its own that reads what DecodeShared reads calls it.
func StringValue(b []byte, scratch *[]byte) (string, bool) {
	if len(b) >= SharedMin+2 {
		return SharedString(b)
	}
	return StringOf(b, scratch)
}

// PlainString reports whether b, the inside of a JSON string literal, needs no
// decoding: no escapes, no quote or control character, valid UTF-8 (encoding/json would
// replace invalid bytes with U+FFFD).
func PlainString(b []byte) bool { return plainRun(b, 0) == len(b) && utf8.Valid(b) }

// IsNull reports whether raw is absent or JSON null.
func IsNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
