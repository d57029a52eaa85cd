package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// ErrMalformed is matched (errors.Is) by every error of ParseRequest, DecodeResponse and
// the stream decoders for content that is not what the format says.
var ErrMalformed = errors.New("wire: malformed")

func malformed(f Family, format string, args ...any) error {
	return fmt.Errorf("%w %s body: %s", ErrMalformed, f, fmt.Sprintf(format, args...))
}

// MaxChoices bounds the number of choices of a request and the choice indexes of a
// response (OpenAI accepts n up to 128); anything beyond is malformed.
const MaxChoices = 128

// MaxParts bounds how many content parts a request may carry; a request with more is
// malformed, so that a request cannot make the guard do unbounded work per byte.
const MaxParts = 1 << 16

// ParseRequest extracts what the guard judges from a request body of family f. The body
// is expected to be bounded by the caller (the proxy's request-size limit). Content the
// guard cannot read (an unknown part type, token ids) becomes an Opaque part rather than
// being skipped, so that no content passes unseen by accident. Malformed bodies, wrong
// JSON types included, are errors matching ErrMalformed; it never panics.
//
// A long text of the request without escapes (a prompt) is body's own bytes, not a copy
// (jsonx.SharedString): body must not change while the request is in use.
func ParseRequest(f Family, body []byte) (Request, error) {
	req := Request{Family: f, N: 1}
	var err error
	switch f {
	case FamilyChat:
		err = parseChat(&req, body)
	case FamilyResponses:
		err = parseResponses(&req, body)
	case FamilyEmbeddings:
		err = parseEmbeddings(&req, body)
	case FamilyMessages:
		err = parseMessages(&req, body)
	case FamilyGemini:
		err = parseGemini(&req, body)
	case FamilyGeminiInput:
		err = parseGeminiInput(&req, body)
	default:
		return req, fmt.Errorf("wire: unknown family %d", f)
	}
	if err == nil && countParts(req.Messages) > MaxParts {
		err = malformed(f, "more than %d content parts", MaxParts)
	}
	return req, err
}

func countParts(msgs []Message) int {
	n := 0
	for i := range msgs {
		n += len(msgs[i].Parts) + len(msgs[i].ToolCalls)
	}
	return n
}

// unmarshal decodes a request's JSON, turning errors into malformed errors. A field the
// guard reads may be named once only (jsonx.DecodeRequest).
func unmarshal(f Family, what string, raw []byte, v any) error {
	if err := decodeRequest(raw, v); err != nil {
		return malformed(f, "%s: %v", what, err)
	}
	return nil
}

// textPart returns a text part.
func textPart(s string) Part { return Part{Modality: classify.Text, Text: s} }

// opaquePart returns a part the guard cannot read.
func opaquePart(m classify.Modality, mime string) Part {
	return Part{Modality: m, MIMEType: mime, Opaque: true}
}

// dataURL builds a data: URL from base64 data.
func dataURL(mime, b64 string) string {
	if mime == "" {
		mime = "application/octet-stream"
	}
	return "data:" + mime + ";base64," + b64
}

// mimeOfDataURL returns the media type of a data: URL.
func mimeOfDataURL(u string) string {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, ";,"); i >= 0 {
		return rest[:i]
	}
	return ""
}

// modalityOfMIME returns the modality of a media type: images and audio by their
// top-level type, everything else a file.
func modalityOfMIME(mime string) classify.Modality {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return classify.Image
	case strings.HasPrefix(mime, "audio/"):
		return classify.Audio
	}
	return classify.File
}

// systemRole reports whether an OpenAI role carries instructions.
func systemRole(role string) bool { return role == "system" || role == "developer" }

// parseEmbeddings reads an embeddings request: its input is one user message per input
// string; token-id inputs are opaque.
func parseEmbeddings(req *Request, body []byte) error {
	var r struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := unmarshal(FamilyEmbeddings, "request", body, &r); err != nil {
		return err
	}
	req.Model = r.Model
	if jsonx.IsNull(r.Input) {
		return nil
	}
	if s, ok := jsonx.SharedString(r.Input); ok {
		at := loc{}.key(kInput).mark()
		req.Messages = []Message{{Role: "user", Parts: []Part{textPart(s).at(at)}, loc: at}}
		return nil
	}
	var items []json.RawMessage
	if err := unmarshal(FamilyEmbeddings, "input", r.Input, &items); err != nil {
		return err
	}
	// Every input is embedded, so every input is judged: the inputs are the parts of one
	// message, each written back where it was. As separate messages, a guardrail judging
	// the last message (the default) would pass all but the last input unread.
	at := loc{}.key(kInput).mark()
	msg := Message{Role: "user", loc: at}
	tokens := false
	for i, it := range items {
		switch {
		case len(it) > 0 && it[0] == '"':
			s, _ := jsonx.SharedString(it)
			msg.Parts = append(msg.Parts, textPart(s).at(loc{}.key(kInput).idx(i).mark()))
		case len(it) > 0 && (it[0] == '[' || it[0] == '-' || (it[0] >= '0' && it[0] <= '9')):
			tokens = true
		default:
			return malformed(FamilyEmbeddings, "input item is neither a string nor token ids")
		}
	}
	if tokens {
		msg.Parts = append(msg.Parts, opaquePart(classify.Text, ""))
	}
	if len(msg.Parts) > 0 {
		req.Messages = []Message{msg}
	}
	return nil
}

// intField parses an index member that defaults to 0 when absent; ok is false when it is
// present but not an integer in [0, MaxParts).
func intField(v []byte) (int, bool) {
	if jsonx.IsNullValue(v) {
		return 0, true
	}
	n, ok := jsonx.IntOf(v)
	if !ok || n < 0 || n >= MaxParts {
		return 0, false
	}
	return int(n), true
}

// decode, decodeBody and decodeRequest are the decoders the stream decoders, the response
// decoders and the request parsers call: jsonx.Decode, and for a whole body, which does
// not change while what was read from it is in use, jsonx.DecodeShared and
// jsonx.DecodeRequestShared (long strings are the body's bytes), but for FuzzDecodeJSON,
// which runs every parser with the reference decoders in their place and compares what
// they read.
var (
	decode        = jsonx.Decode
	decodeBody    = jsonx.DecodeShared
	decodeRequest = jsonx.DecodeRequestShared
)
