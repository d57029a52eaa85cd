// Package content names the parts of a model's answer the guard judges apart: the answer
// text, the reasoning, each tool call's arguments, and the JSON object of a structured
// answer, per choice. The wire layer decodes responses into these channels and the engine
// judges them under the same names, so the two share this one type.
package content

import "fmt"

// Kind is the kind of a channel.
type Kind uint8

// Channel kinds.
const (
	// Text is the assistant's answer text.
	Text Kind = iota
	// Reasoning is the model's reasoning text (chat reasoning_content/reasoning, Responses
	// reasoning summaries and reasoning text, Anthropic thinking).
	Reasoning
	// ToolCall is the arguments (JSON text) of one tool call; Channel.Index says which.
	ToolCall
	// Object is the answer text of a response with a JSON output format. The engine judges
	// it as a snapshot that each new snapshot replaces.
	Object
)

// String returns the kind as records spell it.
func (k Kind) String() string {
	switch k {
	case Text:
		return "text"
	case Reasoning:
		return "reasoning"
	case ToolCall:
		return "toolCall"
	case Object:
		return "object"
	}
	return fmt.Sprintf("channel(%d)", uint8(k))
}

// Channel identifies one stream of content of a response. Choice is the choice index
// (always 0 but for chat with n > 1). Index tells apart channels of a choice: for chat it
// is the tool call's index (0 for text and reasoning); for Messages it is the content
// block's index; for Responses it numbers the output parts (text parts, reasoning summary
// and text parts, function calls) in the order they appear. Streamed and non-streamed
// responses number channels the same way. A Channel is comparable and used as a map key.
type Channel struct {
	Choice int
	Kind   Kind
	Index  int
}

// String returns the channel as decision records spell it, e.g. "choice[0].text" or
// "choice[0].toolCall[2]": only a tool call's index is spelled.
func (c Channel) String() string {
	if c.Kind == ToolCall {
		return fmt.Sprintf("choice[%d].toolCall[%d]", c.Choice, c.Index)
	}
	return fmt.Sprintf("choice[%d].%s", c.Choice, c.Kind)
}
