package fakeprovider

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// whole answers a non-streamed request of the family.
func (g *gen) whole() []byte {
	switch g.fam {
	case familyChat:
		return g.chatCompletion()
	case familyResponses:
		return mustJSON(g.response("completed", g.responseOutput()))
	case familyMessages:
		return g.message()
	case familyGemini:
		return g.geminiResponse()
	}
	panic(errUnknownFamily)
}

// stream answers a streamed request of the family.
func (g *gen) stream() {
	switch g.fam {
	case familyChat:
		g.chatStream()
	case familyResponses:
		g.responsesStream()
	case familyMessages:
		g.messagesStream()
	case familyGemini:
		g.geminiStream()
	default:
		panic(errUnknownFamily)
	}
}

func (g *gen) usage() Usage {
	u := g.script.Usage
	if u == (Usage{}) {
		u = Usage{InputTokens: 12, OutputTokens: outputTokens(g.script.choices(1))}
	}
	return u
}

func (g *gen) id(prefix string) string { return prefix + strconv.Itoa(g.seq) }

// openAIError is an OpenAI error body.
func openAIError(e *Error) []byte {
	return mustJSON(struct {
		Error openAIErrorObject `json:"error"`
	}{openAIErrorOf(e)})
}

type openAIErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func openAIErrorOf(e *Error) openAIErrorObject {
	o := openAIErrorObject{Message: e.Message, Type: e.Type}
	if o.Type == "" {
		o.Type = "server_error"
	}
	if e.Code != "" {
		o.Code = &e.Code
	}
	return o
}

// errorEvent is the family's mid-stream error event.
func (g *gen) errorEvent(e *Error) []byte {
	switch g.fam {
	case familyGemini:
		return sseEvent("", geminiError(http.StatusInternalServerError, e))
	case familyMessages:
		typ := e.Type
		if typ == "" {
			typ = "overloaded_error"
		}
		return sseEvent("error", mustJSON(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": e.Message}}))
	case familyResponses:
		o := openAIErrorOf(e)
		return sseEvent("error", mustJSON(struct {
			Type     string  `json:"type"`
			Sequence int     `json:"sequence_number"`
			Code     *string `json:"code"`
			Message  string  `json:"message"`
			Param    *string `json:"param"`
		}{"error", g.events, o.Code, o.Message, nil}))
	}
	return sseEvent("", openAIError(e))
}

// Chat completions.

type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int               `json:"created"`
	Model             string            `json:"model"`
	ServiceTier       string            `json:"service_tier"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	Usage             json.RawMessage   `json:"usage,omitempty"`
	Obfuscation       string            `json:"obfuscation,omitempty"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

type chatToolCall struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (g *gen) chatUsage() chatUsage {
	u := g.usage()
	return chatUsage{u.InputTokens, u.OutputTokens, u.InputTokens + u.OutputTokens}
}

func (g *gen) chunk(choices []chatChunkChoice) []byte {
	c := chatChunk{ID: g.id("chatcmpl-fake-"), Object: "chat.completion.chunk", Created: created, Model: g.model(),
		ServiceTier: "default", SystemFingerprint: "fp_fake", Choices: choices}
	if g.params.StreamOptions.IncludeUsage {
		c.Usage = json.RawMessage("null")
	}
	if o := g.params.StreamOptions.IncludeObfuscation; o == nil || *o {
		c.Obfuscation = g.padding()
	}
	return sseEvent("", mustJSON(c))
}

// padding is an obfuscation value as OpenAI sends by default: random characters, a
// different number in each chunk (here from the chunk's sequence number, so that runs
// repeat).
func (g *gen) padding() string {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	x := uint32(g.events)*2654435761 + 12345
	b := make([]byte, 1+x%12)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = letters[(x>>24)%uint32(len(letters))]
	}
	return string(b)
}

func chatFinish(c *Choice) string {
	switch {
	case c.Finish != "":
		return c.Finish
	case hasToolCall(c):
		return "tool_calls"
	}
	return "stop"
}

// chatStream sends a role chunk per choice, the deltas of the choices in turn, a finish
// chunk per choice, the usage chunk when asked, and [DONE].
func (g *gen) chatStream() {
	choices := g.script.choices(max(g.params.N, 1))
	empty := ""
	for i := range choices {
		if !g.send(g.script.Delay, g.chunk([]chatChunkChoice{{Index: i, Delta: chatDelta{Role: "assistant", Content: &empty}}})) {
			return
		}
	}
	calls := make([]int, len(choices))
	longest := 0
	for i := range choices {
		longest = max(longest, len(choices[i].Deltas))
	}
	for k := range longest {
		for i := range choices {
			if k >= len(choices[i].Deltas) {
				continue
			}
			d := &choices[i].Deltas[k]
			var delta chatDelta
			switch d.Kind {
			case TextDelta:
				delta.Content = &d.Text
			case ReasoningDelta:
				delta.ReasoningContent = d.Text
			case ToolCallStart:
				id := d.ID
				if id == "" {
					id = "call_fake_" + strconv.Itoa(calls[i])
				}
				delta.ToolCalls = []chatToolCall{{Index: calls[i], ID: id, Type: "function", Function: chatFunction{Name: d.Name}}}
				calls[i]++
			case ToolArgsDelta:
				delta.ToolCalls = []chatToolCall{{Index: max(calls[i]-1, 0), Function: chatFunction{Arguments: d.Text}}}
			}
			if !g.send(g.delayOf(d), g.chunk([]chatChunkChoice{{Index: i, Delta: delta}})) {
				return
			}
		}
	}
	for i := range choices {
		reason := chatFinish(&choices[i])
		if !g.send(g.script.Delay, g.chunk([]chatChunkChoice{{Index: i, FinishReason: &reason}})) {
			return
		}
	}
	if g.params.StreamOptions.IncludeUsage {
		c := chatChunk{ID: g.id("chatcmpl-fake-"), Object: "chat.completion.chunk", Created: created, Model: g.model(),
			ServiceTier: "default", SystemFingerprint: "fp_fake", Choices: []chatChunkChoice{}, Usage: mustJSON(g.chatUsage())}
		if !g.send(g.script.Delay, sseEvent("", mustJSON(c))) {
			return
		}
	}
	g.send(g.script.Delay, []byte("data: [DONE]\n\n"))
}

// chatCompletion is a whole chat.completion.
func (g *gen) chatCompletion() []byte {
	type message struct {
		Role             string            `json:"role"`
		Content          *string           `json:"content"`
		Refusal          *string           `json:"refusal"`
		ReasoningContent string            `json:"reasoning_content,omitempty"`
		ToolCalls        []chatToolCall    `json:"tool_calls,omitempty"`
		Annotations      []json.RawMessage `json:"annotations"`
	}
	type choice struct {
		Index        int       `json:"index"`
		Message      message   `json:"message"`
		Logprobs     *struct{} `json:"logprobs"`
		FinishReason string    `json:"finish_reason"`
	}
	var out []choice
	for i, c := range g.script.choices(max(g.params.N, 1)) {
		m := message{Role: "assistant", Annotations: []json.RawMessage{}}
		var text string
		hasText := false
		for _, s := range segments(&c, "call_fake_") {
			switch s.kind {
			case TextDelta:
				text += s.text()
				hasText = true
			case ReasoningDelta:
				m.ReasoningContent += s.text()
			case ToolCallStart:
				m.ToolCalls = append(m.ToolCalls, chatToolCall{ID: s.id, Type: "function", Function: chatFunction{Name: s.name, Arguments: s.text()}})
			}
		}
		if hasText {
			m.Content = &text
		}
		out = append(out, choice{Index: i, Message: m, FinishReason: chatFinish(&c)})
	}
	return mustJSON(struct {
		ID                string    `json:"id"`
		Object            string    `json:"object"`
		Created           int       `json:"created"`
		Model             string    `json:"model"`
		Choices           []choice  `json:"choices"`
		Usage             chatUsage `json:"usage"`
		ServiceTier       string    `json:"service_tier"`
		SystemFingerprint string    `json:"system_fingerprint"`
	}{g.id("chatcmpl-fake-"), "chat.completion", created, g.model(), out, g.chatUsage(), "default", "fp_fake"})
}

// Embeddings.

func (g *gen) embeddings() []byte {
	n := 1
	var items []json.RawMessage
	if json.Unmarshal(g.params.Input, &items) == nil && len(items) > 0 {
		if c := items[0]; len(c) > 0 && (c[0] == '"' || c[0] == '[') {
			n = len(items)
		}
	}
	type embedding struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	data := make([]embedding, n)
	for i := range data {
		data[i] = embedding{Object: "embedding", Index: i, Embedding: []float64{0.0023064255, -0.009327292, 0.015797347, -0.0077780345}}
	}
	u := g.usage()
	return mustJSON(struct {
		Object string      `json:"object"`
		Data   []embedding `json:"data"`
		Model  string      `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Data: data, Model: g.model(), Usage: struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}{u.InputTokens, u.InputTokens}})
}
