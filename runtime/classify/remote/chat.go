package remote

import (
	"encoding/json"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// This file is the OpenAI-compatible /v1/chat/completions wire format the LLM judge
// speaks: the request envelope, content parts for media, and the reply envelope.

// chatRequest is the body of a chat completions request.
type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
}

// chatMessage is a message; Content is a string or an array of content parts.
type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// chatPart is a content part of a user message.
type chatPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	ImageURL   *imageURL   `json:"image_url,omitempty"`
	InputAudio *inputAudio `json:"input_audio,omitempty"`
	File       *filePart   `json:"file,omitempty"`
}

type inputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type filePart struct {
	FileID   string `json:"file_id,omitempty"`
	FileData string `json:"file_data,omitempty"`
}

// userContent is the content of the user message judging text and parts: the text alone
// as a string, or an array of a text part and one standard part per medium. Media are
// passed by reference, never fetched: an image by its URL (https or data), audio as the
// base64 data of a data URL (input_audio takes no URL), a file as a data URL (file_data)
// or a file id (file_id). Audio or a file by https URL has no chat completions encoding
// and is unsupported.
func userContent(text string, parts []classify.Part) (any, error) {
	if len(parts) == 0 {
		return text, nil
	}
	out := make([]chatPart, 0, len(parts)+1)
	if text != "" {
		out = append(out, chatPart{Type: "text", Text: text})
	}
	for _, p := range parts {
		switch p.Modality {
		case classify.Image:
			out = append(out, chatPart{Type: "image_url", ImageURL: &imageURL{URL: p.URL}})
		case classify.Audio:
			mime, data, ok := base64DataURL(p.URL)
			if !ok {
				return nil, classify.Errorf(classify.CodeUnsupported, "audio is sent to a judge as a base64 data URL only")
			}
			if mime == "" {
				mime = p.MIMEType
			}
			out = append(out, chatPart{Type: "input_audio", InputAudio: &inputAudio{Data: data, Format: audioFormat(mime)}})
		case classify.File:
			switch {
			case strings.HasPrefix(p.URL, "data:"):
				out = append(out, chatPart{Type: "file", File: &filePart{FileData: p.URL}})
			case p.URL != "" && !strings.Contains(p.URL, ":"):
				out = append(out, chatPart{Type: "file", File: &filePart{FileID: p.URL}})
			default:
				return nil, classify.Errorf(classify.CodeUnsupported, "a file is sent to a judge as a data URL or a file id only")
			}
		default:
			return nil, classify.Errorf(classify.CodeUnsupported, "a judge cannot inspect %s", p.Modality)
		}
	}
	return out, nil
}

// base64DataURL splits data:<mime>;base64,<data>.
func base64DataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mime, found = strings.CutSuffix(meta, ";base64")
	return mime, data, found
}

// audioFormat is input_audio's format for a media type: wav, mp3, or the subtype.
func audioFormat(mime string) string {
	mime, _, _ = strings.Cut(mime, ";")
	switch strings.ToLower(strings.TrimSpace(mime)) {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	if _, sub, ok := strings.Cut(mime, "/"); ok && sub != "" {
		return sub
	}
	return "wav"
}

// chatResponse is the part of a chat completions reply the judge reads.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			// Refusal is set by OpenAI structured outputs when the model refuses.
			Refusal *string `json:"refusal"`
		} `json:"message"`
	} `json:"choices"`
}

// parseChat returns the content of the first choice, or refused when the model refused.
func parseChat(body []byte) (content string, refused bool, err error) {
	var resp chatResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return "", false, invalid("judge reply is not valid JSON of the chat completions format")
	}
	if len(resp.Choices) == 0 {
		return "", false, invalid("judge reply has no choices")
	}
	msg := resp.Choices[0].Message
	if msg.Refusal != nil && *msg.Refusal != "" {
		return "", true, nil
	}
	if msg.Content == nil {
		return "", false, invalid("judge reply has no content")
	}
	return *msg.Content, false, nil
}
