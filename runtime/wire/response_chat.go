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
	it, ok := tab.IterOf(body, '{')
	if !ok {
		return false
	}
	var scratch []byte
	var named uint8
	for {
		k, v, more := it.Member()
		if !more {
			return true
		}
		var bit uint8
		switch string(k) {
		case "choices":
			bit = 1
			if !readPlainChatChoices(tab, v, r, &scratch) {
				return false
			}
		case "usage":
			bit = 2
			if !readPlainChatUsage(tab, v, r) {
				return false
			}
		case "model":
			bit = 4
			r.Model = v
		default:
			if !otherMember(k, chatResponseFields) {
				return false
			}
			continue
		}
		if named&bit != 0 {
			return false
		}
		named |= bit
	}
}

// readPlainChatChoices reads the choices array v (or null) for readPlainChatResponse.
func readPlainChatChoices(tab *jsonx.SkipTable, v []byte, r *chatResponse, scratch *[]byte) bool {
	if v[0] == 'n' {
		r.Choices = nil
		return true
	}
	it, ok := tab.IterOf(v, '[')
	if !ok {
		return false
	}
	r.Choices = []chatAnswerChoice{}
	for {
		e, more := it.Elem()
		if !more {
			return true
		}
		r.Choices = append(r.Choices, chatAnswerChoice{})
		if e[0] == 'n' {
			continue
		}
		c := &r.Choices[len(r.Choices)-1]
		ct, ok := tab.IterOf(e, '{')
		if !ok {
			return false
		}
		var named uint8
		for {
			k, cv, more := ct.Member()
			if !more {
				break
			}
			var bit uint8
			switch string(k) {
			case "index":
				bit = 1
				if cv[0] != 'n' {
					n, ok := jsonx.IntOf(cv)
					if !ok || int64(int(n)) != n {
						return false
					}
					c.Index = int(n)
				}
			case "message":
				bit = 2
				if !readPlainChatAnswer(tab, cv, c, scratch) {
					return false
				}
			case "finish_reason":
				bit = 4
				if cv[0] != 'n' {
					if c.FinishReason, ok = jsonx.StringValue(cv, scratch); !ok {
						return false
					}
				}
			default:
				if !otherMember(k, chatChoiceFields) {
					return false
				}
				continue
			}
			if named&bit != 0 {
				return false
			}
			named |= bit
		}
	}
}

// readPlainChatAnswer reads a choice's message v (or null) for readPlainChatResponse.
func readPlainChatAnswer(tab *jsonx.SkipTable, v []byte, c *chatAnswerChoice, scratch *[]byte) bool {
	if v[0] == 'n' {
		return true
	}
	it, ok := tab.IterOf(v, '{')
	if !ok {
		return false
	}
	m := &c.Message
	var named uint8
	for {
		k, mv, more := it.Member()
		if !more {
			return true
		}
		var bit uint8
		var dst **string
		switch string(k) {
		case "content":
			bit, dst = 1, &m.Content
		case "reasoning_content":
			bit, dst = 2, &m.ReasoningContent
		case "reasoning":
			bit, dst = 4, &m.Reasoning
		default:
			if !otherMember(k, chatAnswerFields) {
				return false // tool_calls among them: the decoder's
			}
			continue
		}
		if named&bit != 0 {
			return false
		}
		named |= bit
		if mv[0] == 'n' {
			*dst = nil
			continue
		}
		s, ok := jsonx.StringValue(mv, scratch)
		if !ok {
			return false
		}
		*dst = &s
	}
}

// readPlainChatUsage reads the usage object v (or null) for readPlainChatResponse.
func readPlainChatUsage(tab *jsonx.SkipTable, v []byte, r *chatResponse) bool {
	if v[0] == 'n' {
		r.Usage = nil
		return true
	}
	it, ok := tab.IterOf(v, '{')
	if !ok {
		return false
	}
	r.Usage = &chatAnswerUsage{}
	var named uint8
	for {
		k, uv, more := it.Member()
		if !more {
			return true
		}
		var bit uint8
		var dst *int64
		switch string(k) {
		case "prompt_tokens":
			bit, dst = 1, &r.Usage.PromptTokens
		case "completion_tokens":
			bit, dst = 2, &r.Usage.CompletionTokens
		default:
			if !otherMember(k, chatUsageFields) {
				return false
			}
			continue
		}
		if named&bit != 0 {
			return false
		}
		named |= bit
		if uv[0] == 'n' {
			continue
		}
		n, ok := jsonx.IntOf(uv)
		if !ok {
			return false
		}
		*dst = n
	}
}
