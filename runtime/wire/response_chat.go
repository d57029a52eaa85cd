package wire

import (
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

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
	Model json.RawMessage `json:"model"`
}

func decodeChatResponse(body []byte, object bool) (Response, error) {
	var r chatResponse
	if err := decodeBody(body, &r); err != nil {
		return Response{}, malformed(FamilyChat, "response: %v", err)
	}
	resp := Response{Model: ModelName(r.Model)}
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

func rewriteChatResponse(o *jsonx.Object, byChannel map[content.Channel]*Content, finish string) error {
	choices, err := o.Arr("choices")
	if err != nil {
		return err
	}
	for i, raw := range choices {
		c, err := jsonx.ParseObject(raw)
		if err != nil {
			return err
		}
		var idx int
		if err := json.Unmarshal(c.Get("index"), &idx); err != nil {
			idx = i
		}
		m, err := c.Obj("message")
		if err != nil {
			return err
		}
		for _, kind := range []content.Kind{content.Text, content.Object} {
			if ct := byChannel[content.Channel{Choice: idx, Kind: kind}]; ct != nil {
				if ct.Dropped {
					m.Set("content", []byte("null"))
				} else {
					m.Set("content", jsonx.Quote(ct.Text))
				}
			}
		}
		if ct := byChannel[content.Channel{Choice: idx, Kind: content.Reasoning}]; ct != nil {
			key := "reasoning_content"
			if m.Get(key) == nil && m.Get("reasoning") != nil {
				key = "reasoning"
			}
			if ct.Dropped {
				m.Del(key)
			} else {
				m.Set(key, jsonx.Quote(ct.Text))
			}
		}
		if err := rewriteChatToolCalls(m, idx, byChannel); err != nil {
			return err
		}
		c.Set("message", m.Bytes())
		if finish != "" {
			c.Set("finish_reason", jsonx.Quote(finish))
		}
		choices[i] = c.Bytes()
	}
	o.Set("choices", jsonx.MarshalArray(choices))
	return nil
}

func rewriteChatToolCalls(m *jsonx.Object, choice int, byChannel map[content.Channel]*Content) error {
	calls, err := m.Arr("tool_calls")
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
			tc, err := jsonx.ParseObject(raw)
			if err != nil {
				return err
			}
			fn, err := tc.Obj("function")
			if err != nil {
				return err
			}
			fn.Set("arguments", jsonx.Quote(ct.Text))
			tc.Set("function", fn.Bytes())
			kept = append(kept, tc.Bytes())
		}
	}
	if len(kept) == 0 {
		m.Del("tool_calls")
		return nil
	}
	m.Set("tool_calls", jsonx.MarshalArray(kept))
	return nil
}
