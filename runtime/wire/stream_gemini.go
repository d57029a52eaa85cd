package wire

import (
	"encoding/json"
	"slices"

	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
	"github.com/guardrail-dev/guardrail-operator/runtime/sse"
)

// geminiChunk is a streamed GenerateContentResponse (data-only SSE events of
// :streamGenerateContent?alt=sse), or an error object.
type geminiChunk struct {
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
				ThoughtSignature json.RawMessage `json:"thoughtSignature"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata json.RawMessage `json:"usageMetadata"`
	ResponseID    json.RawMessage `json:"responseId"`
	ModelVersion  json.RawMessage `json:"modelVersion"`
	Error         *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// geminiCodec is the Gemini API's stream format: data-only events, each a
// GenerateContentResponse whose candidates carry the parts generated since the previous
// one, a finishReason on a candidate's last, and usageMetadata (cumulative) on any. The
// stream has no terminator: it ends with the body, after the chunk with the last
// finishReason. Per candidate, answer text is one Text (or Object) channel, thought text
// one Reasoning channel, and each functionCall (sent whole, never in pieces) a ToolCall
// channel numbered among the candidate's calls.
type geminiCodec struct {
	s *Stream
	// responseID and modelVersion are the template's, as the upstream spelled them.
	responseID, modelVersion []byte
	// open are the text and reasoning channels that have had deltas and not ended.
	open []content.Channel
	// calls counts each candidate's function calls.
	calls map[int]int
	// finished: the upstream finished the candidate; finishSent: the client saw it.
	finished, finishSent map[int]bool
	// usageFinal: usage arrived with or after the last finish, so it is the whole.
	usageFinal bool
	// finishes are the choices the current event finishes (for finishSent).
	finishes []int
	chunk    geminiChunk
}

func newGeminiCodec(s *Stream) *geminiCodec {
	return &geminiCodec{s: s, calls: map[int]int{}, finished: map[int]bool{}, finishSent: map[int]bool{}}
}

func (c *geminiCodec) decode(dst []Item, ev *sse.Event) ([]Item, error) {
	c.chunk = geminiChunk{}
	c.finishes = c.finishes[:0]
	if err := decode(ev.Data, &c.chunk); err != nil {
		return dst, malformed(FamilyGemini, "event: %v", err)
	}
	ch := &c.chunk
	if ch.Error != nil {
		return append(dst, Item{Kind: ItemError, Text: ch.Error.Message}), nil
	}
	if c.responseID == nil && !jsonx.IsNull(ch.ResponseID) {
		c.responseID = append([]byte(nil), ch.ResponseID...)
	}
	if c.modelVersion == nil && !jsonx.IsNull(ch.ModelVersion) {
		c.modelVersion = append([]byte(nil), ch.ModelVersion...)
	}
	if len(ch.Candidates) > MaxChoices {
		return dst, malformed(FamilyGemini, "more than %d candidates", MaxChoices)
	}
	n := len(dst)
	text := content.Text
	if c.s.req.Object {
		text = content.Object
	}
	for pos := range ch.Candidates {
		cand := &ch.Candidates[pos]
		choice := geminiChoice(cand.Index, pos)
		if choice < 0 || choice >= c.s.req.N {
			return dst, malformed(FamilyGemini, "candidate index %d out of range", choice)
		}
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				if p.Text != nil && *p.Text != "" {
					k := text
					if p.Thought {
						k = content.Reasoning
					}
					if c.finished[choice] {
						return dst, malformed(FamilyGemini, "candidate %d has content after its finishReason", choice)
					}
					chn := content.Channel{Choice: choice, Kind: k}
					if !slices.Contains(c.open, chn) {
						c.open = append(c.open, chn)
					}
					dst = append(dst, Item{Kind: ItemDelta, Channel: chn, Text: *p.Text})
				}
				if fc := p.FunctionCall; fc != nil {
					if c.finished[choice] {
						return dst, malformed(FamilyGemini, "candidate %d has content after its finishReason", choice)
					}
					chn := content.Channel{Choice: choice, Kind: content.ToolCall, Index: c.calls[choice]}
					c.calls[choice]++
					call := c.s.call(chn)
					call.id, call.name = fc.ID, fc.Name
					// The part's thought signature goes back with the call: Gemini wants it
					// in the history of the next turn.
					call.item = nil
					if !jsonx.IsNull(p.ThoughtSignature) {
						call.item = append(call.item, p.ThoughtSignature...)
					}
					c.s.startCall(call)
					args := string(fc.Args)
					if jsonx.IsNull(fc.Args) {
						args = "{}"
					}
					dst = append(dst, Item{Kind: ItemToolCallStart, Channel: chn, ID: fc.ID, Name: fc.Name},
						Item{Kind: ItemDelta, Channel: chn, Text: args},
						Item{Kind: ItemChannelEnd, Channel: chn, ID: fc.ID, Name: fc.Name})
				}
			}
		}
		if cand.FinishReason != "" && !c.finished[choice] {
			c.open = slices.DeleteFunc(c.open, func(o content.Channel) bool {
				if o.Choice == choice {
					dst = append(dst, Item{Kind: ItemChannelEnd, Channel: o})
					return true
				}
				return false
			})
			c.finished[choice] = true
			c.finishes = append(c.finishes, choice)
			dst = append(dst, Item{Kind: ItemFinish, Channel: content.Channel{Choice: choice}, Text: cand.FinishReason,
				Final: len(c.finished) == c.s.req.N})
		}
	}
	if !jsonx.IsNull(ch.UsageMetadata) {
		var u geminiUsage
		if err := decode(ch.UsageMetadata, &u); err != nil {
			return dst, malformed(FamilyGemini, "usageMetadata: %v", err)
		}
		dst = append(dst, Item{Kind: ItemUsage, Usage: u.usage()})
		c.s.keepUsage(ch.UsageMetadata)
		c.usageFinal = len(c.finished) == c.s.req.N
	}
	if len(dst) == n {
		dst = append(dst, Item{Kind: ItemPass})
	}
	return dst, nil
}

// rest appends the event as it is, or, when its judged content went out as releases (or
// is withheld), the event without its text and functionCall parts: what is left of it
// (finishReason, safety ratings, other parts, promptFeedback; usageMetadata once a
// candidate finishes) is sent when there is any.
func (c *geminiCodec) rest(dst []byte, ev *sse.Event, stripped bool) ([]byte, error) {
	if !stripped && !c.s.cur.withhold {
		c.sentFinishes()
		return append(dst, ev.Raw...), nil
	}
	o, err := jsonx.ParseObject(ev.Data)
	if err != nil {
		return dst, malformed(FamilyGemini, "event: %v", err)
	}
	left := len(c.finishes) > 0
	if it, ok := jsonx.IterOf(ev.Data, '{'); ok {
		var buf jsonx.KeyBuf
		for {
			key, _, more := it.Member()
			if !more {
				break
			}
			switch string(jsonx.KeyName(key, &buf)) {
			case "candidates", "responseId", "modelVersion", "createTime", "usageMetadata":
			default:
				left = true
			}
		}
	}
	if !jsonx.IsNull(o.Get("candidates")) {
		cands, err := o.Arr("candidates")
		if err != nil {
			return dst, malformed(FamilyGemini, "candidates: %v", err)
		}
		for i, raw := range cands {
			cand, err := jsonx.ParseObject(raw)
			if err != nil {
				return dst, malformed(FamilyGemini, "candidate: %v", err)
			}
			if !jsonx.IsNull(cand.Get("content")) {
				ct, err := cand.Obj("content")
				if err != nil {
					return dst, malformed(FamilyGemini, "content: %v", err)
				}
				parts, err := ct.Arr("parts")
				if err != nil {
					return dst, malformed(FamilyGemini, "parts: %v", err)
				}
				kept := parts[:0]
				for _, praw := range parts {
					p, err := jsonx.ParseObject(praw)
					if err != nil {
						return dst, malformed(FamilyGemini, "part: %v", err)
					}
					switch {
					case p.Has("text") && p.Has("thoughtSignature"):
						// The text went out as releases; the signature stays in its place.
						p.Set("text", []byte(`""`))
						kept = append(kept, p.Bytes())
						continue
					case p.Has("text") || p.Has("functionCall"):
						continue
					}
					kept = append(kept, praw)
				}
				left = left || len(kept) > 0
				ct.Set("parts", jsonx.MarshalArray(kept))
				cand.Set("content", ct.Bytes())
			}
			cands[i] = cand.Bytes()
		}
		o.Set("candidates", jsonx.MarshalArray(cands))
	}
	if !left {
		return dst, nil
	}
	c.sentFinishes()
	return sse.AppendJSONEvent(dst, "", o.Bytes()), nil
}

func (c *geminiCodec) sentFinishes() {
	for _, ch := range c.finishes {
		c.finishSent[ch] = true
	}
}

// appendChunk appends a data event of one candidate with the given parts (JSON array
// elements, comma-separated) and extra candidate members, on the upstream's template.
func (c *geminiCodec) appendChunk(dst []byte, choice int, parts []byte, extra []byte, usage bool) []byte {
	dst = append(dst, `data: {"candidates":[{`...)
	if parts != nil {
		dst = append(dst, `"content":{"parts":[`...)
		dst = append(dst, parts...)
		dst = append(dst, `],"role":"model"},`...)
	}
	dst = append(dst, extra...)
	dst = append(dst, `"index":`...)
	dst = jsonx.AppendInt(dst, choice)
	dst = append(dst, "}]"...)
	if usage && c.s.usage != nil {
		dst = append(dst, `,"usageMetadata":`...)
		dst = append(dst, c.s.usage...)
	}
	if c.modelVersion != nil {
		dst = append(dst, `,"modelVersion":`...)
		dst = append(dst, c.modelVersion...)
	}
	if c.responseID != nil {
		dst = append(dst, `,"responseId":`...)
		dst = append(dst, c.responseID...)
	}
	return append(dst, "}\n\n"...)
}

func (c *geminiCodec) appendDelta(dst []byte, ch content.Channel, text []byte) []byte {
	part := append([]byte(`{"text":`), jsonx.AppendString(nil, text)...)
	if ch.Kind == content.Reasoning {
		part = append(part, `,"thought":true`...)
	}
	return c.appendChunk(dst, ch.Choice, append(part, '}'), nil, false)
}

// appendToolCall appends a chunk with the whole functionCall part (and its thought
// signature).
func (c *geminiCodec) appendToolCall(dst []byte, call *toolCall, args []byte) []byte {
	part := []byte(`{"functionCall":{`)
	if call.id != "" {
		part = append(part, `"id":`...)
		part = jsonx.AppendString(part, call.id)
		part = append(part, ',')
	}
	part = append(part, `"name":`...)
	part = jsonx.AppendString(part, call.name)
	part = append(part, `,"args":`...)
	if len(args) == 0 {
		args = []byte("{}")
	}
	part = append(part, args...)
	part = append(part, '}')
	if call.item != nil {
		part = append(part, `,"thoughtSignature":`...)
		part = append(part, call.item...)
	}
	return c.appendChunk(dst, call.ch.Choice, append(part, '}'), nil, false)
}

// unsent returns the choices whose finish the client has not received.
func (c *geminiCodec) unsent() []int {
	var out []int
	for i := range c.s.req.N {
		if !c.finishSent[i] {
			out = append(out, i)
		}
	}
	return out
}

// appendBlock appends the reason as a text chunk of every candidate the client has not
// seen finish; appendBlockEnd finishes them.
func (c *geminiCodec) appendBlock(dst []byte, reason string, hole *qentry) []byte {
	for _, i := range c.unsent() {
		part := append([]byte(`{"text":`), jsonx.AppendString(nil, c.s.reasonText(i, reason, hole))...)
		dst = c.appendChunk(dst, i, append(part, '}'), nil, false)
	}
	return dst
}

func (c *geminiCodec) awaitsUsage() bool { return !c.usageFinal }

// appendBlockEnd appends the last chunk: finishReason SAFETY with the reason as
// finishMessage on every candidate the client has not seen finish, and the upstream's
// usageMetadata (the last it sent). The stream then ends, as Gemini's streams do.
func (c *geminiCodec) appendBlockEnd(dst []byte) []byte {
	unsent := c.unsent()
	for n, i := range unsent {
		extra := append([]byte(`"finishReason":"`+FinishSafety+`","finishMessage":`), jsonx.AppendString(nil, c.s.blockReason)...)
		dst = c.appendChunk(dst, i, nil, append(extra, ','), n == len(unsent)-1)
		c.finishSent[i] = true
	}
	return dst
}

// appendFailure appends an error chunk in Google's error shape, which @google/genai's
// stream raises as an ApiError with the code as its status.
func (c *geminiCodec) appendFailure(dst []byte, e *APIError) []byte {
	return sse.AppendJSONEvent(dst, "", appendGeminiError(nil, e))
}
