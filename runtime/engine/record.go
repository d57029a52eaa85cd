package engine

import (
	"encoding/json"
	"fmt"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// outcomeOf maps an applied action to its outcome in the guardrail's mode.
func outcomeOf(a policy.Action, mode policy.Mode) guardv1.Outcome {
	if mode == policy.ModeReport {
		switch a {
		case policy.ActionWarn:
			return guardv1.OutcomeWouldWarn
		case policy.ActionRedact:
			return guardv1.OutcomeWouldRedact
		case policy.ActionStrip:
			return guardv1.OutcomeWouldStrip
		case policy.ActionBlock:
			return guardv1.OutcomeWouldBlock
		case policy.ActionPseudonymize:
			return guardv1.OutcomeWouldPseudonymize
		}
		return guardv1.OutcomeAllowed
	}
	switch a {
	case policy.ActionWarn:
		return guardv1.OutcomeWarned
	case policy.ActionRedact:
		return guardv1.OutcomeRedacted
	case policy.ActionStrip:
		return guardv1.OutcomeStripped
	case policy.ActionBlock:
		return guardv1.OutcomeBlocked
	case policy.ActionPseudonymize:
		return guardv1.OutcomePseudonymized
	}
	return guardv1.OutcomeAllowed
}

// FindingKind says what a finding names.
type FindingKind string

// Finding kinds.
const (
	// FindingCategory: a category rule matched; Name is the category id.
	FindingCategory FindingKind = "category"
	// FindingRule: a CEL rule matched; Name is the rule's name.
	FindingRule FindingKind = "rule"
	// FindingNotInspected: a part's modality is selected but the classifier cannot inspect
	// it; Name is the modality.
	FindingNotInspected FindingKind = "notInspected"
)

// Finding is one match of an evaluation. It carries ids and numbers only, never text.
type Finding struct {
	Kind FindingKind `json:"kind"`
	Name string      `json:"name"`
	// Score and Threshold of a category match (score >= threshold); zero for rules.
	Score     float64 `json:"score,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
	// Refused is set when the judge refused to score the category and refusals match.
	Refused bool `json:"refused,omitempty"`
	// Count is, for a Pseudonymize decision, how many values of the category it replaced
	// by placeholders (or would have, in Report mode): a number, never the values.
	Count int `json:"count,omitempty"`
}

// IDs are the identifiers the proxy passes in for decision records.
type IDs struct {
	Pod       string `json:"pod,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	TraceID   string `json:"traceId,omitempty"`
	SpanID    string `json:"spanId,omitempty"`
	Model     string `json:"model,omitempty"`
	// MCPServer is the name of the MCP upstream (--mcp-upstream) whose traffic was judged;
	// empty for model traffic.
	MCPServer string `json:"mcpServer,omitempty"`
}

// Location says what an evaluation judged, without its content: an input message part, a
// response channel, or the tool calls of a choice judged together.
type Location struct {
	// Message and Part index the input (Input phase); -1 otherwise.
	Message, Part int
	// Channel of the response (Stream, Output and ToolCalls phases).
	Channel content.Channel
	// Calls is set when the tool calls of Channel.Choice were judged together.
	Calls bool
}

func inputLocation(m, p int) Location { return Location{Message: m, Part: p} }

func channelLocation(ch content.Channel) Location {
	return Location{Message: -1, Part: -1, Channel: ch}
}

func callsLocation(choice int) Location {
	return Location{Message: -1, Part: -1, Channel: content.Channel{Choice: choice, Kind: content.ToolCall}, Calls: true}
}

// String spells the location, e.g. "message[2].part[0]", "choice[0].text",
// "choice[0].toolCalls".
func (l Location) String() string {
	switch {
	case l.Message >= 0:
		return fmt.Sprintf("message[%d].part[%d]", l.Message, l.Part)
	case l.Calls:
		return fmt.Sprintf("choice[%d].toolCalls", l.Channel.Choice)
	}
	return l.Channel.String()
}

// Record is the decision record of one evaluation. It never contains
// prompt or completion text, category descriptions, media URLs or credentials.
type Record struct {
	Guardrail  string
	Generation int64
	Classifier string
	Phase      policy.Phase
	Where      Location
	Outcome    guardv1.Outcome
	Mode       policy.Mode
	// Findings in the classifier's authored category order, then rules in authored order.
	Findings []Finding
	// Code of an evaluation failure (Outcome failed or notInspected).
	Code classify.Code
	// Duration of the evaluation (the classifier call and the rules).
	Duration time.Duration
	// Escalated: a Strip or Redact acted as Block (a required part, a tool call, a
	// Redact without spans).
	Escalated bool
	// Partial: the content was only partly inspected (maxEvaluations reached, or the text
	// sent was truncated to maxInputChars in a phase that judges a whole text).
	Partial bool
	IDs     IDs
}

// MarshalJSON spells the record with its enums as strings.
func (r Record) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Guardrail  string          `json:"guardrail"`
		Generation int64           `json:"generation"`
		Classifier string          `json:"classifier"`
		Phase      string          `json:"phase"`
		Where      string          `json:"where"`
		Outcome    guardv1.Outcome `json:"outcome"`
		Mode       string          `json:"mode"`
		Findings   []Finding       `json:"findings,omitempty"`
		Code       classify.Code   `json:"code,omitempty"`
		DurationMs float64         `json:"durationMs"`
		Escalated  bool            `json:"escalated,omitempty"`
		Partial    bool            `json:"partial,omitempty"`
		IDs        IDs             `json:"ids"`
	}{r.Guardrail, r.Generation, r.Classifier, r.Phase.String(), r.Where.String(), r.Outcome,
		r.Mode.String(), r.Findings, r.Code, float64(r.Duration) / float64(time.Millisecond),
		r.Escalated, r.Partial, r.IDs})
}
