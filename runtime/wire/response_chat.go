package wire

import (
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

type chatResponse struct {
	Choices []chatAnswerChoice `json:"choices"`
	Usage   *chatAnswerUsage   `json:"usage"`
	Model   json.RawMessage    `json:"model"`
}

type chatAnswerChoice struct {
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
}

type chatAnswerUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

func decodeChatResponse(body []byte, object bool) (Response, error) {
	var r chatResponse
	if fastChatResponse == nil || !fastChatResponse(body, &r) {
		r = chatResponse{}
		if err := decodeBody(body, &r); err != nil {
			return Response{}, malformed(FamilyChat, "response: %v", err)
		}
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

// fastChatResponse is readPlainChatResponse, but for FuzzDecodeJSON, which turns it off to
// run decodeChatResponse with the reference decoder alone.
var fastChatResponse = readPlainChatResponse

// The member names decodeBody reads into a chatResponse, a chatAnswerChoice, its message and a
// chatAnswerUsage.
var (
	chatResponseFields = []string{"choices", "usage", "model"}
	chatChoiceFields   = []string{"index", "message", "finish_reason"}
	chatAnswerFields   = []string{"content", "reasoning_content", "reasoning", "tool_calls"}
	chatUsageFields    = []string{"prompt_tokens", "completion_tokens"}
)

// readPlainChatResponse reads the most common chat completion — choices of an index, a
// message with a content (and reasoning) and a finish reason, usage, the model, members
// the guard does not read — into r without reflection, as decodeBody reads it
// (FuzzPlainChatResponse, FuzzDecodeJSON). It reports false, r then half read, for
// anything else, which decodeBody reads or refuses: tool calls, a member named in another
// spelling or twice (which decodeBody merges), a value of the wrong type, a number that
// is not a small integer, a body that is not valid JSON.
func readPlainChatResponse(body []byte, r *chatResponse) bool {
	tab := jsonx.GetSkipTable()
	defer jsonx.PutSkipTable(tab)
	if !tab.Validate(body) {
		return false
	}
	var scratch []byte
	return plainObject(tab, body, plainResponseRead, chatResponseFields, func(i int, v []byte) bool {
		switch i {
		case 0:
			return plainArray(tab, v, &r.Choices, func(e []byte, c *chatAnswerChoice) bool {
				return readPlainChatChoice(tab, e, c, &scratch)
			})
		case 1:
			return readPlainChatUsage(tab, v, r)
		}
		r.Model = v
		return true
	})
}

// plainResponseRead, plainChoiceRead, plainAnswerRead and plainUsageRead are the members
// readPlainChatResponse reads, in the order its cases name them.
var (
	plainResponseRead = []string{"choices", "usage", "model"}
	plainChoiceRead   = []string{"index", "message", "finish_reason"}
	plainAnswerRead   = []string{"content", "reasoning_content", "reasoning"}
	plainUsageRead    = []string{"prompt_tokens", "completion_tokens"}
)

// readPlainChatChoice reads a choice e for readPlainChatResponse.
func readPlainChatChoice(tab *jsonx.SkipTable, e []byte, c *chatAnswerChoice, scratch *[]byte) bool {
	return plainObject(tab, e, plainChoiceRead, chatChoiceFields, func(i int, v []byte) bool {
		switch i {
		case 0:
			if v[0] == 'n' {
				return true
			}
			n, ok := jsonx.IntOf(v)
			c.Index = int(n)
			return ok && int64(int(n)) == n
		case 1:
			return v[0] == 'n' || plainObject(tab, v, plainAnswerRead, chatAnswerFields, func(i int, v []byte) bool {
				// tool_calls, in chatAnswerFields, is the decoder's
				dst := &c.Message.Content
				switch i {
				case 1:
					dst = &c.Message.ReasoningContent
				case 2:
					dst = &c.Message.Reasoning
				}
				if v[0] == 'n' {
					*dst = nil
					return true
				}
				s, ok := jsonx.StringValue(v, scratch)
				*dst = &s
				return ok
			})
		}
		return plainString(v, &c.FinishReason, scratch)
	})
}

// readPlainChatUsage reads the usage object v (or null) for readPlainChatResponse.
func readPlainChatUsage(tab *jsonx.SkipTable, v []byte, r *chatResponse) bool {
	if v[0] == 'n' {
		r.Usage = nil
		return true
	}
	r.Usage = &chatAnswerUsage{}
	return plainObject(tab, v, plainUsageRead, chatUsageFields, func(i int, v []byte) bool {
		if v[0] == 'n' {
			return true
		}
		n, ok := jsonx.IntOf(v)
		if i == 0 {
			r.Usage.PromptTokens = n
		} else {
			r.Usage.CompletionTokens = n
		}
		return ok
	})
}
