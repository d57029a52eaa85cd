// Package policy defines the compiled policy a guard enforces — a versioned Snapshot of
// Classifiers and Guardrails with every default resolved, every reference checked and every
// CEL rule compiled — and Compile, the one function that turns API objects into it. The
// controller compiles to validate and to publish; the guard compiles policy files and
// decodes published snapshots. No k8s.io imports: the guard links this package, so it
// reads the API's specs from their Kubernetes-free home (api/v1alpha1/spec) inside its own
// envelope (Object), its field errors and label rules are its own (runtime/policy/field,
// labels, validation), and the operator wraps its objects with internal/policykube.
package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Snapshot is a compiled, versioned policy.
type Snapshot struct {
	// Version identifies the content: equal snapshots have equal versions.
	Version string `json:"version"`
	// Classifiers sorted by key.
	Classifiers []*Classifier `json:"classifiers"`
	// Guardrails sorted by key.
	Guardrails []*Guardrail `json:"guardrails"`
	// Providers are the ModelProviders the control plane delivered, sorted by name; never
	// marshalled, so a compiled snapshot written anywhere holds no provider credential.
	Providers []*Provider `json:"-"`
}

// Classifier returns the classifier with the given key, or nil.
func (s *Snapshot) Classifier(key string) *Classifier {
	for _, c := range s.Classifiers {
		if c.Key == key {
			return c
		}
	}
	return nil
}

// Backend is the kind of classifier backend.
type Backend string

// Backends.
const (
	BackendBuiltin    Backend = "builtin"
	BackendModeration Backend = "moderation"
	BackendLLM        Backend = "llm"
	BackendWebhook    Backend = "webhook"
)

// Secret is a credential. It prints as [redacted] so that it cannot reach a log by
// accident; JSON carries the value, for snapshots sent to and persisted by the guard.
type Secret string

// String implements fmt.Stringer without revealing the value.
func (Secret) String() string { return "[redacted]" }

// GoString implements fmt.GoStringer without revealing the value.
func (Secret) GoString() string { return "[redacted]" }

// Format implements fmt.Formatter without revealing the value, whatever the verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// Classifier is a compiled Classifier.
type Classifier struct {
	// Key is namespace/name.
	Key        string  `json:"key"`
	Namespace  string  `json:"namespace"`
	Name       string  `json:"name"`
	Generation int64   `json:"generation"`
	Backend    Backend `json:"backend"`

	Builtin    *BuiltinConfig    `json:"builtin,omitempty"`
	Moderation *ModerationConfig `json:"moderation,omitempty"`
	LLM        *LLMConfig        `json:"llm,omitempty"`
	Webhook    *WebhookConfig    `json:"webhook,omitempty"`

	// Categories in authored order (derived for builtin classifiers). Results index them.
	Categories []Category `json:"categories,omitempty"`
	// Questions in authored order. Results index them.
	Questions []Question `json:"questions,omitempty"`

	// Token is the bearer credential sent to a remote backend; empty when none.
	Token Secret `json:"token,omitempty"`

	// Timeout per call (retries included); 0 means unbounded.
	Timeout        time.Duration `json:"timeout,omitempty"`
	Retries        int           `json:"retries,omitempty"`
	MaxInputChars  int           `json:"maxInputChars,omitempty"`
	MaxConcurrency int           `json:"maxConcurrency,omitempty"`
	// Modalities the backend can inspect.
	Modalities classify.ModalitySet `json:"modalities"`
	Cache      *Cache               `json:"cache,omitempty"`

	// Spans is true when the backend returns match spans (builtin), so Redact is possible.
	Spans bool `json:"spans,omitempty"`
	// HoldBackHint is the backend's longest possible match in characters (0 for remote
	// backends): the default hold-back of streaming guardrails using it.
	HoldBackHint int `json:"holdBackHint,omitempty"`
}

// CategoryIndex returns the index of category id, or -1.
func (c *Classifier) CategoryIndex(id string) int {
	for i := range c.Categories {
		if c.Categories[i].ID == id {
			return i
		}
	}
	return -1
}

// QuestionIndex returns the index of question id, or -1.
func (c *Classifier) QuestionIndex(id string) int {
	for i := range c.Questions {
		if c.Questions[i].ID == id {
			return i
		}
	}
	return -1
}

// Category is a category a classifier scores: the Classifier API's own type
// (api/v1alpha1/spec), carried by a compiled classifier as authored, as are the others.
type Category = spec.Category

// QuestionType is boolean, choice or score.
type QuestionType = spec.QuestionType

// Question is a question a classifier answers.
type Question = spec.Question

// Criterion is one possible answer to a question.
type Criterion = spec.Criterion

// Question types.
const (
	QuestionBoolean = spec.QuestionBoolean
	QuestionChoice  = spec.QuestionChoice
	QuestionScore   = spec.QuestionScore
)

// BuiltinConfig configures the in-process detectors. Packs are expanded into Detectors.
type BuiltinConfig struct {
	Detectors []string     `json:"detectors,omitempty"`
	Patterns  []Pattern    `json:"patterns,omitempty"`
	Keywords  []KeywordSet `json:"keywords,omitempty"`
}

// Pattern is a custom regular expression reporting a category.
type Pattern struct {
	Category string `json:"category"`
	Regex    string `json:"regex"`
}

// KeywordSet is a custom word list reporting a category.
type KeywordSet struct {
	Category      string   `json:"category"`
	Words         []string `json:"words"`
	CaseSensitive bool     `json:"caseSensitive,omitempty"`
}

// ModerationConfig configures a /v1/moderations endpoint.
type ModerationConfig struct {
	URL   string `json:"url"`
	Model string `json:"model,omitempty"`
	// CategoryNames[i] is the endpoint's name for Categories[i] (categoryMap resolved).
	CategoryNames []string `json:"categoryNames"`
}

// JudgeFormat is the Classifier API's (scores or llamaGuard).
type JudgeFormat = spec.JudgeFormat

// Judge formats.
const (
	JudgeScores     = spec.JudgeScores
	JudgeLlamaGuard = spec.JudgeLlamaGuard
)

// LLMConfig configures an LLM judge.
type LLMConfig struct {
	URL          string      `json:"url"`
	Model        string      `json:"model"`
	Format       JudgeFormat `json:"format"`
	Instructions string      `json:"instructions,omitempty"`
}

// WebhookConfig configures a webhook backend.
type WebhookConfig struct {
	URL      string `json:"url"`
	CABundle []byte `json:"caBundle,omitempty"`
}

// Cache configures a classifier's answer cache.
type Cache struct {
	TTL        time.Duration `json:"ttl"`
	MaxEntries int           `json:"maxEntries"`
}

// Phase is a boundary where content is judged.
type Phase uint8

// Phases.
const (
	PhaseInput Phase = iota
	PhaseStream
	PhaseOutput
	PhaseToolCalls
	PhaseToolResults
)

// String returns the API spelling of the phase.
func (p Phase) String() string {
	switch p {
	case PhaseInput:
		return "Input"
	case PhaseStream:
		return "Stream"
	case PhaseOutput:
		return "Output"
	case PhaseToolCalls:
		return "ToolCalls"
	case PhaseToolResults:
		return "ToolResults"
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// PhaseSet is a set of phases, one bit per Phase.
type PhaseSet uint8

// Has reports whether p is in the set.
func (s PhaseSet) Has(p Phase) bool { return s&(1<<p) != 0 }

// With returns the set with p added.
func (s PhaseSet) With(p Phase) PhaseSet { return s | 1<<p }

// Action is what a match does. The zero value is no action (allow). Strength is
// Block > Strip > Redact > Pseudonymize > Warn > allow; compare with
// Stronger. The numbers are the snapshot's encoding, so a new action takes the next free
// one whatever its strength: a guard reading a snapshot persisted by an older one must not
// read one action as another.
type Action uint8

// Actions, weakest first but for Pseudonymize (see Action).
const (
	ActionAllow Action = iota
	ActionWarn
	ActionRedact
	ActionStrip
	ActionBlock
	// ActionPseudonymize replaces matched spans with placeholders that the answer's text
	// gets back as the original values (Input and ToolResults phases).
	ActionPseudonymize
)

// rank orders actions by strength.
func (a Action) rank() int {
	switch a {
	case ActionWarn:
		return 1
	case ActionPseudonymize:
		return 2
	case ActionRedact:
		return 3
	case ActionStrip:
		return 4
	case ActionBlock:
		return 5
	}
	return 0
}

// Stronger reports whether a wins over b when both match.
func (a Action) Stronger(b Action) bool { return a.rank() > b.rank() }

// String returns the API spelling of the action.
func (a Action) String() string {
	switch a {
	case ActionAllow:
		return "Allow"
	case ActionWarn:
		return "Warn"
	case ActionRedact:
		return "Redact"
	case ActionStrip:
		return "Strip"
	case ActionBlock:
		return "Block"
	case ActionPseudonymize:
		return "Pseudonymize"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Mode is Enforce or Report.
type Mode uint8

// Modes.
const (
	ModeEnforce Mode = iota
	ModeReport
)

// String returns the API spelling of the mode.
func (m Mode) String() string {
	if m == ModeReport {
		return "Report"
	}
	return "Enforce"
}

// Unsupported is what happens to a part the classifier cannot inspect.
type Unsupported uint8

// Unsupported policies. UnsupportedFail (the zero value, spec unset) makes it an
// evaluation failure with code UNSUPPORTED.
const (
	UnsupportedFail Unsupported = iota
	UnsupportedBlock
	UnsupportedWarn
	UnsupportedAllow
)

// HoldBackUnbounded is Streaming.HoldBack for holdBackChars: Unbounded.
const HoldBackUnbounded = -1

// HoldBackPending is Streaming.HoldBack for an unset holdBackChars on a classifier that
// returns spans (built-in): the stream withholds exactly the text the classifier reports
// as pending — a match still arriving, or a beginning that could become one — and what it
// has not judged yet, instead of a fixed number of characters.
const HoldBackPending = -2

// Streaming is the compiled cadence and hold-back of the Stream phase.
type Streaming struct {
	// EvaluateEveryChars is the cadence; 0 evaluates every delta.
	EvaluateEveryChars int `json:"evaluateEveryChars,omitempty"`
	// HoldBack in characters; HoldBackUnbounded; or, when holdBackChars is unset,
	// HoldBackPending with a span-capable classifier and 0 with any other.
	HoldBack int `json:"holdBack"`
	// ChunkWindow > 0 classifies the last ChunkWindow deltas instead of the channel.
	ChunkWindow int `json:"chunkWindow,omitempty"`
	// MaxEvaluations > 0 caps cadence evaluations per stream.
	MaxEvaluations int `json:"maxEvaluations,omitempty"`
	// Sentences classifies complete sentences plus one sentence of overlap.
	Sentences bool `json:"sentences,omitempty"`
}

// CategoryRule is a category rule resolved against the classifier.
type CategoryRule struct {
	// Index of the category in the classifier's Categories.
	Index     int     `json:"index"`
	ID        string  `json:"id"`
	Threshold float64 `json:"threshold"`
}

// Guardrail is a compiled Guardrail.
type Guardrail struct {
	// Key is namespace/name.
	Key        string `json:"key"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`

	// Cluster is set for a ClusterGuardrail (key "/name"): it runs in the cluster tier,
	// before the namespace's guardrails (RunOrder).
	Cluster bool `json:"cluster,omitempty"`

	// Classifier is the key of the classifier it uses.
	Classifier string `json:"classifier"`
	// Selector selects pods; nil selects every injected pod of the namespace.
	Selector *spec.LabelSelector `json:"selector,omitempty"`

	Mode       Mode                 `json:"mode"`
	Phases     PhaseSet             `json:"phases"`
	Modalities classify.ModalitySet `json:"modalities"`

	// Categories are the category rules, in the classifier's authored order; empty when
	// the guardrail has only CEL rules.
	Categories []CategoryRule `json:"categories,omitempty"`
	// Action of a category match.
	Action Action `json:"action"`
	// RefusalMatches: a refused category counts as a match.
	RefusalMatches bool `json:"refusalMatches"`
	// Rules are the CEL rules, in authored order.
	Rules []*Rule `json:"rules,omitempty"`

	Reason        string        `json:"reason"`
	Unsupported   Unsupported   `json:"unsupported"`
	FailOpen      bool          `json:"failOpen,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty"`
	AllMessages   bool          `json:"allMessages,omitempty"`
	MaxInputChars int           `json:"maxInputChars,omitempty"`
	Streaming     Streaming     `json:"streaming"`
	Priority      int32         `json:"priority"`
}

// Sanitizer reports whether the guardrail can rewrite content (a Strip, Redact or
// Pseudonymize action); sanitizers run first, sequentially.
func (g *Guardrail) Sanitizer() bool {
	if g.Action == ActionStrip || g.Action == ActionRedact || g.Action == ActionPseudonymize {
		return true
	}
	for _, r := range g.Rules {
		if r.Action == ActionStrip {
			return true
		}
	}
	return false
}

// Unjudged describes what of a stream may reach the client before it is judged — the
// trade-off the Stream phase's cadence and hold-back make — in a sentence
// for the Guardrail's status, or "" when nothing can: without the Stream phase, under
// Unbounded, when the hold-back follows a span-capable classifier's pending matches, or
// when it covers the cadence. (A Report guardrail withholds nothing: its evaluations never
// change what the client receives.)
func (g *Guardrail) Unjudged() string {
	st := &g.Streaming
	if !g.Phases.Has(PhaseStream) || st.HoldBack == HoldBackUnbounded {
		return ""
	}
	var parts []string
	switch {
	case st.HoldBack == HoldBackPending:
	case st.Sentences:
		parts = append(parts, fmt.Sprintf("up to a sentence of text beyond the hold-back of %d characters reaches the client before it is judged (segmentation Sentences)", st.HoldBack))
	case st.ChunkWindow == 0 && st.EvaluateEveryChars-1 > st.HoldBack:
		parts = append(parts, fmt.Sprintf("up to %d characters of a stream reach the client before they are judged (evaluateEveryChars %d, holdBackChars %d)",
			st.EvaluateEveryChars-1-st.HoldBack, st.EvaluateEveryChars, st.HoldBack))
	}
	if st.MaxEvaluations > 0 {
		parts = append(parts, fmt.Sprintf("after %d evaluations the rest of a stream is released unjudged but for the terminal evaluation (maxEvaluations)", st.MaxEvaluations))
	}
	return strings.Join(parts, "; ")
}
