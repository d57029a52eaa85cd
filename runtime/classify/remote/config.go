package remote

import (
	"fmt"
	"time"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Config configures a remote backend: its endpoint, what it judges, and the budget of a
// call. The guard builds one from each compiled classifier when it applies a policy.
type Config struct {
	// Kind is the backend: KindModeration, KindLLM or KindWebhook.
	Kind Kind
	// URL is the endpoint, an absolute http or https URL.
	URL string
	// Token is the bearer credential sent with every request; empty when none.
	Token Secret
	// Model is the model the request names: the moderation model (omitted when empty) or
	// the judge's model. Webhooks ignore it.
	Model string
	// CategoryNames (KindModeration only): CategoryNames[i] is the endpoint's name for
	// Categories[i].
	CategoryNames []string
	// Format (KindLLM only) is how the judge is asked and answers.
	Format JudgeFormat
	// Instructions (KindLLM only) open the judge's prompt.
	Instructions string
	// CABundle (KindWebhook only), when set, holds the PEM CAs an https webhook's
	// certificate must chain to, instead of the system roots.
	CABundle []byte

	// Categories in authored order; results index them.
	Categories []Category
	// Questions in authored order; results index them. A classifier has categories or
	// questions, never both.
	Questions []Question

	// Timeout bounds a call, queueing and retries included; 0 leaves only the caller's
	// context.
	Timeout time.Duration
	// Retries is how often a transient failure is retried (0–3).
	Retries int
	// MaxInputChars truncates the judged text to its first characters; 0 keeps it whole.
	MaxInputChars int
	// MaxConcurrency bounds the calls in flight; 0 leaves them unbounded.
	MaxConcurrency int
	// Modalities the backend inspects; the empty set means text only.
	Modalities classify.ModalitySet
	// Cache configures the answer cache; the zero value disables it.
	Cache Cache
}

// Kind is the kind of a remote backend, spelled as the Classifier API spells it.
type Kind string

// Remote backends.
const (
	KindModeration Kind = "moderation"
	KindLLM        Kind = "llm"
	KindWebhook    Kind = "webhook"
)

// JudgeFormat is how an LLM judge is asked and answers: the Classifier API's type.
type JudgeFormat = spec.JudgeFormat

// Judge formats: JudgeScores asks for a JSON object of category scores or question
// answers; JudgeLlamaGuard speaks Llama Guard's prompt and "safe" / "unsafe" verdict.
const (
	JudgeScores     = spec.JudgeScores
	JudgeLlamaGuard = spec.JudgeLlamaGuard
)

// Category is a category the backend scores: the Classifier API's type, as are the others.
type Category = spec.Category

// QuestionType is the type of a question: a boolean question is answered with the
// probability that criterion "true" holds, a choice with the value of one criterion, a
// score with a value within [0,1] over criteria that are levels, lowest first.
type QuestionType = spec.QuestionType

// Question is a question the backend answers.
type Question = spec.Question

// Criterion is one possible answer to a question.
type Criterion = spec.Criterion

// Question types.
const (
	QuestionBoolean = spec.QuestionBoolean
	QuestionChoice  = spec.QuestionChoice
	QuestionScore   = spec.QuestionScore
)

// Cache configures the answer cache: answers are kept for TTL, at most MaxEntries of
// them. It is off unless both are positive.
type Cache struct {
	TTL        time.Duration
	MaxEntries int
}

// Secret is a credential. It prints as [redacted] so that it cannot reach a log or an
// error by accident.
type Secret string

// String implements fmt.Stringer without revealing the value.
func (Secret) String() string { return "[redacted]" }

// GoString implements fmt.GoStringer without revealing the value.
func (Secret) GoString() string { return "[redacted]" }

// Format implements fmt.Formatter without revealing the value, whatever the verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }
