package v1alpha1

import (
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/meta/intstr"
	metav1 "github.com/guardrail-dev/guardrail-operator/runtime/policy/meta/v1"
)

// The API objects, field for field as in api/v1alpha1 (where their documentation is).

// Classifier says how content is judged.
type Classifier struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClassifierSpec   `json:"spec"`
	Status ClassifierStatus `json:"status,omitempty"`
}

// Guardrail says what is enforced where.
type Guardrail struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GuardrailSpec   `json:"spec"`
	Status GuardrailStatus `json:"status,omitempty"`
}

// Modality is a kind of content part.
type Modality string

// Modalities.
const (
	ModalityText  Modality = "text"
	ModalityImage Modality = "image"
	ModalityAudio Modality = "audio"
	ModalityFile  Modality = "file"
)

// Score is a number in [0, 1].
type Score float64

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// LabelSelector selects pods by label, as metav1.LabelSelector does.
type LabelSelector struct {
	MatchLabels      map[string]LabelValue      `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorOperator relates a label key to values.
type LabelSelectorOperator string

// Label selector operators.
const (
	LabelSelectorOpIn           LabelSelectorOperator = "In"
	LabelSelectorOpNotIn        LabelSelectorOperator = "NotIn"
	LabelSelectorOpExists       LabelSelectorOperator = "Exists"
	LabelSelectorOpDoesNotExist LabelSelectorOperator = "DoesNotExist"
)

// LabelSelectorRequirement is a requirement on one label key.
type LabelSelectorRequirement struct {
	Key      string                `json:"key"`
	Operator LabelSelectorOperator `json:"operator"`
	Values   []LabelValue          `json:"values,omitempty"`
}

// LabelValue is a Kubernetes label value.
type LabelValue string

// ClassifierSpec says how content is judged.
type ClassifierSpec struct {
	Builtin              *BuiltinBackend     `json:"builtin,omitempty"`
	Moderation           *ModerationBackend  `json:"moderation,omitempty"`
	LLM                  *LLMBackend         `json:"llm,omitempty"`
	Webhook              *WebhookBackend     `json:"webhook,omitempty"`
	Categories           []Category          `json:"categories,omitempty"`
	Questions            []Question          `json:"questions,omitempty"`
	CredentialsSecretRef *SecretKeyReference `json:"credentialsSecretRef,omitempty"`
	Timeout              *metav1.Duration    `json:"timeout,omitempty"`
	Retries              *int32              `json:"retries,omitempty"`
	MaxInputChars        *int32              `json:"maxInputChars,omitempty"`
	MaxConcurrency       *int32              `json:"maxConcurrency,omitempty"`
	Modalities           []Modality          `json:"modalities,omitempty"`
	Cache                *CacheSpec          `json:"cache,omitempty"`
}

// BuiltinPack is a named set of built-in detectors.
type BuiltinPack string

// Built-in packs.
const (
	PackPII             BuiltinPack = "pii"
	PackSecrets         BuiltinPack = "secrets"
	PackPromptInjection BuiltinPack = "prompt-injection"
)

// Detector is one built-in detector.
type Detector string

// BuiltinBackend selects in-process detectors.
type BuiltinBackend struct {
	Packs     []BuiltinPack `json:"packs,omitempty"`
	Detectors []Detector    `json:"detectors,omitempty"`
	Patterns  []PatternRule `json:"patterns,omitempty"`
	Keywords  []KeywordRule `json:"keywords,omitempty"`
}

// PatternRule reports a category wherever a regular expression matches.
type PatternRule struct {
	Category string `json:"category"`
	Regex    string `json:"regex"`
}

// KeywordMatch says how keywords are compared.
type KeywordMatch string

// Keyword matching.
const (
	KeywordCaseInsensitive KeywordMatch = "CaseInsensitive"
	KeywordCaseSensitive   KeywordMatch = "CaseSensitive"
)

// KeywordRule reports a category wherever one of its words occurs.
type KeywordRule struct {
	Category string       `json:"category"`
	Words    []string     `json:"words"`
	Match    KeywordMatch `json:"match,omitempty"`
}

// ModerationBackend is an OpenAI /v1/moderations-compatible endpoint.
type ModerationBackend struct {
	URL         string            `json:"url"`
	Model       string            `json:"model,omitempty"`
	CategoryMap []CategoryMapping `json:"categoryMap,omitempty"`
}

// CategoryMapping maps an endpoint's category name to a category id.
type CategoryMapping struct {
	Name     string `json:"name"`
	Category string `json:"category"`
}

// JudgeFormat is how an LLM judge is asked and answered.
type JudgeFormat string

// Judge formats.
const (
	JudgeScores     JudgeFormat = "scores"
	JudgeLlamaGuard JudgeFormat = "llamaGuard"
)

// LLMBackend is a model behind an OpenAI-compatible chat completions endpoint.
type LLMBackend struct {
	URL          string      `json:"url"`
	Model        string      `json:"model"`
	Format       JudgeFormat `json:"format"`
	Instructions string      `json:"instructions,omitempty"`
}

// WebhookBackend is an HTTP service speaking the guardrail.dev webhook contract.
type WebhookBackend struct {
	URL      string `json:"url"`
	CABundle []byte `json:"caBundle,omitempty"`
}

// Category is one thing a classifier scores.
type Category struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
}

// QuestionType is the kind of answer a question expects.
type QuestionType string

// Question types.
const (
	QuestionBoolean QuestionType = "boolean"
	QuestionChoice  QuestionType = "choice"
	QuestionScore   QuestionType = "score"
)

// Question is one question a judge answers.
type Question struct {
	ID           string       `json:"id"`
	Type         QuestionType `json:"type"`
	Criteria     []Criterion  `json:"criteria"`
	Instructions string       `json:"instructions,omitempty"`
}

// Criterion is one possible answer to a question.
type Criterion struct {
	Value       string `json:"value"`
	Description string `json:"description"`
}

// SecretKeyReference names a key of a Secret in the same namespace.
type SecretKeyReference struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
}

// CacheSpec configures the answer cache.
type CacheSpec struct {
	TTL        metav1.Duration `json:"ttl"`
	MaxEntries int32           `json:"maxEntries"`
}

// ClassifierStatus is the observed state of a Classifier.
type ClassifierStatus struct {
	ObservedGeneration int64                `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition   `json:"conditions,omitempty"`
	Backend            string               `json:"backend,omitempty"`
	Categories         []string             `json:"categories,omitempty"`
	HoldBackHint       int32                `json:"holdBackHint,omitempty"`
	Guardrails         int32                `json:"guardrails,omitempty"`
	Guards             int32                `json:"guards,omitempty"`
	Calls              *ClassifierCallStats `json:"calls,omitempty"`
}

// ClassifierCallStats summarizes backend calls reported by guard sidecars.
type ClassifierCallStats struct {
	Total      int64            `json:"total,omitempty"`
	LatencyP50 *metav1.Duration `json:"latencyP50,omitempty"`
	LatencyP99 *metav1.Duration `json:"latencyP99,omitempty"`
	Errors     map[string]int64 `json:"errors,omitempty"`
}

// Mode says whether a guardrail enforces its decisions or only reports them.
type Mode string

// Modes.
const (
	ModeEnforce Mode = "Enforce"
	ModeReport  Mode = "Report"
)

// Phase is a boundary of an LLM call where a guardrail judges content.
type Phase string

// Phases.
const (
	PhaseInput       Phase = "Input"
	PhaseStream      Phase = "Stream"
	PhaseOutput      Phase = "Output"
	PhaseToolCalls   Phase = "ToolCalls"
	PhaseToolResults Phase = "ToolResults"
)

// Action is what happens to content that matches.
type Action string

// Actions.
const (
	ActionBlock  Action = "Block"
	ActionStrip  Action = "Strip"
	ActionRedact Action = "Redact"
	ActionWarn   Action = "Warn"
)

// RuleAction is what happens when a CEL rule matches.
type RuleAction string

// RefusalPolicy says whether a refused category counts as a match.
type RefusalPolicy string

// Refusal policies.
const (
	RefusalMatch  RefusalPolicy = "Match"
	RefusalIgnore RefusalPolicy = "Ignore"
)

// UnsupportedPolicy is what happens to a part the classifier cannot inspect.
type UnsupportedPolicy string

// Unsupported policies.
const (
	UnsupportedBlock UnsupportedPolicy = "Block"
	UnsupportedWarn  UnsupportedPolicy = "Warn"
	UnsupportedAllow UnsupportedPolicy = "Allow"
)

// FailurePolicy is what happens when an evaluation fails.
type FailurePolicy string

// Failure policies.
const (
	FailClosed FailurePolicy = "Closed"
	FailOpen   FailurePolicy = "Open"
)

// MessageScope says which input messages are judged.
type MessageScope string

// Message scopes.
const (
	MessagesLast MessageScope = "Last"
	MessagesAll  MessageScope = "All"
)

// Segmentation says what text a streaming evaluation sends.
type Segmentation string

// Segmentations.
const (
	SegmentCumulative Segmentation = "Cumulative"
	SegmentSentences  Segmentation = "Sentences"
)

// HoldBackUnbounded is the holdBackChars value that buffers a whole channel.
const HoldBackUnbounded = "Unbounded"

// GuardrailSpec says what is enforced where.
type GuardrailSpec struct {
	Mode          Mode                 `json:"mode"`
	Selector      *LabelSelector       `json:"selector,omitempty"`
	ClassifierRef LocalObjectReference `json:"classifierRef"`
	Phases        []Phase              `json:"phases,omitempty"`
	Modalities    []Modality           `json:"modalities,omitempty"`
	Categories    []string             `json:"categories,omitempty"`
	Threshold     *Score               `json:"threshold,omitempty"`
	Thresholds    []CategoryThreshold  `json:"thresholds,omitempty"`
	Refusal       RefusalPolicy        `json:"refusal,omitempty"`
	Action        Action               `json:"action,omitempty"`
	Rules         []Rule               `json:"rules,omitempty"`
	Reason        string               `json:"reason"`
	Unsupported   UnsupportedPolicy    `json:"unsupported,omitempty"`
	FailurePolicy FailurePolicy        `json:"failurePolicy,omitempty"`
	Timeout       *metav1.Duration     `json:"timeout,omitempty"`
	Messages      MessageScope         `json:"messages,omitempty"`
	MaxInputChars *int32               `json:"maxInputChars,omitempty"`
	Streaming     *StreamingSpec       `json:"streaming,omitempty"`
	Priority      *int32               `json:"priority,omitempty"`
}

// CategoryThreshold overrides the threshold of one category.
type CategoryThreshold struct {
	Category  string `json:"category"`
	Threshold Score  `json:"threshold"`
}

// Rule is a CEL rule over the judge's answers and scores.
type Rule struct {
	Name       string     `json:"name"`
	Expression string     `json:"expression"`
	Action     RuleAction `json:"action"`
	Reason     string     `json:"reason,omitempty"`
}

// StreamingSpec sets the cadence and hold-back of the Stream phase.
type StreamingSpec struct {
	EvaluateEveryChars *int32              `json:"evaluateEveryChars,omitempty"`
	HoldBackChars      *intstr.IntOrString `json:"holdBackChars,omitempty"`
	ChunkWindow        *int32              `json:"chunkWindow,omitempty"`
	MaxEvaluations     *int32              `json:"maxEvaluations,omitempty"`
	Segmentation       Segmentation        `json:"segmentation,omitempty"`
}

// GuardrailStatus is the observed state of a Guardrail.
type GuardrailStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Enforcement        *EnforcementStatus `json:"enforcement,omitempty"`
	Decisions          *DecisionCounts    `json:"decisions,omitempty"`
	LastDecisionTime   *metav1.Time       `json:"lastDecisionTime,omitempty"`
}

// EnforcementStatus compares the pods selected with those enforcing the latest generation.
type EnforcementStatus struct {
	SelectedPods     int32  `json:"selectedPods"`
	AcknowledgedPods int32  `json:"acknowledgedPods"`
	PodsWithoutGuard int32  `json:"podsWithoutGuard,omitempty"`
	Summary          string `json:"summary,omitempty"`
}

// DecisionCounts are cumulative decision counts by outcome and by category.
type DecisionCounts struct {
	Allowed      int64           `json:"allowed,omitempty"`
	Warned       int64           `json:"warned,omitempty"`
	Stripped     int64           `json:"stripped,omitempty"`
	Redacted     int64           `json:"redacted,omitempty"`
	Blocked      int64           `json:"blocked,omitempty"`
	Failed       int64           `json:"failed,omitempty"`
	NotInspected int64           `json:"notInspected,omitempty"`
	WouldWarn    int64           `json:"wouldWarn,omitempty"`
	WouldStrip   int64           `json:"wouldStrip,omitempty"`
	WouldRedact  int64           `json:"wouldRedact,omitempty"`
	WouldBlock   int64           `json:"wouldBlock,omitempty"`
	Categories   []CategoryCount `json:"categories,omitempty"`
}

// CategoryCount is the cumulative number of matches of a category or rule.
type CategoryCount struct {
	Name    string `json:"name"`
	Matches int64  `json:"matches"`
}
