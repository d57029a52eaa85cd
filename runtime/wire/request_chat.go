package wire

import (
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	N             *int          `json:"n"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"function"`
		Custom struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"custom"`
	} `json:"tools"`
	Functions []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"functions"`
}

type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Refusal   *string         `json:"refusal"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
		Custom struct {
			Name  string `json:"name"`
			Input string `json:"input"`
		} `json:"custom"`
	} `json:"tool_calls"`
	FunctionCall *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function_call"`
	ToolCallID string `json:"tool_call_id"`
}

// chatPart is a content part of a chat message.
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
	File *struct {
		FileID   string `json:"file_id"`
		FileData string `json:"file_data"`
		Filename string `json:"filename"`
	} `json:"file"`
}

// parseChat reads a chat completions request.
func parseChat(req *Request, body []byte) error {
	var r chatRequest
	if fastChat == nil || !fastChat(body, &r) {
		r = chatRequest{}
		if err := unmarshal(FamilyChat, "request", body, &r); err != nil {
			return err
		}
	}
	req.Model, req.Stream = r.Model, r.Stream
	if r.N != nil && *r.N > MaxChoices {
		return malformed(FamilyChat, "n is larger than %d", MaxChoices)
	}
	if r.N != nil && *r.N > 1 {
		req.N = *r.N
	}
	req.IncludeUsage = r.StreamOptions != nil && r.StreamOptions.IncludeUsage
	req.Object = r.ResponseFormat != nil && (r.ResponseFormat.Type == "json_object" || r.ResponseFormat.Type == "json_schema")
	for _, t := range r.Tools {
		switch {
		case t.Function.Name != "":
			req.Tools = append(req.Tools, Tool{Type: "function", Name: t.Function.Name, Description: t.Function.Description})
		default:
			req.Tools = append(req.Tools, Tool{Type: t.Type, Name: t.Custom.Name, Description: t.Custom.Description})
		}
	}
	for _, fn := range r.Functions {
		req.Tools = append(req.Tools, Tool{Type: "function", Name: fn.Name, Description: fn.Description})
	}
	req.Messages = make([]Message, 0, len(r.Messages))
	for i := range r.Messages {
		m, err := chatMessageOf(&r.Messages[i], loc{}.key(kMessages).idx(i).mark())
		if err != nil {
			return err
		}
		req.Messages = append(req.Messages, m)
	}
	return nil
}

func chatMessageOf(cm *chatMessage, at loc) (Message, error) {
	m := Message{Role: cm.Role, System: systemRole(cm.Role), loc: at}
	parts, err := chatContent(cm.Content, at.key(kContent))
	if err != nil {
		return m, err
	}
	m.Parts = parts
	if cm.Refusal != nil && *cm.Refusal != "" {
		m.Parts = append(m.Parts, textPart(*cm.Refusal).at(at.key(kRefusal).mark()))
	}
	if cm.ToolCallID != "" {
		for i := range m.Parts {
			m.Parts[i].ToolCallID = cm.ToolCallID
		}
	}
	for k, tc := range cm.ToolCalls {
		call := ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		args := at.key(kToolCalls).idx(k).key(kFunction).key(kArguments)
		if call.Name == "" {
			call.Name, call.Arguments = tc.Custom.Name, tc.Custom.Input
			args = at.key(kToolCalls).idx(k).key(kCustom).key(kInput)
		}
		m.ToolCalls = append(m.ToolCalls, call.at(args, false))
	}
	if cm.FunctionCall != nil {
		call := ToolCall{Name: cm.FunctionCall.Name, Arguments: cm.FunctionCall.Arguments}
		m.ToolCalls = append(m.ToolCalls, call.at(at.key(kFunctionCall).key(kArguments), false))
	}
	return m, nil
}

// chatContent reads a chat message's content (at in the body): null, a string, or an
// array of parts.
func chatContent(raw json.RawMessage, at loc) ([]Part, error) {
	if jsonx.IsNull(raw) {
		return nil, nil
	}
	if s, ok := jsonx.SharedString(raw); ok {
		return []Part{textPart(s).at(at)}, nil
	}
	var cps []chatPart
	if err := unmarshal(FamilyChat, "message content", raw, &cps); err != nil {
		return nil, err
	}
	parts := make([]Part, 0, len(cps))
	for i := range cps {
		el := at.idx(i).mark()
		p := chatPartOf(&cps[i])
		switch cps[i].Type {
		case "text":
			el = el.key(kText)
		case "refusal":
			el = el.key(kRefusal)
		}
		parts = append(parts, p.at(el))
	}
	return parts, nil
}

func chatPartOf(cp *chatPart) Part {
	switch cp.Type {
	case "text":
		return textPart(cp.Text)
	case "refusal":
		return textPart(cp.Refusal)
	case "image_url":
		if cp.ImageURL != nil {
			return Part{Modality: classify.Image, URL: cp.ImageURL.URL, MIMEType: mimeOfDataURL(cp.ImageURL.URL)}
		}
	case "input_audio":
		if cp.InputAudio != nil {
			mime := "audio/" + cp.InputAudio.Format
			return Part{Modality: classify.Audio, URL: dataURL(mime, cp.InputAudio.Data), MIMEType: mime}
		}
	case "file":
		if cp.File != nil {
			if d := cp.File.FileData; d != "" {
				if mime := mimeOfDataURL(d); mime != "" {
					return Part{Modality: classify.File, URL: d, MIMEType: mime}
				}
				// Bare base64 data.
				return Part{Modality: classify.File, URL: dataURL("", d)}
			}
			return Part{Modality: classify.File, URL: cp.File.FileID}
		}
	}
	return opaquePart(classify.File, "")
}

// fastChat is readPlainChat, but for FuzzDecodeJSON, which turns it off to run parseChat
// with the reference decoder alone.
var fastChat = readPlainChat

// chatRequestFields and chatMessageFields are the member names decodeRequest reads into a
// chatRequest and a chatMessage.
var (
	chatRequestFields = []string{"model", "messages", "stream", "n", "stream_options", "response_format", "tools", "functions"}
	chatMessageFields = []string{"role", "content", "refusal", "tool_calls", "function_call", "tool_call_id"}
)

// readPlainChat reads the most common chat request — a model, stream, and messages of a
// role and a content, with members the guard does not read — into r without reflection,
// as decodeRequest reads it (FuzzPlainChat, FuzzDecodeJSON). It reports false, r then
// half read, for anything else, which decodeRequest reads or refuses: another member the
// guard reads (tools, n, a message's tool calls…), a member named in another spelling (a
// capital, an escape, a byte beyond ASCII, which encoding/json may fold to a field) or
// named twice, a value of the wrong type, a body that is not valid JSON.
func readPlainChat(body []byte, r *chatRequest) bool {
	tab := jsonx.GetSkipTable()
	defer jsonx.PutSkipTable(tab)
	if !tab.Validate(body) {
		return false
	}
	var scratch []byte
	return plainObject(tab, body, plainChatRead, chatRequestFields, func(i int, v []byte) bool {
		switch i {
		case 0:
			return plainString(v, &r.Model, &scratch)
		case 1:
			switch v[0] {
			case 't':
				r.Stream = true
			case 'f':
				r.Stream = false
			case 'n':
			default:
				return false
			}
			return true
		}
		return plainArray(tab, v, &r.Messages, func(e []byte, m *chatMessage) bool {
			return plainObject(tab, e, plainMessageRead, chatMessageFields, func(i int, v []byte) bool {
				if i == 0 {
					return plainString(v, &m.Role, &scratch)
				}
				m.Content = v
				return true
			})
		})
	})
}

// plainChatRead and plainMessageRead are the members readPlainChat reads, in the order
// its cases name them.
var (
	plainChatRead    = []string{"model", "stream", "messages"}
	plainMessageRead = []string{"role", "content"}
)
