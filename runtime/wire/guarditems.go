package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// The guard makes one kind of Responses output item itself: the assistant message that
// carries a block's reason (in place of an answer, or of a tool call it withheld). The
// provider never saw that item, so a client that refers to it in its next request — an
// item_reference, as SDKs that store conversations send for every earlier output item, or
// the item repeated inline with its id — would make the provider answer 404 "item not
// found" and end the conversation. The item's id therefore carries its text
// (guardItemPrefix, then the text base64url-encoded), and ResolveGuardItems gives the
// provider that text in its place. Only authored text (the guardrail's reason, and answer
// text the client already received) is ever in such an id.

// guardItemPrefix begins the id of every item the guard makes.
const guardItemPrefix = "msg_guardrail"

// guardItemID returns the id of a guard-made message item whose text is text.
func guardItemID(text string) string {
	return guardItemPrefix + "_" + base64.RawURLEncoding.EncodeToString([]byte(text))
}

// guardItemText returns the text a guard-made item's id carries. An id of an earlier guard
// (msg_guardrail, with no text) gives a fixed text; ok is false for an id that begins like
// one but does not decode to UTF-8 text.
func guardItemText(id string) (string, bool) {
	rest := strings.TrimPrefix(id, guardItemPrefix)
	if rest == "" {
		return "This answer was blocked by a guardrail.", true
	}
	enc, ok := strings.CutPrefix(rest, "_")
	if !ok {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// ResolveGuardItems rewrites a Responses request's input for the provider: an
// item_reference to a guard-made item becomes the assistant message it was, and a
// guard-made item repeated inline loses its id (the provider would look it up). It returns
// body itself when the input refers to no such item, which a scan for the prefix decides
// without decoding. Only the input array is re-encoded; every other member keeps its bytes.
// An id that has the prefix but no text is malformed (ErrMalformed).
func ResolveGuardItems(body []byte) ([]byte, error) {
	if !bytes.Contains(body, []byte(guardItemPrefix)) {
		return body, nil
	}
	o, err := jsonx.ParseObject(body)
	if err != nil {
		return nil, malformed(FamilyResponses, "request: %v", err)
	}
	raw := o.Get("input")
	if len(raw) == 0 || raw[0] != '[' {
		return body, nil
	}
	items, err := o.Arr("input")
	if err != nil {
		return nil, malformed(FamilyResponses, "input: %v", err)
	}
	changed := false
	for i, it := range items {
		if !bytes.Contains(it, []byte(guardItemPrefix)) || len(it) == 0 || it[0] != '{' {
			continue
		}
		item, err := jsonx.ParseObject(it)
		if err != nil {
			return nil, malformed(FamilyResponses, "input item %d: %v", i, err)
		}
		id := item.Str("id")
		if !strings.HasPrefix(id, guardItemPrefix) {
			continue
		}
		text, ok := guardItemText(id)
		if !ok {
			return nil, malformed(FamilyResponses, "input item %d refers to %.40q, which is not an item the guardrail sidecar made", i, id)
		}
		// A reference may leave out its type (openai-go sends {"id":…}): an item that
		// has nothing but its id is one.
		if typ := item.Str("type"); typ == "item_reference" || typ == "" && item.Len() == 1 {
			items[i] = guardMessage(text)
		} else {
			item.Del("id")
			items[i] = item.Bytes()
		}
		changed = true
	}
	if !changed {
		return body, nil
	}
	o.Set("input", jsonx.MarshalArray(items))
	return o.Bytes(), nil
}

// guardMessage is the input item that stands for a guard-made message: an assistant
// message with its text as output text, the shape the provider accepts inline.
func guardMessage(text string) json.RawMessage {
	b := append([]byte(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":`), jsonx.Quote(text)...)
	return append(b, "}]}"...)
}
