package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

type responsesRequest struct {
	Model        string          `json:"model"`
	Input        json.RawMessage `json:"input"`
	Instructions json.RawMessage `json:"instructions"`
	Stream       bool            `json:"stream"`
	Background   bool            `json:"background"`
	Text         *struct {
		Format *struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"text"`
	Tools []struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
}

// responsesItem is an input item: a message (with or without type), a function call or
// its output, or another item type.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Output    json.RawMessage `json:"output"`
}

// responsesPart is a content part of an input message or a function call output.
type responsesPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	Filename string `json:"filename"`
}

// parseResponses reads a Responses API request. instructions become a developer message
// first; input is a string (one user message) or a list of items.
func parseResponses(req *Request, body []byte) error {
	var r responsesRequest
	if err := unmarshal(FamilyResponses, "request", body, &r); err != nil {
		return err
	}
	req.Model, req.Stream, req.Background, req.IncludeUsage = r.Model, r.Stream, r.Background, true
	req.Object = r.Text != nil && r.Text.Format != nil && jsonFormat(r.Text.Format.Type)
	for _, t := range r.Tools {
		req.Tools = append(req.Tools, Tool{Type: t.Type, Name: t.Name, Description: t.Description})
	}
	if !jsonx.IsNull(r.Instructions) {
		s, ok := jsonx.SharedString(r.Instructions)
		if !ok {
			return malformed(FamilyResponses, "instructions is not a string")
		}
		at := loc{}.key(kInstructions).mark()
		req.Messages = append(req.Messages, Message{Role: "developer", System: true, Parts: []Part{textPart(s).at(at)}, loc: at})
	}
	if jsonx.IsNull(r.Input) {
		return nil
	}
	if s, ok := jsonx.SharedString(r.Input); ok {
		at := loc{}.key(kInput).mark()
		req.Messages = append(req.Messages, Message{Role: "user", Parts: []Part{textPart(s).at(at)}, loc: at})
		return nil
	}
	var items []responsesItem
	if err := unmarshal(FamilyResponses, "input", r.Input, &items); err != nil {
		return err
	}
	for i := range items {
		m, ok, err := responsesMessageOf(&items[i], loc{}.key(kInput).idx(i).mark())
		if err != nil {
			return err
		}
		if ok {
			req.Messages = append(req.Messages, m)
		}
	}
	return nil
}

// jsonFormat reports whether a Responses text.format type makes the answer a JSON object.
func jsonFormat(typ string) bool { return typ == "json_schema" || typ == "json_object" }

// StoredRequest returns what the guard needs to know of the request a stored answer was
// made with, read from the answer: a Responses object (GET /v1/responses/{id}) repeats
// its model and its text format. The proxy judges a retrieved answer as the answer to
// that request. Other families have no stored answers the guard judges; a body that is not
// a JSON object, or not of the answer's types, is an error matching ErrMalformed.
func StoredRequest(f Family, body []byte) (Request, error) {
	if f != FamilyResponses {
		return Request{}, fmt.Errorf("wire: family %s has no stored answers", f)
	}
	var r struct {
		Model string `json:"model"`
		Text  *struct {
			Format *struct {
				Type string `json:"type"`
			} `json:"format"`
		} `json:"text"`
	}
	if err := decode(body, &r); err != nil {
		return Request{}, malformed(f, "stored response: %v", err)
	}
	return Request{Family: f, Model: r.Model, N: 1, IncludeUsage: true,
		Object: r.Text != nil && r.Text.Format != nil && jsonFormat(r.Text.Format.Type)}, nil
}

// responsesMessageOf turns an input item into a message; ok is false for items that carry
// nothing to judge (reasoning, item references, tool calls without output).
func responsesMessageOf(it *responsesItem, at loc) (Message, bool, error) {
	switch {
	case it.Type == "" || it.Type == "message":
		parts, err := responsesContent(it.Content, at.key(kContent))
		return Message{Role: it.Role, System: systemRole(it.Role), Parts: parts, loc: at}, true, err
	case it.Type == "function_call" || it.Type == "custom_tool_call":
		args, key := it.Arguments, kArguments
		if it.Type == "custom_tool_call" {
			args, key = it.Input, kInput
		}
		call := ToolCall{ID: it.CallID, Name: it.Name, Arguments: args}
		return Message{Role: "assistant", ToolCalls: []ToolCall{call.at(at.key(key), false)}, loc: at}, true, nil
	case strings.HasSuffix(it.Type, "_output"):
		parts, err := responsesContent(it.Output, at.key(kOutput))
		for i := range parts {
			parts[i].ToolCallID = it.CallID
		}
		return Message{Role: "tool", Parts: parts, loc: at}, true, err
	case it.Type == "reasoning" || it.Type == "item_reference" || strings.HasSuffix(it.Type, "_call"):
		return Message{}, false, nil
	}
	return Message{Role: it.Role, Parts: []Part{opaquePart(classify.File, "").at(at)}, loc: at}, true, nil
}

// responsesContent reads message content or a tool output (at in the body): a string or
// a list of parts.
func responsesContent(raw json.RawMessage, at loc) ([]Part, error) {
	if jsonx.IsNull(raw) {
		return nil, nil
	}
	if s, ok := jsonx.SharedString(raw); ok {
		return []Part{textPart(s).at(at)}, nil
	}
	var rps []responsesPart
	if err := unmarshal(FamilyResponses, "content", raw, &rps); err != nil {
		return nil, err
	}
	parts := make([]Part, 0, len(rps))
	for i := range rps {
		el := at.idx(i).mark()
		p := responsesPartOf(&rps[i])
		switch {
		case rps[i].Type == "refusal":
			el = el.key(kRefusal)
		case p.Modality == classify.Text && !p.Opaque:
			el = el.key(kText)
		}
		parts = append(parts, p.at(el))
	}
	return parts, nil
}

func responsesPartOf(rp *responsesPart) Part {
	switch rp.Type {
	case "input_text", "output_text", "text", "summary_text", "reasoning_text":
		return textPart(rp.Text)
	case "refusal":
		return textPart(rp.Refusal)
	case "input_image":
		u := rp.ImageURL
		if u == "" {
			u = rp.FileID
		}
		return Part{Modality: classify.Image, URL: u, MIMEType: mimeOfDataURL(u)}
	case "input_file":
		switch {
		case rp.FileData != "":
			if mime := mimeOfDataURL(rp.FileData); mime != "" {
				return Part{Modality: classify.File, URL: rp.FileData, MIMEType: mime}
			}
			return Part{Modality: classify.File, URL: dataURL("", rp.FileData)}
		case rp.FileURL != "":
			return Part{Modality: classify.File, URL: rp.FileURL}
		}
		return Part{Modality: classify.File, URL: rp.FileID}
	}
	return opaquePart(classify.File, "")
}
