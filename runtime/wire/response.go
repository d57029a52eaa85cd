package wire

import (
	"encoding/json"
	"fmt"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// Finish reasons the guard writes.
const (
	// FinishContentFilter is OpenAI's finish reason (and Responses' incomplete reason) for
	// content stopped by a filter.
	FinishContentFilter = "content_filter"
	// StopRefusal is Anthropic's stop_reason for a response the model refused: the
	// native counterpart of content_filter, which Anthropic's SDKs already know.
	StopRefusal = "refusal"
)

// DecodeResponse extracts the channels of a non-streamed response body of family f
// (chat, Responses or Messages), numbered as the stream decoder numbers them. Errors
// match ErrMalformed. A long text without escapes is body's own bytes, not a copy: body
// must not change while the response is in use.
func DecodeResponse(f Family, req *Request, body []byte) (Response, error) {
	object := req != nil && req.Object
	switch f {
	case FamilyChat:
		return decodeChatResponse(body, object)
	case FamilyResponses:
		return decodeResponsesResponse(body, object)
	case FamilyMessages:
		return decodeMessagesResponse(body, object)
	case FamilyGemini:
		return decodeGeminiResponse(body, object)
	}
	return Response{}, fmt.Errorf("wire: family %s has no response content", f)
}

// RewriteResponse returns body with the text of each given content replaced (a tool
// call's arguments included), dropped contents removed, and, when finish is not empty,
// every choice's finish reason set to finish (Messages: stop_reason; Responses: status,
// or incomplete with that reason when finish is content_filter). Contents are matched by
// channel; channels not given are left as they are, as is every other field.
func RewriteResponse(f Family, body []byte, contents []Content, finish string) ([]byte, error) {
	o, err := jsonx.ParseObject(body)
	if err != nil {
		return nil, malformed(f, "response: %v", err)
	}
	byChannel := make(map[content.Channel]*Content, len(contents))
	for i := range contents {
		byChannel[contents[i].Channel] = &contents[i]
	}
	switch f {
	case FamilyChat:
		err = rewriteChatResponse(o, byChannel, finish)
	case FamilyResponses:
		err = rewriteResponsesResponse(o, byChannel, finish)
	case FamilyMessages:
		err = rewriteMessagesResponse(o, byChannel, finish)
	case FamilyGemini:
		err = rewriteGeminiResponse(o, byChannel, finish)
	default:
		return nil, fmt.Errorf("wire: family %s has no response content", f)
	}
	if err != nil {
		return nil, malformed(f, "response: %v", err)
	}
	return o.Bytes(), nil
}

// BlockResponse returns body (a non-streamed response, HTTP 200) with its content
// replaced by reason: for chat, each choice's message is the reason with
// finish_reason content_filter; for Responses, the output is one message with the reason
// and the response is incomplete with incomplete_details.reason content_filter; for
// Messages, the content is one text block with the reason, stop_reason is "refusal" and
// stop_details names the reason as the refusal's explanation. Identifiers, model and
// usage are kept.
//
// kept is the answer text a choice keeps before the reason, after BlockSeparator (a block
// of tool calls that followed text the policy allowed: streamed, the client would have
// received that text before the block). Most blocks keep nothing (nil).
func BlockResponse(f Family, body []byte, reason string, kept map[int]string) ([]byte, error) {
	o, err := jsonx.ParseObject(body)
	if err != nil {
		return nil, malformed(f, "response: %v", err)
	}
	rawTextOf := func(choice int) string {
		if k := kept[choice]; k != "" {
			return k + BlockSeparator + reason
		}
		return reason
	}
	textOf := func(choice int) []byte { return jsonx.Quote(rawTextOf(choice)) }
	text := textOf(0)
	switch f {
	case FamilyChat:
		choices, err := o.Arr("choices")
		if err != nil {
			return nil, malformed(f, "choices: %v", err)
		}
		if len(choices) == 0 {
			choices = []json.RawMessage{json.RawMessage(`{"index":0}`)}
		}
		for i, raw := range choices {
			c, err := jsonx.ParseObject(raw)
			if err != nil {
				return nil, malformed(f, "choice: %v", err)
			}
			index := i
			if n, ok := jsonx.Int(c.Get("index")); ok {
				index = n
			}
			msg := append([]byte(`{"role":"assistant","content":`), textOf(index)...)
			c.Set("message", append(msg, `,"refusal":null}`...))
			c.Set("logprobs", []byte("null"))
			c.Set("finish_reason", []byte(`"`+FinishContentFilter+`"`))
			choices[i] = c.Bytes()
		}
		o.Set("choices", jsonx.MarshalArray(choices))
	case FamilyResponses:
		part := append([]byte(`{"type":"output_text","annotations":[],"logprobs":[],"text":`), text...)
		item := append(append([]byte(`{"id":`), jsonx.Quote(guardItemID(rawTextOf(0)))...), `,"type":"message","status":"incomplete","content":[`...)
		item = append(item, part...)
		o.Set("output", append(append([]byte("["), item...), "}],\"role\":\"assistant\"}]"...))
		o.Set("status", []byte(`"incomplete"`))
		o.Set("incomplete_details", []byte(`{"reason":"`+FinishContentFilter+`"}`))
	case FamilyMessages:
		o.Set("content", append(append([]byte(`[{"type":"text","text":`), text...), "}]"...))
		o.Set("stop_reason", []byte(`"`+StopRefusal+`"`))
		o.Set("stop_sequence", []byte("null"))
		o.Set("stop_details", appendRefusalDetails(nil, reason))
	case FamilyGemini:
		if err := blockGeminiResponse(o, textOf, reason); err != nil {
			return nil, malformed(f, "candidates: %v", err)
		}
	default:
		return nil, fmt.Errorf("wire: family %s has no response content", f)
	}
	return o.Bytes(), nil
}
