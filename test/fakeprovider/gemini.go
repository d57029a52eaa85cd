package fakeprovider

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Gemini API: POST /{version}/models/{model}:generateContent and :streamGenerateContent
// (version v1beta, v1 or v1alpha), streamed as data-only SSE events with ?alt=sse and as
// one JSON array of the same chunks without it; and :countTokens, :embedContent and
// :batchEmbedContents (geminiInputAnswer).

// geminiRoute reads a Gemini route: the model and whether it streams.
func geminiRoute(method, path string) (model string, stream, ok bool) {
	if method != http.MethodPost {
		return "", false, false
	}
	for _, v := range []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"} {
		rest, found := strings.CutPrefix(path, v)
		if !found {
			continue
		}
		model, call, found := strings.Cut(rest, ":")
		switch {
		case !found || model == "" || strings.Contains(model, "/"):
			return "", false, false
		case call == "generateContent":
			return model, false, true
		case call == "streamGenerateContent":
			return model, true, true
		}
	}
	return "", false, false
}

// geminiInputRoute reads a Gemini input-only route of a model: POST
// {version}/models/{model}:countTokens, :embedContent or :batchEmbedContents.
func geminiInputRoute(method, path string) (call string, ok bool) {
	if method != http.MethodPost {
		return "", false
	}
	for _, v := range []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"} {
		rest, found := strings.CutPrefix(path, v)
		if !found {
			continue
		}
		model, call, found := strings.Cut(rest, ":")
		if !found || model == "" || strings.Contains(model, "/") {
			return "", false
		}
		switch call {
		case "countTokens", "embedContent", "batchEmbedContents":
			return call, true
		}
	}
	return "", false
}

// geminiInputAnswer answers countTokens (totalTokens: a token per four bytes of the
// request, at least one), embedContent (one embedding) and batchEmbedContents (one per
// request), as the Gemini API does: none of them reports usage.
func (g *gen) geminiInputAnswer() []byte {
	values := []float64{0.0023064255, -0.009327292, 0.015797347, -0.0077780345}
	switch g.params.geminiInput {
	case "countTokens":
		n := max(len(g.params.geminiBody)/4, 1)
		return mustJSON(map[string]any{"totalTokens": n, "promptTokensDetails": []map[string]any{{"modality": "TEXT", "tokenCount": n}}})
	case "embedContent":
		return mustJSON(map[string]any{"embedding": map[string]any{"values": values}})
	}
	var r struct {
		Requests []json.RawMessage `json:"requests"`
	}
	_ = json.Unmarshal(g.params.geminiBody, &r)
	embeddings := make([]map[string]any, len(r.Requests))
	for i := range embeddings {
		embeddings[i] = map[string]any{"values": values}
	}
	return mustJSON(map[string]any{"embeddings": embeddings})
}

// geminiError is a Google API error body.
func geminiError(status int, e *Error) []byte {
	st := e.Type
	if st == "" {
		st = googleStatus(status)
	}
	return mustJSON(map[string]any{"error": map[string]any{"code": status, "message": e.Message, "status": st}})
}

// googleStatus names an HTTP status as Google's APIs do.
func googleStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

type geminiCandidate struct {
	Content      *geminiContent `json:"content,omitempty"`
	FinishReason string         `json:"finishReason,omitempty"`
	Index        int            `json:"index"`
}

type geminiContent struct {
	Parts []json.RawMessage `json:"parts"`
	Role  string            `json:"role"`
}

type geminiChunk struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

// geminiFinish is a choice's finishReason: STOP unless the script says otherwise (Gemini
// says STOP after function calls too).
func geminiFinish(c *Choice) string {
	if c.Finish != "" {
		return c.Finish
	}
	return "STOP"
}

// geminiPart is the part of a segment with the given text.
func geminiPart(s *segment, text string) json.RawMessage {
	switch s.kind {
	case ReasoningDelta:
		return mustJSON(map[string]any{"text": text, "thought": true})
	case ToolCallStart:
		args := json.RawMessage("{}")
		if json.Valid([]byte(text)) && text != "" {
			args = json.RawMessage(text)
		}
		return mustJSON(map[string]any{"functionCall": map[string]any{"name": s.name, "args": args}})
	}
	return mustJSON(map[string]string{"text": text})
}

func (g *gen) geminiChunk(parts []json.RawMessage, finish string, output int) []byte {
	u := g.usage()
	c := geminiCandidate{FinishReason: finish}
	if len(parts) > 0 {
		c.Content = &geminiContent{Parts: parts, Role: "model"}
	}
	return mustJSON(geminiChunk{Candidates: []geminiCandidate{c},
		UsageMetadata: geminiUsage{PromptTokenCount: u.InputTokens, CandidatesTokenCount: output, TotalTokenCount: u.InputTokens + output},
		ModelVersion:  g.model(), ResponseID: g.id("resp_fake_")})
}

// geminiResponse is a whole GenerateContentResponse.
func (g *gen) geminiResponse() []byte {
	c := g.script.choices(1)[0]
	segs := segments(&c, "call_fake_")
	parts := make([]json.RawMessage, 0, len(segs))
	for k := range segs {
		parts = append(parts, geminiPart(&segs[k], segs[k].text()))
	}
	return g.geminiChunk(parts, geminiFinish(&c), g.usage().OutputTokens)
}

// geminiChunks are the chunks of a stream: one per text or reasoning delta, one per
// function call (Gemini sends calls whole), the finishReason and the whole usage on the
// last.
func (g *gen) geminiChunks() [][]byte {
	c := g.script.choices(1)[0]
	segs := segments(&c, "call_fake_")
	type piece struct {
		part  json.RawMessage
		delta *Delta
	}
	var pieces []piece
	for k := range segs {
		s := &segs[k]
		if s.kind == ToolCallStart {
			pieces = append(pieces, piece{part: geminiPart(s, s.text())})
			continue
		}
		for i := range s.deltas {
			pieces = append(pieces, piece{part: geminiPart(s, s.deltas[i].Text), delta: &s.deltas[i]})
		}
	}
	total := g.usage().OutputTokens
	if len(pieces) == 0 {
		return [][]byte{g.geminiChunk(nil, geminiFinish(&c), total)}
	}
	out := make([][]byte, len(pieces))
	for i, p := range pieces {
		finish, n := "", min(i+1, total)
		if i == len(pieces)-1 {
			finish, n = geminiFinish(&c), total
		}
		out[i] = g.geminiChunk([]json.RawMessage{p.part}, finish, n)
	}
	return out
}

// geminiStream sends the chunks as data-only events.
func (g *gen) geminiStream() {
	c := g.script.choices(1)[0]
	var deltas []*Delta
	for i := range c.Deltas {
		if c.Deltas[i].Kind == TextDelta || c.Deltas[i].Kind == ReasoningDelta {
			deltas = append(deltas, &c.Deltas[i])
		}
	}
	for i, chunk := range g.geminiChunks() {
		var d *Delta
		if i < len(deltas) {
			d = deltas[i]
		}
		if !g.send(g.delayOf(d), sseEvent("", chunk)) {
			return
		}
	}
}

// geminiArray answers a stream asked for without alt=sse: one JSON array of the chunks.
func (g *gen) geminiArray() []byte {
	chunks := g.geminiChunks()
	raw := make([]json.RawMessage, len(chunks))
	for i, c := range chunks {
		raw[i] = c
	}
	return mustJSON(raw)
}
