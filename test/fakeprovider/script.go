// Package fakeprovider is a fake model provider for tests: an HTTP server that speaks the
// real wire formats of OpenAI (POST /v1/chat/completions, /v1/responses, /v1/embeddings,
// GET /v1/models), Anthropic (POST /v1/messages) and Gemini (POST
// /v1beta/models/{model}:generateContent and :streamGenerateContent, with ?alt=sse as
// SSE, else as one JSON array), streamed and not, from scripts. A Gemini answer is its
// first choice; a tool call is a functionCall part, sent whole.
//
// A Script says what the next response is: choices of text, reasoning and tool call
// deltas, finish reasons, usage, delays between events, an upstream error (as an HTTP
// error in the family's shape, or as an error event in the middle of a stream), a stream
// cut short, or raw bytes (malformed SSE). The provider records every request it
// received (method, path, headers including Authorization and x-api-key, body) and the
// exact bytes of every response it sent, event by event for streams, so that a test can
// compare what its client received; it also reports clients that went away in the middle
// of a stream (their request context was cancelled).
//
// It depends on nothing of the guard, so that tests of the guard compare it with an
// independent implementation of the formats.
package fakeprovider

import (
	"strconv"
	"strings"
	"time"
)

// DeltaKind is what a Delta adds to.
type DeltaKind uint8

// Delta kinds.
const (
	// TextDelta adds answer text.
	TextDelta DeltaKind = iota
	// ReasoningDelta adds reasoning text (chat reasoning_content, Responses reasoning
	// summary, Anthropic thinking).
	ReasoningDelta
	// ToolCallStart starts a tool call with an ID and a Name.
	ToolCallStart
	// ToolArgsDelta adds arguments to the latest tool call.
	ToolArgsDelta
)

// Delta is one streamed event's content.
type Delta struct {
	Kind DeltaKind
	Text string
	// ID and Name of a tool call (ToolCallStart). An empty ID gets a generated one.
	ID, Name string
	// Delay, when set, is waited before this delta instead of the script's Delay.
	Delay time.Duration
}

// Text returns a text delta.
func Text(s string) Delta { return Delta{Kind: TextDelta, Text: s} }

// Reasoning returns a reasoning delta.
func Reasoning(s string) Delta { return Delta{Kind: ReasoningDelta, Text: s} }

// ToolCall returns the start of a tool call; its arguments follow as ToolArgs deltas.
func ToolCall(id, name string) Delta { return Delta{Kind: ToolCallStart, ID: id, Name: name} }

// ToolArgs returns a delta of the latest tool call's arguments.
func ToolArgs(s string) Delta { return Delta{Kind: ToolArgsDelta, Text: s} }

// Texts returns one text delta per string.
func Texts(parts ...string) []Delta {
	ds := make([]Delta, len(parts))
	for i, p := range parts {
		ds[i] = Text(p)
	}
	return ds
}

// Chunks splits s into text deltas of at most size bytes (never inside a UTF-8
// character).
func Chunks(s string, size int) []Delta {
	var ds []Delta
	for len(s) > 0 {
		n := min(max(size, 1), len(s))
		for n < len(s) && n > 0 && s[n]&0xC0 == 0x80 {
			n--
		}
		if n == 0 {
			n = len(s)
		}
		ds = append(ds, Text(s[:n]))
		s = s[n:]
	}
	return ds
}

// Choice is one choice of a response.
type Choice struct {
	Deltas []Delta
	// Finish is the finish reason as the family spells it (chat finish_reason, Anthropic
	// stop_reason, Responses status); empty means the natural one: stop / end_turn /
	// completed, or tool_calls / tool_use when the choice calls a tool.
	Finish string
}

// Usage is token usage; a zero Usage in a Script means a usage computed from the
// request and the deltas.
type Usage struct {
	InputTokens, OutputTokens int
}

// Error is an upstream error.
type Error struct {
	// Status is the HTTP status (an error response); mid-stream errors ignore it.
	Status int
	// Type is the error type (invalid_request_error, server_error, overloaded_error, ...).
	Type    string
	Message string
	// Code is the OpenAI error code (null when empty).
	Code string
}

// Script is what the provider answers to one request.
type Script struct {
	// Choices default to one choice with DefaultText. Only chat streams more than one
	// choice; the other families answer the first.
	Choices []Choice
	Usage   Usage
	// Model overrides the model the response names (the request's by default).
	Model string
	// Delay is waited before each event of a stream (after the headers).
	Delay time.Duration
	// HeaderDelay is waited before the response headers.
	HeaderDelay time.Duration
	// Error answers the request with this HTTP error in the family's shape.
	Error *Error
	// StreamError sends this error as the family's error event after ErrorAfter events
	// of a stream, then ends the stream.
	StreamError *Error
	ErrorAfter  int
	// CutAfter, when > 0, ends a stream abruptly after that many events: no terminator.
	CutAfter int
	// Raw, when set, is sent as the response body as it is (split into RawChunks pieces
	// with Delay between them when RawChunks > 1), with the content type of the request
	// (event-stream for streams, JSON otherwise): for malformed SSE and bodies.
	Raw       []byte
	RawChunks int
	// Status overrides the HTTP status of a successful response (200).
	Status int
}

// DefaultText is the answer of a script without choices.
const DefaultText = "Hello from the fake provider."

// Reply returns a script answering text in deltas of the given parts.
func Reply(parts ...string) Script { return Script{Choices: []Choice{{Deltas: Texts(parts...)}}} }

// choices returns the script's choices, at least n of them (repeating them for chat with
// n > 1).
func (s *Script) choices(n int) []Choice {
	base := s.Choices
	if len(base) == 0 {
		base = []Choice{{Deltas: Texts(DefaultText)}}
	}
	cs := append([]Choice(nil), base...)
	for len(cs) < n {
		cs = append(cs, base[len(cs)%len(base)])
	}
	return cs
}

// segment is a run of deltas that forms one output item or content block: text,
// reasoning, or one tool call.
type segment struct {
	kind     DeltaKind
	deltas   []Delta
	id, name string
}

// text returns the segment's whole text (a tool call's arguments).
func (g *segment) text() string {
	var b strings.Builder
	for _, d := range g.deltas {
		b.WriteString(d.Text)
	}
	return b.String()
}

// segments groups a choice's deltas: consecutive text or reasoning deltas, and each tool
// call with its arguments. Tool calls without an ID get prefix + a number.
func segments(c *Choice, prefix string) []segment {
	var segs []segment
	calls := 0
	for _, d := range c.Deltas {
		last := len(segs) - 1
		switch {
		case d.Kind == ToolCallStart:
			id := d.ID
			if id == "" {
				id = prefix + strconv.Itoa(calls)
			}
			calls++
			segs = append(segs, segment{kind: ToolCallStart, id: id, name: d.Name})
		case d.Kind == ToolArgsDelta && last >= 0 && segs[last].kind == ToolCallStart:
			segs[last].deltas = append(segs[last].deltas, d)
		case d.Kind == ToolArgsDelta:
			segs = append(segs, segment{kind: ToolCallStart, id: prefix + strconv.Itoa(calls), name: "tool", deltas: []Delta{d}})
			calls++
		case last >= 0 && segs[last].kind == d.Kind:
			segs[last].deltas = append(segs[last].deltas, d)
		default:
			segs = append(segs, segment{kind: d.Kind, deltas: []Delta{d}})
		}
	}
	return segs
}

// hasToolCall reports whether a choice calls a tool.
func hasToolCall(c *Choice) bool {
	for _, d := range c.Deltas {
		if d.Kind == ToolCallStart || d.Kind == ToolArgsDelta {
			return true
		}
	}
	return false
}

// outputTokens estimates output tokens: a token per delta.
func outputTokens(cs []Choice) int {
	n := 0
	for i := range cs {
		n += len(cs[i].Deltas)
	}
	return n
}
