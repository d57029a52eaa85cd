package wire

import (
	"encoding/json"
	"errors"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

type messagesResponse struct {
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	Model json.RawMessage `json:"model"`
}

func decodeMessagesResponse(body []byte, object bool) (Response, error) {
	var r messagesResponse
	if err := decodeBody(body, &r); err != nil {
		return Response{}, malformed(FamilyMessages, "response: %v", err)
	}
	resp := Response{Model: ModelName(r.Model)}
	text := content.Text
	if object {
		text = content.Object
	}
	for i, b := range r.Content {
		switch b.Type {
		case "text":
			resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Kind: text, Index: i}, Text: b.Text})
		case "thinking":
			resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Kind: content.Reasoning, Index: i}, Text: b.Thinking})
		case "tool_use":
			in := string(b.Input)
			if jsonx.IsNull(b.Input) {
				in = "{}"
			}
			resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Kind: content.ToolCall, Index: i}, Text: in, ID: b.ID, Name: b.Name})
		}
	}
	resp.Finish = []string{r.StopReason}
	if r.Usage != nil {
		resp.Usage = Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}
	}
	return resp, nil
}

var errToolInput = errors.New("tool_use input is not a JSON object")

func rewriteMessagesResponse(o *jsonx.Object, byChannel map[content.Channel]*Content, finish string) error {
	blocks, err := o.Arr("content")
	if err != nil {
		return err
	}
	kept := blocks[:0]
	for i, raw := range blocks {
		b, err := jsonx.ParseObject(raw)
		if err != nil {
			return err
		}
		var ct *Content
		for _, kind := range []content.Kind{content.Text, content.Object, content.Reasoning, content.ToolCall} {
			if c := byChannel[content.Channel{Kind: kind, Index: i}]; c != nil {
				ct = c
			}
		}
		switch {
		case ct == nil:
			kept = append(kept, raw)
			continue
		case ct.Dropped:
			continue
		}
		switch b.Str("type") {
		case "text":
			b.Set("text", jsonx.Quote(ct.Text))
		case "thinking":
			b.Set("thinking", jsonx.Quote(ct.Text))
		case "tool_use":
			in := json.RawMessage(ct.Text)
			if _, err := jsonx.ParseObject(in); err != nil {
				return errToolInput
			}
			b.Set("input", in)
		}
		kept = append(kept, b.Bytes())
	}
	o.Set("content", jsonx.MarshalArray(kept))
	if finish != "" {
		o.Set("stop_reason", jsonx.Quote(finish))
	}
	return nil
}
