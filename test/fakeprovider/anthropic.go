package fakeprovider

import (
	"encoding/json"
	"strconv"
)

// Anthropic Messages API.

func anthropicError(e *Error, seq int) []byte {
	typ := e.Type
	if typ == "" {
		typ = "api_error"
	}
	return mustJSON(struct {
		Type      string            `json:"type"`
		Error     map[string]string `json:"error"`
		RequestID string            `json:"request_id"`
	}{"error", map[string]string{"type": typ, "message": e.Message}, "req_fake_" + strconv.Itoa(seq)})
}

func anthropicStop(c *Choice) string {
	switch {
	case c.Finish != "":
		return c.Finish
	case hasToolCall(c):
		return "tool_use"
	}
	return "end_turn"
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type anthropicMessage struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        anthropicUsage    `json:"usage"`
}

// block returns a content block of a segment with the given text (empty at a stream's
// block start).
func block(s *segment, text string, whole bool) json.RawMessage {
	switch s.kind {
	case ReasoningDelta:
		return mustJSON(map[string]string{"type": "thinking", "thinking": text, "signature": signature(whole)})
	case ToolCallStart:
		input := json.RawMessage("{}")
		if whole && json.Valid([]byte(text)) && text != "" {
			input = json.RawMessage(text)
		}
		return mustJSON(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{"tool_use", s.id, s.name, input})
	}
	return mustJSON(map[string]string{"type": "text", "text": text})
}

func signature(whole bool) string {
	if whole {
		return "fake-signature"
	}
	return ""
}

// message is a whole Anthropic message.
func (g *gen) message() []byte {
	c := g.script.choices(1)[0]
	segs := segments(&c, "toolu_fake_")
	content := make([]json.RawMessage, 0, len(segs))
	for k := range segs {
		content = append(content, block(&segs[k], segs[k].text(), true))
	}
	stop := anthropicStop(&c)
	u := g.usage()
	return mustJSON(anthropicMessage{ID: g.id("msg_fake_"), Type: "message", Role: "assistant", Model: g.model(),
		Content: content, StopReason: &stop, Usage: anthropicUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}})
}

// messagesStream sends message_start, a ping, each content block's start, deltas and
// stop, message_delta with the stop reason and usage, and message_stop.
func (g *gen) messagesStream() {
	c := g.script.choices(1)[0]
	u := g.usage()
	start := anthropicMessage{ID: g.id("msg_fake_"), Type: "message", Role: "assistant", Model: g.model(),
		Content: []json.RawMessage{}, Usage: anthropicUsage{InputTokens: u.InputTokens, OutputTokens: 1}}
	if !g.send(g.script.Delay, sseEvent("message_start", mustJSON(map[string]any{"type": "message_start", "message": start}))) ||
		!g.send(g.script.Delay, sseEvent("ping", []byte(`{"type": "ping"}`))) {
		return
	}
	segs := segments(&c, "toolu_fake_")
	for k := range segs {
		s := &segs[k]
		if !g.send(g.script.Delay, sseEvent("content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": k, "content_block": block(s, "", false)}))) {
			return
		}
		for i := range s.deltas {
			d := &s.deltas[i]
			var delta map[string]string
			switch s.kind {
			case TextDelta:
				delta = map[string]string{"type": "text_delta", "text": d.Text}
			case ReasoningDelta:
				delta = map[string]string{"type": "thinking_delta", "thinking": d.Text}
			case ToolCallStart:
				delta = map[string]string{"type": "input_json_delta", "partial_json": d.Text}
			}
			if !g.send(g.delayOf(d), sseEvent("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": k, "delta": delta}))) {
				return
			}
		}
		if s.kind == ReasoningDelta {
			sig := map[string]any{"type": "content_block_delta", "index": k, "delta": map[string]string{"type": "signature_delta", "signature": signature(true)}}
			if !g.send(g.script.Delay, sseEvent("content_block_delta", mustJSON(sig))) {
				return
			}
		}
		if !g.send(g.script.Delay, sseEvent("content_block_stop", mustJSON(map[string]any{"type": "content_block_stop", "index": k}))) {
			return
		}
	}
	delta := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(&c), "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": u.OutputTokens}}
	if !g.send(g.script.Delay, sseEvent("message_delta", mustJSON(delta))) {
		return
	}
	g.send(g.script.Delay, sseEvent("message_stop", []byte(`{"type":"message_stop"}`)))
}
