package wire

import (
	"encoding/json"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// FinishSafety is the Gemini finishReason the guard writes when it stops an answer:
// Gemini's own reason for content stopped by a safety filter, which @google/genai and
// the other Gemini SDKs expose as candidates[i].finishReason (FinishReason.SAFETY), the
// counterpart of OpenAI's content_filter and of what gateways map content_filter to.
const FinishSafety = "SAFETY"

type geminiResponse struct {
	Candidates []struct {
		Index   *int `json:"index"`
		Content *struct {
			Parts []struct {
				Text         *string `json:"text"`
				Thought      bool    `json:"thought"`
				FunctionCall *struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *geminiUsage    `json:"usageMetadata"`
	ModelVersion  json.RawMessage `json:"modelVersion"`
}

type geminiUsage struct {
	PromptTokenCount     int64 `json:"promptTokenCount"`
	CandidatesTokenCount int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount   int64 `json:"thoughtsTokenCount"`
}

// usage returns the usage as the guard counts it: thoughts are output tokens (they are
// billed as such).
func (u *geminiUsage) usage() Usage {
	return Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount}
}

// geminiChoice returns a candidate's choice number: its index, else its position.
func geminiChoice(index *int, position int) int {
	if index != nil {
		return *index
	}
	return position
}

// decodeGeminiResponse reads a GenerateContentResponse. Per candidate, the text of its
// text parts is one channel (Text, or Object for a JSON answer; index 0), the text of
// its thought parts one Reasoning channel, and each functionCall a ToolCall channel
// numbered in order among the candidate's calls — as the stream decoder numbers them, so
// that an entity split across two parts is judged whole.
func decodeGeminiResponse(body []byte, object bool) (Response, error) {
	var r geminiResponse
	if err := decodeBody(body, &r); err != nil {
		return Response{}, malformed(FamilyGemini, "response: %v", err)
	}
	if len(r.Candidates) > MaxChoices {
		return Response{}, malformed(FamilyGemini, "more than %d candidates", MaxChoices)
	}
	text := content.Text
	if object {
		text = content.Object
	}
	resp := Response{Model: ModelName(r.ModelVersion)}
	for pos := range r.Candidates {
		c := &r.Candidates[pos]
		choice := geminiChoice(c.Index, pos)
		if choice < 0 || choice >= MaxChoices {
			return Response{}, malformed(FamilyGemini, "candidate index %d out of range", choice)
		}
		var answer, thoughts strings.Builder
		hasAnswer, hasThoughts, calls := false, false, 0
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				switch {
				case p.Text != nil && p.Thought:
					thoughts.WriteString(*p.Text)
					hasThoughts = true
				case p.Text != nil:
					answer.WriteString(*p.Text)
					hasAnswer = true
				}
				if fc := p.FunctionCall; fc != nil {
					args := string(fc.Args)
					if jsonx.IsNull(fc.Args) {
						args = "{}"
					}
					resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Choice: choice, Kind: content.ToolCall, Index: calls},
						Text: args, ID: fc.ID, Name: fc.Name})
					calls++
				}
			}
		}
		if hasThoughts {
			resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Choice: choice, Kind: content.Reasoning}, Text: thoughts.String()})
		}
		if hasAnswer {
			resp.Contents = append(resp.Contents, Content{Channel: content.Channel{Choice: choice, Kind: text}, Text: answer.String()})
		}
		for len(resp.Finish) <= choice {
			resp.Finish = append(resp.Finish, "")
		}
		resp.Finish[choice] = c.FinishReason
	}
	if r.UsageMetadata != nil {
		resp.Usage = r.UsageMetadata.usage()
	}
	return resp, nil
}

// rewriteGeminiResponse writes the channels back: a candidate's answer (or thought) text
// into its first text (or thought) part, the later ones removed (the channel is their
// text joined); a tool call's arguments into its functionCall; dropped contents removed.
func rewriteGeminiResponse(o *jsonx.Object, byChannel map[content.Channel]*Content, finish string) error {
	cands, err := o.Arr("candidates")
	if err != nil {
		return err
	}
	for pos, raw := range cands {
		c, err := jsonx.ParseObject(raw)
		if err != nil {
			return err
		}
		choice := pos
		if n, ok := jsonx.Int(c.Get("index")); ok {
			choice = n
		}
		if finish != "" {
			c.Set("finishReason", jsonx.Quote(finish))
		}
		if jsonx.IsNull(c.Get("content")) {
			cands[pos] = c.Bytes()
			continue
		}
		ct, err := c.Obj("content")
		if err != nil {
			return err
		}
		parts, err := ct.Arr("parts")
		if err != nil {
			return err
		}
		kept := parts[:0]
		answerDone, thoughtDone, calls := false, false, 0
		for _, praw := range parts {
			p, err := jsonx.ParseObject(praw)
			if err != nil {
				return err
			}
			var ch content.Channel
			var done *bool
			switch {
			case p.Has("text") && geminiThought(p):
				ch, done = content.Channel{Choice: choice, Kind: content.Reasoning}, &thoughtDone
			case p.Has("text"):
				ch, done = content.Channel{Choice: choice, Kind: content.Text}, &answerDone
				if byChannel[ch] == nil {
					ch.Kind = content.Object
				}
			case p.Has("functionCall"):
				ch = content.Channel{Choice: choice, Kind: content.ToolCall, Index: calls}
				calls++
			default:
				kept = append(kept, praw)
				continue
			}
			w := byChannel[ch]
			switch {
			case w == nil:
				kept = append(kept, praw)
				continue
			case w.Dropped:
				continue
			case done != nil && *done:
				continue // its text went into the first part
			case done != nil:
				*done = true
				p.Set("text", jsonx.Quote(w.Text))
			default:
				fc, err := p.Obj("functionCall")
				if err != nil {
					return err
				}
				args := json.RawMessage(w.Text)
				if _, err := jsonx.ParseObject(args); err != nil {
					return errToolInput
				}
				fc.Set("args", args)
				p.Set("functionCall", fc.Bytes())
			}
			kept = append(kept, p.Bytes())
		}
		ct.Set("parts", jsonx.MarshalArray(kept))
		c.Set("content", ct.Bytes())
		cands[pos] = c.Bytes()
	}
	o.Set("candidates", jsonx.MarshalArray(cands))
	return nil
}

// geminiThought reports whether a part is a thought (thought: true).
func geminiThought(p *jsonx.Object) bool { return string(p.Get("thought")) == "true" }

// blockGeminiResponse replaces every candidate's content by the reason (after the kept
// text), with finishReason SAFETY and the reason as finishMessage; usageMetadata,
// responseId and modelVersion are kept.
func blockGeminiResponse(o *jsonx.Object, textOf func(int) []byte, reason string) error {
	var cands []json.RawMessage
	if !jsonx.IsNull(o.Get("candidates")) {
		var err error
		if cands, err = o.Arr("candidates"); err != nil {
			return err
		}
	}
	if len(cands) == 0 {
		cands = []json.RawMessage{json.RawMessage(`{"index":0}`)}
	}
	for pos, raw := range cands {
		c, err := jsonx.ParseObject(raw)
		if err != nil {
			return err
		}
		choice := pos
		if n, ok := jsonx.Int(c.Get("index")); ok {
			choice = n
		}
		ct := append(append([]byte(`{"parts":[{"text":`), textOf(choice)...), `}],"role":"model"}`...)
		c.Set("content", ct)
		c.Set("finishReason", []byte(`"`+FinishSafety+`"`))
		c.Set("finishMessage", jsonx.Quote(reason))
		cands[pos] = c.Bytes()
	}
	o.Set("candidates", jsonx.MarshalArray(cands))
	return nil
}
