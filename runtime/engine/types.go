package engine

import (
	"errors"
	"fmt"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Chunk is content released to the client.
type Chunk struct {
	Channel content.Channel
	// Text is the released text, UTF-8, never split inside a character. It aliases memory
	// of the session and is valid only until the next call on the session: copy or write it
	// before calling again.
	Text []byte
	// Replace is true for the object channel: Text is the whole current snapshot, which
	// replaces what was released before. Otherwise Text is appended to the channel.
	Replace bool
}

// VerdictKind tells a guardrail's block from a fail-closed evaluation failure.
type VerdictKind uint8

// Verdict kinds.
const (
	// Blocked: a guardrail blocked the content; the client receives Verdict.Reason
	// (input: HTTP 400 content_policy_violation; output and stream: finish_reason
	// content_filter).
	Blocked VerdictKind = iota + 1
	// Failed: an evaluation failed under failurePolicy Closed; the client receives the fixed
	// FailureMessage with code policy_evaluation_failed (HTTP 500, or an SSE error event).
	Failed
)

// String returns "blocked" or "failed".
func (k VerdictKind) String() string {
	switch k {
	case Blocked:
		return "blocked"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("verdict(%d)", uint8(k))
}

// FailureMessage is the fixed message of a fail-closed evaluation failure.
const FailureMessage = "policy evaluation failed"

// Verdict says why the engine stops a request, a response or a stream. It carries only
// authored text: never classifier output, prompt or completion text.
type Verdict struct {
	Kind VerdictKind
	// Guardrail is the key (namespace/name) of the guardrail that stopped the content.
	Guardrail string
	// Reason is the guardrail's (or the matching rule's) authored reason for a block, or
	// FailureMessage for a failure.
	Reason string
	// Code is the evaluation failure's code (Failed only).
	Code classify.Code
	// Phase where the content was stopped.
	Phase policy.Phase
}

// Step is the engine's answer to one event of a streamed response.
type Step struct {
	// Release is what to send to the client now, in order. Chunks alias session memory
	// (see Chunk.Text).
	Release []Chunk
	// Stop, when set, ends the stream: send Release (empty when the stop comes from this
	// step), then the verdict. Every later call returns the same Stop.
	Stop *Verdict
}

// Part is one content part of an input message. A text part has Modality classify.Text
// and Text; a media part has another modality and Media.
type Part struct {
	Modality classify.Modality
	Text     string
	Media    classify.Part
	// ToolResult marks what a tool returned to the model (a chat tool message, a Responses
	// function_call_output, an Anthropic tool_result block, an MCP tool result): the
	// ToolResults phase judges these parts.
	ToolResult bool
	// Dropped is set on parts a Strip removed; the proxy leaves them out of the request.
	Dropped bool
}

// RoleUser is the role of the caller's own messages; Strip never drops the last remaining
// user part but escalates to Block instead.
const RoleUser = "user"

// Message is one message of the request.
type Message struct {
	Role  string
	Parts []Part
	// Calls are the arguments (JSON text) of the message's tool calls: an assistant
	// message of the conversation history. No guardrail judges them — they are the
	// model's own earlier output — but Pseudonymize masks in them the values it masked
	// elsewhere in the request, which the answer that made them had restored.
	Calls []string
	// Dropped is set when every part of the message was dropped.
	Dropped bool
}

// InputResult is the engine's answer to a request's messages.
type InputResult struct {
	// Stop, when set, refuses the request before the upstream call.
	Stop *Verdict
	// Messages are the messages to send upstream: the input with redactions applied and
	// dropped parts and messages marked. Indices match the input's. Nil when Stop is set.
	Messages []Message
}

// Content is one channel of a non-streamed response.
type Content struct {
	Channel content.Channel
	// Text is the channel's text; for a tool call, its arguments.
	Text string
	// Name is the tool's name (content.ToolCall only).
	Name string
	// Dropped is set on contents a Strip removed.
	Dropped bool
}

// OutputResult is the engine's answer to a non-streamed response.
type OutputResult struct {
	// Stop, when set, replaces the result with the verdict.
	Stop *Verdict
	// Contents are the response's contents with redactions applied and dropped contents
	// marked, in the input's order. With Stop, set only when the tool calls were blocked:
	// the other contents passed the Output phase and may precede the reason.
	Contents []Content
}

// Errors returned for misuse of a session. Evaluation failures are never errors: they are
// verdicts or notInspected records.
var (
	// ErrFinished: the session's stream is finished.
	ErrFinished = errors.New("engine: stream already finished")
	// ErrChannelEnded: the channel was already ended.
	ErrChannelEnded = errors.New("engine: channel already ended")
	// ErrWrongChannel: the call does not fit the channel's kind (Snapshot is for the object
	// channel, EndToolCall for tool calls, Delta for the others).
	ErrWrongChannel = errors.New("engine: call does not fit the channel kind")
)
