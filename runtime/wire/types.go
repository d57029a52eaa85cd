package wire

import (
	"fmt"
	"net/http"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
)

// Family is an API family: one provider route with its own request, response and stream
// formats.
type Family uint8

// The guarded API families.
const (
	// FamilyChat is OpenAI POST /v1/chat/completions.
	FamilyChat Family = iota + 1
	// FamilyResponses is OpenAI POST /v1/responses.
	FamilyResponses
	// FamilyEmbeddings is OpenAI POST /v1/embeddings (Input phase only).
	FamilyEmbeddings
	// FamilyMessages is Anthropic POST /v1/messages.
	FamilyMessages
	// FamilyGemini is the Gemini API's POST /v1beta/models/{model}:generateContent and
	// :streamGenerateContent (also under /v1 and /v1alpha): see GeminiCall.
	FamilyGemini
	// FamilyGeminiInput is the Gemini API's POST /v1beta/models/{model}:countTokens,
	// :embedContent and :batchEmbedContents (also under /v1 and /v1alpha), judged on
	// input only, as FamilyEmbeddings is.
	FamilyGeminiInput
)

// String returns the family's route path.
func (f Family) String() string {
	if p := f.Path(); p != "" {
		return p
	}
	return fmt.Sprintf("family(%d)", uint8(f))
}

// Path returns the route of the family, e.g. "/v1/chat/completions".
func (f Family) Path() string {
	switch f {
	case FamilyChat:
		return "/v1/chat/completions"
	case FamilyResponses:
		return "/v1/responses"
	case FamilyEmbeddings:
		return "/v1/embeddings"
	case FamilyMessages:
		return "/v1/messages"
	case FamilyGemini:
		return geminiPath
	case FamilyGeminiInput:
		return geminiInputPath
	}
	return ""
}

// Anthropic reports whether the family speaks Anthropic's formats (errors included).
func (f Family) Anthropic() bool { return f == FamilyMessages }

// Gemini reports whether the family speaks the Gemini API's formats (errors included).
func (f Family) Gemini() bool { return f == FamilyGemini || f == FamilyGeminiInput }

// InputOnly reports whether only the family's requests are judged: its answers (embeddings,
// token counts) hold nothing to judge and pass through as they are.
func (f Family) InputOnly() bool { return f == FamilyEmbeddings || f == FamilyGeminiInput }

// Route returns the family that guards a request, by method and path; ok is false for
// every other route (GET routes such as /v1/models, and unknown POST routes, which the
// proxy passes through or refuses).
func Route(method, path string) (f Family, ok bool) {
	if method != http.MethodPost {
		return 0, false
	}
	for _, f := range []Family{FamilyChat, FamilyResponses, FamilyEmbeddings, FamilyMessages} {
		if path == f.Path() {
			return f, true
		}
	}
	if _, method, ok := GeminiMethod(path); ok {
		if method == GeminiGenerateContent || method == GeminiStreamGenerateContent {
			return FamilyGemini, true
		}
		return FamilyGeminiInput, true
	}
	return 0, false
}

// Part is one content part of a request message. A text part has Modality classify.Text
// and Text; a media part has another modality, URL and, when known, MIMEType.
type Part struct {
	Modality classify.Modality
	Text     string
	// URL is the media reference as the client sent it: an https: URL, a data: URL (inline
	// base64 data is turned into one), or a provider file id.
	URL      string
	MIMEType string
	// ToolCallID is set on the parts of a tool result: the id of the call it answers.
	ToolCallID string
	// Opaque marks content the guard cannot read (embeddings input given as token ids);
	// it has no Text.
	Opaque bool
	// Dropped, set by the caller, removes the part when RewriteRequest rewrites the body;
	// a changed Text replaces the part's text.
	Dropped bool

	loc  loc
	orig string
}

// Media returns the part as the classifier contract passes media.
func (p *Part) Media() classify.Part {
	return classify.Part{Modality: p.Modality, URL: p.URL, MIMEType: p.MIMEType}
}

// Message is one message of a request, in the order the provider sees them. System
// instructions (OpenAI system and developer messages, Responses instructions, Anthropic
// system) are messages with System set, first when the format puts them apart.
type Message struct {
	// Role is the role as the format spells it: system, developer, user, assistant, tool.
	Role   string
	System bool
	Parts  []Part
	// ToolCalls are the tool calls of an assistant message of the conversation history.
	ToolCalls []ToolCall
	// Dropped, set by the caller, removes the message when RewriteRequest rewrites the
	// body.
	Dropped bool

	loc loc
}

// ToolCall is a tool call: a function name and its arguments (JSON text). A changed
// Arguments of a request's tool call replaces them when RewriteRequest rewrites the body.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string

	loc  loc
	orig string
	// raw: the arguments are a JSON value in the body (Anthropic tool_use input), not a
	// string holding JSON.
	raw bool
}

// at returns c with the location of its arguments, remembering them to tell edits apart.
func (c ToolCall) at(l loc, raw bool) ToolCall {
	c.loc, c.orig, c.raw = l, c.Arguments, raw
	return c
}

// Tool is a tool the request declares.
type Tool struct {
	// Type is "function" for function tools, or the provider's built-in tool type.
	Type        string
	Name        string
	Description string
}

// Request is what the guard needs to know of a request.
type Request struct {
	Family Family
	Model  string
	Stream bool
	// N is the number of choices requested (1 unless a chat request sets n).
	N int
	// Object is set when the response is a JSON object (response_format json_object or
	// json_schema, Responses text.format, Anthropic output_format): the answer text is
	// the object channel.
	Object bool
	// IncludeUsage is set when the stream carries usage (chat stream_options.include_usage;
	// always for Responses and Messages).
	IncludeUsage bool
	// Background is set on a Responses request with background: true: the provider answers
	// with a queued response and the answer is collected later (GET /v1/responses/{id}).
	Background bool
	Messages   []Message
	Tools      []Tool
}

// ItemKind is the kind of a stream item.
type ItemKind uint8

// Stream item kinds.
const (
	// ItemPass is an event with nothing to judge: role-only chunks, pings, block starts,
	// annotations, unknown events. Emit forwards it.
	ItemPass ItemKind = iota
	// ItemDelta is text appended to Channel. For the object channel, Snapshot is the
	// whole object so far.
	ItemDelta
	// ItemToolCallStart starts tool call Channel with ID and Name. Tool calls are never
	// forwarded as they stream: Emit sends each one complete when it is released.
	ItemToolCallStart
	// ItemChannelEnd ends Channel: nothing more will be appended. For a tool call, Name
	// and ID are set.
	ItemChannelEnd
	// ItemFinish is the finish reason (Text) of a choice (Channel.Choice); Final is set
	// when every choice has finished.
	ItemFinish
	// ItemUsage is token usage.
	ItemUsage
	// ItemTerminator is the end of the stream ([DONE], message_stop, response.completed
	// and its incomplete/failed variants).
	ItemTerminator
	// ItemError is an error event of the upstream (forwarded unchanged); Text is its
	// message.
	ItemError
)

// String returns the kind's name.
func (k ItemKind) String() string {
	switch k {
	case ItemPass:
		return "pass"
	case ItemDelta:
		return "delta"
	case ItemToolCallStart:
		return "toolCallStart"
	case ItemChannelEnd:
		return "channelEnd"
	case ItemFinish:
		return "finish"
	case ItemUsage:
		return "usage"
	case ItemTerminator:
		return "terminator"
	case ItemError:
		return "error"
	}
	return fmt.Sprintf("item(%d)", uint8(k))
}

// Item is one thing a stream event says.
type Item struct {
	Kind    ItemKind
	Channel content.Channel
	// Text is the delta's text, the finish reason, or the error message.
	Text string
	// Snapshot is the object channel's whole text so far (ItemDelta on content.Object).
	Snapshot string
	// ID and Name of a tool call (ItemToolCallStart, ItemChannelEnd of a tool call).
	ID, Name string
	Usage    Usage
	// Final is set on the ItemFinish of the last choice to finish.
	Final bool
}

// Usage is token usage as the provider reports it.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Release is content the engine released for a channel, to send to the client. Text is
// read during Emit only and may alias the caller's memory. For the object channel,
// Replace is set and Text is the whole object, which replaces what was released before.
type Release struct {
	Channel content.Channel
	Text    []byte
	Replace bool
}

// Content is one channel of a non-streamed response.
type Content struct {
	Channel content.Channel
	// Text is the channel's text; for a tool call, its arguments (JSON text).
	Text string
	// ID and Name of a tool call.
	ID, Name string
	// Dropped, when rewriting a response, removes the content.
	Dropped bool
}

// Response is what the guard needs to know of a non-streamed response.
type Response struct {
	Contents []Content
	// Finish is the finish reason per choice (stop_reason for Messages, the status for
	// Responses).
	Finish []string
	Usage  Usage
	// Model is the model that answered, as the response names it (model; Gemini's
	// modelVersion), "" when it names none (ModelName).
	Model string
}
