package wire

import (
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

type messagesRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
	Tools  []struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	OutputFormat *struct {
		Type string `json:"type"`
	} `json:"output_format"`
	OutputConfig *struct {
		Format *struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"output_config"`
}

// messagesBlock is a content block of an Anthropic message.
type messagesBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Source    *messagesSource `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

type messagesSource struct {
	Type      string          `json:"type"`
	MediaType string          `json:"media_type"`
	Data      string          `json:"data"`
	URL       string          `json:"url"`
	FileID    string          `json:"file_id"`
	Content   json.RawMessage `json:"content"`
}

// parseMessages reads an Anthropic Messages request: system (a string or text blocks)
// becomes a system message first.
func parseMessages(req *Request, body []byte) error {
	var r messagesRequest
	if err := unmarshal(FamilyMessages, "request", body, &r); err != nil {
		return err
	}
	req.Model, req.Stream, req.IncludeUsage = r.Model, r.Stream, true
	req.Object = (r.OutputFormat != nil && r.OutputFormat.Type == "json_schema") ||
		(r.OutputConfig != nil && r.OutputConfig.Format != nil && r.OutputConfig.Format.Type == "json_schema")
	for _, t := range r.Tools {
		typ := t.Type
		if typ == "" || typ == "custom" {
			typ = "function"
		}
		req.Tools = append(req.Tools, Tool{Type: typ, Name: t.Name, Description: t.Description})
	}
	if !jsonx.IsNull(r.System) {
		at := loc{}.key(kSystem).mark()
		parts, _, err := messagesContent(r.System, 0, at)
		if err != nil {
			return err
		}
		req.Messages = append(req.Messages, Message{Role: "system", System: true, Parts: parts, loc: at})
	}
	for i, m := range r.Messages {
		at := loc{}.key(kMessages).idx(i).mark()
		parts, calls, err := messagesContent(m.Content, 0, at.key(kContent))
		if err != nil {
			return err
		}
		req.Messages = append(req.Messages, Message{Role: m.Role, Parts: parts, ToolCalls: calls, loc: at})
	}
	return nil
}

// maxNesting bounds how deep tool results and documents may nest content.
const maxNesting = 4

// messagesContent reads content (at in the body): a string or a list of blocks. Tool
// uses of the history are returned as calls; tool results, search results and text
// documents as text parts.
func messagesContent(raw json.RawMessage, depth int, at loc) ([]Part, []ToolCall, error) {
	if jsonx.IsNull(raw) {
		return nil, nil, nil
	}
	if s, ok := jsonx.SharedString(raw); ok {
		return []Part{textPart(s).at(at)}, nil, nil
	}
	if depth > maxNesting {
		return nil, nil, malformed(FamilyMessages, "content nested too deep")
	}
	var blocks []messagesBlock
	if err := unmarshal(FamilyMessages, "content", raw, &blocks); err != nil {
		return nil, nil, err
	}
	var parts []Part
	var calls []ToolCall
	for i := range blocks {
		b := &blocks[i]
		el := at.idx(i).mark()
		switch b.Type {
		case "text":
			parts = append(parts, textPart(b.Text).at(el.key(kText)))
		case "image", "document":
			ps, err := messagesSourceParts(b, depth, el)
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, ps...)
		case "tool_use", "server_tool_use":
			input := string(b.Input)
			if jsonx.IsNull(b.Input) {
				input = "{}"
			}
			call := ToolCall{ID: b.ID, Name: b.Name, Arguments: input}
			calls = append(calls, call.at(el.key(kInput), true))
		case "tool_result", "search_result":
			ps, _, err := messagesContent(b.Content, depth+1, el.key(kContent))
			if err != nil {
				return nil, nil, err
			}
			for j := range ps {
				ps[j].ToolCallID = b.ToolUseID
			}
			parts = append(parts, ps...)
		case "thinking", "redacted_thinking":
			// The model's own earlier reasoning, signed by the provider: nothing of the
			// caller's to judge.
		default:
			parts = append(parts, opaquePart(classify.File, "").at(el))
		}
	}
	return parts, calls, nil
}

// messagesSourceParts reads the source of an image or document block (at in the body).
// A plain-text or content document is text the guard can read, so it becomes text parts.
func messagesSourceParts(b *messagesBlock, depth int, at loc) ([]Part, error) {
	m := classify.Image
	if b.Type == "document" {
		m = classify.File
	}
	src := b.Source
	if src == nil {
		return []Part{opaquePart(m, "").at(at)}, nil
	}
	var p Part
	switch src.Type {
	case "base64":
		p = Part{Modality: modalityFor(m, src.MediaType), URL: dataURL(src.MediaType, src.Data), MIMEType: src.MediaType}
	case "url":
		p = Part{Modality: m, URL: src.URL}
	case "file":
		p = Part{Modality: m, URL: src.FileID}
	case "text":
		return []Part{textPart(src.Data).at(at.key(kSource).key(kData))}, nil
	case "content":
		ps, _, err := messagesContent(src.Content, depth+1, at.key(kSource).key(kContent))
		return ps, err
	default:
		p = opaquePart(m, src.MediaType)
	}
	return []Part{p.at(at)}, nil
}

// modalityFor keeps an image an image and types a document by its media type.
func modalityFor(m classify.Modality, mime string) classify.Modality {
	if m == classify.Image {
		return m
	}
	return modalityOfMIME(mime)
}
