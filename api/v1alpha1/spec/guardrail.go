package spec

// Mode says whether a guardrail enforces its decisions or only reports them.
// +kubebuilder:validation:Enum=Enforce;Report
type Mode string

// Modes.
const (
	// ModeEnforce blocks, strips, redacts and withholds content as decided.
	ModeEnforce Mode = "Enforce"
	// ModeReport records what would have happened (wouldBlock, wouldStrip, ...) and leaves
	// content untouched. Evaluation failures are still governed by failurePolicy.
	ModeReport Mode = "Report"
)

// Phase is a boundary of an LLM call where a guardrail judges content.
// +kubebuilder:validation:Enum=Input;Stream;Output;ToolCalls;ToolResults
type Phase string

// Phases.
const (
	// PhaseInput judges the request's messages before the upstream call.
	PhaseInput Phase = "Input"
	// PhaseStream judges a streamed response as it arrives, per channel, at the cadence of
	// spec.streaming.
	PhaseStream Phase = "Stream"
	// PhaseOutput judges the final result: a whole non-streamed response, or each streamed
	// channel at its end.
	PhaseOutput Phase = "Output"
	// PhaseToolCalls judges each tool call the model requests, alone and then together.
	PhaseToolCalls Phase = "ToolCalls"
	// PhaseToolResults judges what tools return to the model before the model sees it:
	// chat tool messages, Responses function_call_output items, Anthropic tool_result
	// blocks, and MCP tool results and tool descriptions. spec.messages selects the
	// newest results (Last: those after the last assistant message) or all of them.
	PhaseToolResults Phase = "ToolResults"
)

// Action is what happens to content that matches.
// +kubebuilder:validation:Enum=Block;Warn;Strip;Redact;Pseudonymize
type Action string

// Actions, strongest first.
const (
	// ActionBlock refuses the request, ends the stream or replaces the result with reason.
	ActionBlock Action = "Block"
	// ActionStrip drops the offending part, message or held-back chunk; on a required part
	// it escalates to Block.
	ActionStrip Action = "Strip"
	// ActionRedact replaces matched spans with [REDACTED:<category>]; needs a classifier
	// that returns spans (builtin).
	ActionRedact Action = "Redact"
	// ActionPseudonymize replaces each matched span with a placeholder naming its category
	// and a number (<EMAIL_1>), the same value with the same placeholder throughout the
	// request, and restores the values in the answer before the client receives it. The
	// mapping stays in the guard's memory for that one request. Input and ToolResults
	// phases only; needs a classifier that returns spans (builtin).
	ActionPseudonymize Action = "Pseudonymize"
	// ActionWarn passes the content, records a warning and names the guardrail in the
	// x-guardrail-warnings response header.
	ActionWarn Action = "Warn"
)

// RuleAction is what happens when a CEL rule matches. Redact needs category spans and is
// not available to rules.
// +kubebuilder:validation:Enum=Block;Warn;Strip
type RuleAction string

// RefusalPolicy says whether a refused category counts as a match.
// +kubebuilder:validation:Enum=Match;Ignore
type RefusalPolicy string

// Refusal policies.
const (
	RefusalMatch  RefusalPolicy = "Match"
	RefusalIgnore RefusalPolicy = "Ignore"
)

// UnsupportedPolicy is what happens to a part whose modality is selected but that the
// classifier cannot inspect.
// +kubebuilder:validation:Enum=Block;Warn;Allow
type UnsupportedPolicy string

// Unsupported policies.
const (
	UnsupportedBlock UnsupportedPolicy = "Block"
	UnsupportedWarn  UnsupportedPolicy = "Warn"
	// UnsupportedAllow passes the part and records a notInspected finding.
	UnsupportedAllow UnsupportedPolicy = "Allow"
)

// FailurePolicy is what happens when an evaluation fails (error, timeout, invalid answer).
// +kubebuilder:validation:Enum=Closed;Open
type FailurePolicy string

// Failure policies.
const (
	// FailClosed refuses the request, aborts the stream, or answers "policy evaluation
	// failed"; no content beyond what was already released.
	FailClosed FailurePolicy = "Closed"
	// FailOpen passes the content and records the decision as notInspected.
	FailOpen FailurePolicy = "Open"
)

// MessageScope says which input messages are judged.
// +kubebuilder:validation:Enum=Last;All
type MessageScope string

// Message scopes.
const (
	MessagesLast MessageScope = "Last"
	MessagesAll  MessageScope = "All"
)

// Segmentation says what text a streaming evaluation sends.
// +kubebuilder:validation:Enum=Cumulative;Sentences
type Segmentation string

// Segmentations.
const (
	// SegmentCumulative sends the channel's accumulated text.
	SegmentCumulative Segmentation = "Cumulative"
	// SegmentSentences sends complete sentences plus one sentence of overlap.
	SegmentSentences Segmentation = "Sentences"
)

// HoldBackUnbounded is the holdBackChars value that buffers a whole channel until its
// terminal evaluation passes.
const HoldBackUnbounded = "Unbounded"

// GuardrailSpec says what is enforced where.
// +kubebuilder:validation:XValidation:rule="has(self.threshold) || (has(self.rules) && size(self.rules) > 0)",message="a guardrail needs a rule: set spec.threshold and spec.action (category rules) or spec.rules (CEL rules)",fieldPath=.rules
// +kubebuilder:validation:XValidation:rule="has(self.threshold) || !(has(self.categories) || has(self.thresholds) || has(self.action))",message="spec.threshold is required when category rules are used (spec.categories, spec.thresholds or spec.action is set)",fieldPath=.threshold
// +kubebuilder:validation:XValidation:rule="has(self.threshold) == has(self.action)",message="spec.action is required with spec.threshold: it says what a category match does",fieldPath=.action
// +kubebuilder:validation:XValidation:rule="!has(self.categories) || !has(self.thresholds) || self.thresholds.all(t, t.category in self.categories)",message="every category of spec.thresholds must be listed in spec.categories",fieldPath=.thresholds
// +kubebuilder:validation:XValidation:rule="!has(self.streaming) || 'Stream' in self.phases",message="spec.streaming applies to the Stream phase: add Stream to spec.phases or remove spec.streaming",fieldPath=.streaming
// +kubebuilder:validation:XValidation:rule="!has(self.action) || self.action != 'Pseudonymize' || (has(self.phases) && self.phases.all(p, p in ['Input', 'ToolResults']))",message="action Pseudonymize applies to the Input and ToolResults phases only: set spec.phases to [Input], [ToolResults] or both (the answer is restored, not judged, by it)",fieldPath=.phases
type GuardrailSpec struct {
	// mode is Enforce (act on decisions) or Report (record what would have happened and
	// leave content untouched). Roll a new policy out in Report, then switch to Enforce.
	// +required
	Mode Mode `json:"mode"`

	// selector selects pods in this namespace by label (matchLabels and matchExpressions,
	// as in a Deployment). Empty or unset selects every injected pod of the namespace. (A
	// ClusterGuardrail's selects pods in the namespaces its namespaceSelector selects.)
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`

	// classifierRef names the Classifier, in this namespace, that judges content. (A
	// ClusterGuardrail's names a ClusterClassifier.)
	// +required
	ClassifierRef LocalObjectReference `json:"classifierRef"`

	// phases where content is judged: one or more of Input, Stream, Output, ToolCalls and
	// ToolResults. Defaults to [Input, Output].
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:default={Input,Output}
	Phases []Phase `json:"phases,omitempty"`

	// modalities: which part kinds are inspected, one or more of text, image, audio and
	// file. A kind not listed makes no classifier call and is allowed with no finding.
	// Defaults to [text].
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:default={text}
	Modalities []Modality `json:"modalities,omitempty"`

	// categories restricts category rules to a subset of the classifier's categories.
	// Unset means all of them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Categories []string `json:"categories,omitempty"`

	// threshold a category's score must reach to match, a number from 0 to 1:
	// score >= threshold (equality matches). Required when category rules are used.
	// +optional
	Threshold *Score `json:"threshold,omitempty"`

	// thresholds overrides threshold for single categories. A list of named entries rather
	// than a map, as Kubernetes API conventions prefer, so each entry is validated by the
	// schema.
	// +optional
	// +listType=map
	// +listMapKey=category
	// +kubebuilder:validation:MaxItems=64
	Thresholds []CategoryThreshold `json:"thresholds,omitempty"`

	// refusal says whether a category the judge refused to score counts as a match (Match)
	// or not (Ignore). Defaults to Match.
	// +optional
	// +kubebuilder:default=Match
	Refusal RefusalPolicy `json:"refusal,omitempty"`

	// action taken when a category matches: Block, Warn, Strip, Redact or Pseudonymize.
	// Redact and Pseudonymize need a classifier that returns spans (builtin); Pseudonymize
	// applies to the Input and ToolResults phases only and judges every message whatever
	// spec.messages says.
	// +optional
	Action Action `json:"action,omitempty"`

	// rules are CEL expressions over the judge's answers (answers.<question>.type,
	// .probability, .choice, .score) and category scores (scores['<category>']), each with
	// its own action. They are compiled and type-checked when the Guardrail is reconciled.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Rules []Rule `json:"rules,omitempty"`

	// reason is the message a blocked caller receives. It is always authored here:
	// classifier- or provider-generated text never reaches the caller.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`

	// unsupported is what happens to a part whose modality is selected but that the
	// classifier cannot inspect: Block, Warn, or Allow (with a notInspected finding).
	// Unset makes it an evaluation failure with code UNSUPPORTED, governed by failurePolicy.
	// +optional
	Unsupported UnsupportedPolicy `json:"unsupported,omitempty"`

	// failurePolicy is Closed (refuse or abort when an evaluation fails) or Open (pass the
	// content and record notInspected). Defaults to Closed.
	// +optional
	// +kubebuilder:default=Closed
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`

	// timeout bounds each evaluation: a positive duration such as 500ms, 2s or 1m30s.
	// Unset means unbounded.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|μs|ms|s|m|h)){1,4}$') && duration(self) > duration('0s')",message="must be a positive duration such as 500ms, 2s or 1m30s: up to 4 parts, each a number of at most 5 digits and a unit (ns, us, ms, s, m or h)"
	Timeout *Duration `json:"timeout,omitempty"`

	// messages says which input messages are judged: Last or All. Defaults to Last. In the
	// ToolResults phase, Last judges the tool results after the last assistant message (the
	// newest step of an agent loop) and All every tool result of the conversation.
	// +optional
	// +kubebuilder:default=Last
	Messages MessageScope `json:"messages,omitempty"`

	// maxInputChars truncates the text sent to the classifier for this guardrail.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxInputChars *int32 `json:"maxInputChars,omitempty"`

	// streaming sets the cadence and hold-back of the Stream phase.
	// +optional
	Streaming *StreamingSpec `json:"streaming,omitempty"`

	// priority orders sanitizing guardrails (those with a Strip or Redact action), lowest
	// first, then by name; each sees the previous one's output. Unset means 0.
	// +optional
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	Priority *int32 `json:"priority,omitempty"`
}

// CategoryThreshold overrides the threshold of one category.
type CategoryThreshold struct {
	// category id, as listed by the classifier.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Category string `json:"category"`

	// threshold of this category, a number from 0 to 1: it matches when
	// score >= threshold.
	// +required
	Threshold Score `json:"threshold"`
}

// Rule is a CEL rule over the judge's answers and scores.
type Rule struct {
	// name of the rule, reported in findings.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// expression is a CEL expression that evaluates to a bool; true means the rule matches.
	// It sees answers (a map from question id to {type, probability, choice, score}; the
	// numeric fields of a refusal read as 0) and scores (a map from category id to double),
	// with CEL's standard library but for type(), dyn(), bytes, timestamps, durations and
	// building an answer, and no extension library.
	// Example: answers.topic.type == 'refusal' || answers.topic.choice == 'other'.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`

	// action when the rule matches: Block, Warn or Strip.
	// +required
	Action RuleAction `json:"action"`

	// reason a blocked caller receives. Unset means spec.reason.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// StreamingSpec sets the cadence and hold-back of the Stream phase.
// +kubebuilder:validation:XValidation:rule="!has(self.chunkWindow) || !has(self.segmentation) || self.segmentation != 'Sentences'",message="chunkWindow and segmentation Sentences are alternatives: set one",fieldPath=.chunkWindow
type StreamingSpec struct {
	// evaluateEveryChars is the cadence: a streaming evaluation runs when a channel has grown
	// by at least this many characters since it was last classified; 0 evaluates every
	// delta. Unset means 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1048576
	EvaluateEveryChars *int32 `json:"evaluateEveryChars,omitempty"`

	// holdBackChars is how many trailing characters of each channel are withheld from the
	// client until a passing evaluation covers them: an integer >= 0, or Unbounded to
	// buffer a channel until its terminal evaluation (zero leak, at the cost of time to
	// first token). Unset means the classifier's hint: its longest possible match for
	// builtin classifiers, 0 for remote ones.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? self == 'Unbounded' : (self >= 0 && self <= 1048576)",message="holdBackChars must be an integer between 0 and 1048576, or Unbounded"
	HoldBackChars *IntOrString `json:"holdBackChars,omitempty"`

	// chunkWindow classifies the last N deltas together instead of the accumulated channel.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	ChunkWindow *int32 `json:"chunkWindow,omitempty"`

	// maxEvaluations caps the cadence evaluations of this guardrail per stream; afterwards
	// deltas pass unevaluated and the decision records partial inspection. The terminal
	// evaluation under hold-back is never skipped. Unset means no cap.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxEvaluations *int32 `json:"maxEvaluations,omitempty"`

	// segmentation is Cumulative (the accumulated channel) or Sentences (complete sentences
	// with one sentence of overlap). Unset means Cumulative.
	// +optional
	Segmentation Segmentation `json:"segmentation,omitempty"`
}
