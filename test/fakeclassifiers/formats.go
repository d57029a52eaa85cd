package fakeclassifiers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Scores are category scores by name. A value is usually a float64; use Literal for a
// JSON number a float64 cannot hold (1e999) and a string or nil for values of the wrong
// type. Reply helpers panic on a value encoding/json rejects (a NaN float64): that is a
// mistake in the test.
type Scores map[string]any

// Answers are answers by question id; see AnswerProbability and its siblings.
type Answers map[string]any

// Literal is a JSON value sent verbatim, such as the number 1e999.
func Literal(v string) json.RawMessage { return json.RawMessage(v) }

// AnswerProbability is a boolean question's answer.
func AnswerProbability(p any) map[string]any {
	return map[string]any{"type": "answer", "probability": p}
}

// AnswerChoice is a choice question's answer.
func AnswerChoice(c string) map[string]any { return map[string]any{"type": "answer", "choice": c} }

// AnswerScore is a score question's answer.
func AnswerScore(s any) map[string]any { return map[string]any{"type": "answer", "score": s} }

// AnswerRefusal is a refusal to answer.
func AnswerRefusal() map[string]any { return map[string]any{"type": "refusal"} }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakeclassifiers: reply cannot be encoded: %v", err))
	}
	return string(b)
}

// ModerationScores is a /v1/moderations reply with one result per Scores, in order.
// flagged and categories are derived from float64 scores >= 0.5.
func ModerationScores(results ...Scores) Reply {
	type result struct {
		Flagged        bool            `json:"flagged"`
		Categories     map[string]bool `json:"categories"`
		CategoryScores Scores          `json:"category_scores"`
	}
	out := make([]result, len(results))
	for i, s := range results {
		r := result{Categories: map[string]bool{}, CategoryScores: s}
		for name, v := range s {
			f, ok := v.(float64)
			r.Categories[name] = ok && f >= 0.5
			r.Flagged = r.Flagged || r.Categories[name]
		}
		out[i] = r
	}
	return Raw(mustJSON(map[string]any{"id": "modr-fake", "model": "omni-moderation-latest", "results": out}))
}

// JudgeJSON is a chat completion whose message content is v encoded as JSON: category
// scores (Scores) or answers (Answers), as a structured-output judge replies.
func JudgeJSON(v any) Reply { return JudgeText(mustJSON(v)) }

// JudgeText is a chat completion whose message content is content verbatim: a Llama Guard
// verdict ("safe", "unsafe\nS1,S3") or malformed JSON.
func JudgeText(content string) Reply { return chatCompletion(content, nil) }

// JudgeRefusal is a chat completion whose message is a structured-output refusal.
func JudgeRefusal(message string) Reply { return chatCompletion(nil, message) }

func chatCompletion(content, refusal any) Reply {
	return Raw(mustJSON(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake-judge",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content, "refusal": refusal},
			"finish_reason": "stop",
		}},
		"usage": map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	}))
}

// WebhookScores is a webhook reply with scores and, optionally, refused categories.
func WebhookScores(s Scores, refusals ...string) Reply {
	body := map[string]any{"scores": s}
	if len(refusals) > 0 {
		body["refusals"] = refusals
	}
	return Raw(mustJSON(body))
}

// WebhookAnswers is a webhook reply with answers.
func WebhookAnswers(a Answers) Reply { return Raw(mustJSON(map[string]any{"answers": a})) }

// NewModeration returns a fake /v1/moderations endpoint. A request's Texts are its
// inputs: the string, each string of an array, or the text parts of a content-part array
// joined; image_url parts are its Parts.
func NewModeration() *Fake {
	return newFake(func(body []byte, r *Request) error {
		var req struct {
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return err
		}
		var one string
		if json.Unmarshal(req.Input, &one) == nil {
			r.Texts = []string{one}
			return nil
		}
		var many []string
		if json.Unmarshal(req.Input, &many) == nil {
			r.Texts = many
			return nil
		}
		var parts []contentPart
		if err := json.Unmarshal(req.Input, &parts); err != nil {
			return errors.New("input is not a string, strings or content parts")
		}
		text, err := r.addParts(parts)
		r.Texts = []string{text}
		return err
	})
}

// NewJudge returns a fake OpenAI-compatible /v1/chat/completions endpoint. A request's
// System is its system message; its text and parts come from the last user message.
func NewJudge() *Fake {
	return newFake(func(body []byte, r *Request) error {
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return err
		}
		var user json.RawMessage
		for _, m := range req.Messages {
			switch m.Role {
			case "system":
				if err := json.Unmarshal(m.Content, &r.System); err != nil {
					return errors.New("system content is not a string")
				}
			case "user":
				user = m.Content
			}
		}
		if user == nil {
			return errors.New("no user message")
		}
		var text string
		if json.Unmarshal(user, &text) == nil {
			r.Texts = []string{text}
			return nil
		}
		var parts []contentPart
		if err := json.Unmarshal(user, &parts); err != nil {
			return errors.New("user content is not a string or content parts")
		}
		text, err := r.addParts(parts)
		r.Texts = []string{text}
		return err
	})
}

// NewWebhook returns a fake guardrail.dev webhook.
func NewWebhook() *Fake {
	return newFake(func(body []byte, r *Request) error {
		var req struct {
			Text  string `json:"text"`
			Parts []struct {
				Type string `json:"type"`
				URL  string `json:"url"`
			} `json:"parts"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return err
		}
		r.Texts = []string{req.Text}
		for _, p := range req.Parts {
			r.Parts = append(r.Parts, Part{Type: p.Type, URL: p.URL})
		}
		return nil
	})
}

// contentPart is an OpenAI content part.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
	InputAudio struct {
		Data string `json:"data"`
	} `json:"input_audio"`
	File struct {
		FileID   string `json:"file_id"`
		FileData string `json:"file_data"`
	} `json:"file"`
}

// addParts records the media parts and returns the text parts joined.
func (r *Request) addParts(parts []contentPart) (string, error) {
	var text strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			text.WriteString(p.Text)
		case "image_url":
			r.Parts = append(r.Parts, Part{Type: "image", URL: p.ImageURL.URL})
		case "input_audio":
			r.Parts = append(r.Parts, Part{Type: "audio", URL: p.InputAudio.Data})
		case "file":
			r.Parts = append(r.Parts, Part{Type: "file", URL: p.File.FileID + p.File.FileData})
		default:
			return "", fmt.Errorf("unknown content part type %q", p.Type)
		}
	}
	return text.String(), nil
}
