package wire

import (
	"encoding/json"
	"fmt"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
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
// match ErrMalformed.
func DecodeResponse(f Family, req *Request, body []byte) (Response, error) {
	object := req != nil && req.Object
	switch f {
	case FamilyChat:
		return decodeChatResponse(body, object)
	case FamilyResponses:
		return decodeResponsesResponse(body, object)
	case FamilyMessages:
		return decodeMessagesResponse(body, object)
	}
	return Response{}, fmt.Errorf("wire: family %s has no response content", f)
}

// RewriteResponse returns body with the text of each given content replaced (a tool
// call's arguments included), dropped contents removed, and, when finish is not empty,
// every choice's finish reason set to finish (Messages: stop_reason; Responses: status,
// or incomplete with that reason when finish is content_filter). Contents are matched by
// channel; channels not given are left as they are, as is every other field.
func RewriteResponse(f Family, body []byte, contents []Content, finish string) ([]byte, error) {
	o, err := parseObject(body)
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
	default:
		return nil, fmt.Errorf("wire: family %s has no response content", f)
	}
	if err != nil {
		return nil, malformed(f, "response: %v", err)
	}
	return o.bytes(), nil
}

// BlockResponse returns body (a non-streamed response, HTTP 200) with its content
// replaced by reason (DESIGN.md §5): for chat, each choice's message is the reason with
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
	o, err := parseObject(body)
	if err != nil {
		return nil, malformed(f, "response: %v", err)
	}
	rawTextOf := func(choice int) string {
		if k := kept[choice]; k != "" {
			return k + BlockSeparator + reason
		}
		return reason
	}
	textOf := func(choice int) []byte { return jsonString(rawTextOf(choice)) }
	text := textOf(0)
	switch f {
	case FamilyChat:
		choices, err := o.arr("choices")
		if err != nil {
			return nil, malformed(f, "choices: %v", err)
		}
		if len(choices) == 0 {
			choices = []json.RawMessage{json.RawMessage(`{"index":0}`)}
		}
		for i, raw := range choices {
			c, err := parseObject(raw)
			if err != nil {
				return nil, malformed(f, "choice: %v", err)
			}
			index := i
			if n, ok := jsonInt(c.get("index")); ok {
				index = n
			}
			msg := append([]byte(`{"role":"assistant","content":`), textOf(index)...)
			c.set("message", append(msg, `,"refusal":null}`...))
			c.set("logprobs", []byte("null"))
			c.set("finish_reason", []byte(`"`+FinishContentFilter+`"`))
			choices[i] = c.bytes()
		}
		o.set("choices", marshalArray(choices))
	case FamilyResponses:
		part := append([]byte(`{"type":"output_text","annotations":[],"logprobs":[],"text":`), text...)
		item := append(append([]byte(`{"id":`), jsonString(guardItemID(rawTextOf(0)))...), `,"type":"message","status":"incomplete","content":[`...)
		item = append(item, part...)
		o.set("output", append(append([]byte("["), item...), "}],\"role\":\"assistant\"}]"...))
		o.set("status", []byte(`"incomplete"`))
		o.set("incomplete_details", []byte(`{"reason":"`+FinishContentFilter+`"}`))
	case FamilyMessages:
		o.set("content", append(append([]byte(`[{"type":"text","text":`), text...), "}]"...))
		o.set("stop_reason", []byte(`"`+StopRefusal+`"`))
		o.set("stop_sequence", []byte("null"))
		o.set("stop_details", appendRefusalDetails(nil, reason))
	default:
		return nil, fmt.Errorf("wire: family %s has no response content", f)
	}
	return o.bytes(), nil
}

type chatResponse struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

func decodeChatResponse(body []byte, object bool) (Response, error) {
	var r chatResponse
	if err := decode(body, &r); err != nil {
		return Response{}, malformed(FamilyChat, "response: %v", err)
	}
	var resp Response
	text := content.Text
	if object {
		text = content.Object
	}
	for _, c := range r.Choices {
		if c.Index < 0 || c.Index >= MaxChoices {
			return Response{}, malformed(FamilyChat, "choice index %d", c.Index)
		}
		m := &c.Message
		if m.Content != nil && *m.Content != "" {
			resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Choice: c.Index, Kind: text}, Text: *m.Content})
		}
		if r, _ := reasoningOf(m.ReasoningContent, m.Reasoning); r != "" {
			resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Choice: c.Index, Kind: content.Reasoning}, Text: r})
		}
		for j, tc := range m.ToolCalls {
			resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Choice: c.Index, Kind: content.ToolCall, Index: j},
				Text: tc.Function.Arguments, ID: tc.ID, Name: tc.Function.Name})
		}
		for len(resp.Finish) <= c.Index {
			resp.Finish = append(resp.Finish, "")
		}
		resp.Finish[c.Index] = c.FinishReason
	}
	if r.Usage != nil {
		resp.Usage = Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens}
	}
	return resp, nil
}

func rewriteChatResponse(o *object, byChannel map[content.Channel]*Content, finish string) error {
	choices, err := o.arr("choices")
	if err != nil {
		return err
	}
	for i, raw := range choices {
		c, err := parseObject(raw)
		if err != nil {
			return err
		}
		var idx int
		if err := json.Unmarshal(c.get("index"), &idx); err != nil {
			idx = i
		}
		m, err := c.obj("message")
		if err != nil {
			return err
		}
		for _, kind := range []content.Kind{content.Text, content.Object} {
			if ct := byChannel[content.Channel{Choice: idx, Kind: kind}]; ct != nil {
				if ct.Dropped {
					m.set("content", []byte("null"))
				} else {
					m.set("content", jsonString(ct.Text))
				}
			}
		}
		if ct := byChannel[content.Channel{Choice: idx, Kind: content.Reasoning}]; ct != nil {
			key := "reasoning_content"
			if m.get(key) == nil && m.get("reasoning") != nil {
				key = "reasoning"
			}
			if ct.Dropped {
				m.del(key)
			} else {
				m.set(key, jsonString(ct.Text))
			}
		}
		if err := rewriteChatToolCalls(m, idx, byChannel); err != nil {
			return err
		}
		c.set("message", m.bytes())
		if finish != "" {
			c.set("finish_reason", jsonString(finish))
		}
		choices[i] = c.bytes()
	}
	o.set("choices", marshalArray(choices))
	return nil
}

func rewriteChatToolCalls(m *object, choice int, byChannel map[content.Channel]*Content) error {
	calls, err := m.arr("tool_calls")
	if err != nil || len(calls) == 0 {
		return err
	}
	kept := make([]json.RawMessage, 0, len(calls))
	for j, raw := range calls {
		ct := byChannel[content.Channel{Choice: choice, Kind: content.ToolCall, Index: j}]
		switch {
		case ct == nil:
			kept = append(kept, raw)
		case !ct.Dropped:
			tc, err := parseObject(raw)
			if err != nil {
				return err
			}
			fn, err := tc.obj("function")
			if err != nil {
				return err
			}
			fn.set("arguments", jsonString(ct.Text))
			tc.set("function", fn.bytes())
			kept = append(kept, tc.bytes())
		}
	}
	if len(kept) == 0 {
		m.del("tool_calls")
		return nil
	}
	m.set("tool_calls", marshalArray(kept))
	return nil
}
