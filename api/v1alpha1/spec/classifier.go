package spec

// ClassifierSpec says how content is judged: by exactly one backend, against authored
// categories or questions. The rules about one backend apply only when exactly one is set,
// so that a refusal for two backends does not also list what neither backend would need.
// +kubebuilder:validation:XValidation:rule="[has(self.builtin), has(self.moderation), has(self.llm), has(self.webhook)].filter(b, b).size() == 1",message="exactly one backend must be set: builtin, moderation, llm or webhook"
// +kubebuilder:validation:XValidation:rule="[has(self.builtin), has(self.moderation), has(self.llm), has(self.webhook)].filter(b, b).size() != 1 || (!has(self.builtin) || (!has(self.categories) && !has(self.questions)))",message="a builtin classifier derives its categories from spec.builtin (packs, detectors, patterns, keywords): remove spec.categories and spec.questions",fieldPath=.categories
// +kubebuilder:validation:XValidation:rule="[has(self.builtin), has(self.moderation), has(self.llm), has(self.webhook)].filter(b, b).size() != 1 || (!has(self.builtin) || !has(self.credentialsSecretRef))",message="the builtin backend runs in process and takes no credentials: remove spec.credentialsSecretRef",fieldPath=.credentialsSecretRef
// +kubebuilder:validation:XValidation:rule="[has(self.builtin), has(self.moderation), has(self.llm), has(self.webhook)].filter(b, b).size() != 1 || (!has(self.builtin) || !has(self.modalities) || self.modalities == ['text'])",message="the builtin backend inspects text only: spec.modalities must be [text]",fieldPath=.modalities
// +kubebuilder:validation:XValidation:rule="[has(self.builtin), has(self.moderation), has(self.llm), has(self.webhook)].filter(b, b).size() != 1 || (!has(self.moderation) || (has(self.categories) && !has(self.questions)))",message="a moderation classifier needs spec.categories (mapped from the endpoint's category_scores) and takes no spec.questions",fieldPath=.categories
// +kubebuilder:validation:XValidation:rule="[has(self.builtin), has(self.moderation), has(self.llm), has(self.webhook)].filter(b, b).size() != 1 || (!has(self.llm) || self.llm.format != 'llamaGuard' || (has(self.categories) && !has(self.questions)))",message="format llamaGuard needs spec.categories (numbered S1, S2, ... in authored order) and takes no spec.questions",fieldPath=.categories
// +kubebuilder:validation:XValidation:rule="[has(self.builtin), has(self.moderation), has(self.llm), has(self.webhook)].filter(b, b).size() != 1 || (!(has(self.llm) || has(self.webhook)) || (has(self.categories) != has(self.questions)))",message="llm and webhook classifiers need exactly one of spec.categories or spec.questions",fieldPath=.categories
type ClassifierSpec struct {
	// builtin runs in-process detectors: no network, scores of 1 on a match and 0 otherwise,
	// with spans, so guardrails using it can Redact.
	// +optional
	Builtin *BuiltinBackend `json:"builtin,omitempty"`

	// moderation calls an OpenAI /v1/moderations-compatible endpoint.
	// +optional
	Moderation *ModerationBackend `json:"moderation,omitempty"`

	// llm uses a model behind an OpenAI-compatible /v1/chat/completions endpoint as a judge.
	// +optional
	LLM *LLMBackend `json:"llm,omitempty"`

	// webhook calls any HTTP service that speaks the guardrail.dev webhook contract:
	// it receives {text|parts, categories, questions} and answers {scores} or {answers}.
	// +optional
	Webhook *WebhookBackend `json:"webhook,omitempty"`

	// categories the classifier scores, in order; findings are reported in this order.
	// Required for moderation and llamaGuard classifiers; derived for builtin ones.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Categories []Category `json:"categories,omitempty"`

	// questions a judge answers (llm and webhook backends), in order. CEL rules of a
	// Guardrail read the answers as answers.<id>.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Questions []Question `json:"questions,omitempty"`

	// credentialsSecretRef names a Secret in the same namespace (a ClusterClassifier's: in
	// the operator's namespace) whose key holds the bearer token sent to the backend. The
	// value never appears in status, events, logs or metrics.
	// +optional
	CredentialsSecretRef *SecretKeyReference `json:"credentialsSecretRef,omitempty"`

	// timeout bounds each call to the backend, retries included: a positive duration such
	// as 500ms, 2s or 1m30s. Unset means the call is bounded only by the Guardrail's
	// timeout.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|μs|ms|s|m|h)){1,4}$') && duration(self) > duration('0s')",message="must be a positive duration such as 500ms, 2s or 1m30s: up to 4 parts, each a number of at most 5 digits and a unit (ns, us, ms, s, m or h)"
	Timeout *Duration `json:"timeout,omitempty"`

	// retries is how many times a call is retried after a transport error, a 429 or a 5xx,
	// with backoff, inside the timeout budget. Unset means 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3
	Retries *int32 `json:"retries,omitempty"`

	// maxInputChars truncates the text sent to the backend to this many characters.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxInputChars *int32 `json:"maxInputChars,omitempty"`

	// maxConcurrency limits the calls in flight to the backend from one guard.
	// Unset means unlimited.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	MaxConcurrency *int32 `json:"maxConcurrency,omitempty"`

	// modalities the backend can inspect: one or more of text, image, audio and file.
	// Defaults to [text].
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:default={text}
	Modalities []Modality `json:"modalities,omitempty"`

	// cache keeps answers for identical input (keyed by a hash of the exact input).
	// Off when unset.
	// +optional
	Cache *CacheSpec `json:"cache,omitempty"`
}

// BuiltinPack is a named set of built-in detectors.
// +kubebuilder:validation:Enum=pii;secrets;prompt-injection
type BuiltinPack string

// Built-in packs.
const (
	// PackPII: email, phone, credit-card, iban, us-ssn, ip-address.
	PackPII BuiltinPack = "pii"
	// PackSecrets: aws-access-key, aws-secret-key, github-token, gitlab-token, slack-token,
	// openai-key, anthropic-key, private-key, jwt, generic-secret.
	PackSecrets BuiltinPack = "secrets"
	// PackPromptInjection: prompt-injection.
	PackPromptInjection BuiltinPack = "prompt-injection"
)

// Detector is one built-in detector; its name is also the category it reports.
// +kubebuilder:validation:Enum=email;phone;credit-card;iban;us-ssn;ip-address;aws-access-key;aws-secret-key;github-token;gitlab-token;slack-token;openai-key;anthropic-key;private-key;jwt;generic-secret;prompt-injection
type Detector string

// BuiltinBackend selects in-process detectors.
// +kubebuilder:validation:XValidation:rule="has(self.packs) || has(self.detectors) || has(self.patterns) || has(self.keywords)",message="builtin needs at least one of packs, detectors, patterns or keywords"
type BuiltinBackend struct {
	// packs enables whole detector packs: pii, secrets, prompt-injection.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	Packs []BuiltinPack `json:"packs,omitempty"`

	// detectors enables individual detectors in addition to the packs: email, phone,
	// credit-card, iban, us-ssn, ip-address, aws-access-key, aws-secret-key, github-token,
	// gitlab-token, slack-token, openai-key, anthropic-key, private-key, jwt,
	// generic-secret and prompt-injection.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	Detectors []Detector `json:"detectors,omitempty"`

	// patterns are custom regular expressions (RE2 syntax), each reporting a category.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Patterns []PatternRule `json:"patterns,omitempty"`

	// keywords are custom word lists, each reporting a category; words match whole.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Keywords []KeywordRule `json:"keywords,omitempty"`
}

// PatternRule reports a category wherever a regular expression matches.
type PatternRule struct {
	// category reported on a match: a lowercase DNS label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Category string `json:"category"`

	// regex in RE2 syntax. Its longest possible match becomes part of the classifier's
	// hold-back hint; unbounded repetition counts as 256 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Regex string `json:"regex"`
}

// KeywordMatch says how keywords are compared.
// +kubebuilder:validation:Enum=CaseInsensitive;CaseSensitive
type KeywordMatch string

// Keyword matching.
const (
	KeywordCaseInsensitive KeywordMatch = "CaseInsensitive"
	KeywordCaseSensitive   KeywordMatch = "CaseSensitive"
)

// KeywordRule reports a category wherever one of its words occurs as a whole word.
type KeywordRule struct {
	// category reported on a match: a lowercase DNS label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Category string `json:"category"`

	// words to look for.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=512
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	Words []string `json:"words"`

	// match is CaseInsensitive or CaseSensitive. Unset means CaseInsensitive.
	// +optional
	Match KeywordMatch `json:"match,omitempty"`
}

// ModerationBackend is an OpenAI /v1/moderations-compatible endpoint.
type ModerationBackend struct {
	// url of the moderations endpoint, for example https://api.openai.com/v1/moderations.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="url must be an absolute http or https URL"
	URL string `json:"url"`

	// model sent with each request, for example omni-moderation-latest.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Model string `json:"model,omitempty"`

	// categoryMap renames the endpoint's categories (as in category_scores, for example
	// self-harm/intent) to this classifier's category ids. A category id without an entry
	// is looked up under its own name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	CategoryMap []CategoryMapping `json:"categoryMap,omitempty"`
}

// CategoryMapping maps an endpoint's category name to a category id.
type CategoryMapping struct {
	// name of the category as the endpoint reports it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`

	// category id it is reported as: a lowercase DNS label listed in spec.categories.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Category string `json:"category"`
}

// JudgeFormat is how an LLM judge is asked and answered.
// +kubebuilder:validation:Enum=scores;llamaGuard
type JudgeFormat string

// Judge formats.
const (
	// JudgeScores asks for a JSON-schema structured answer: one score in [0,1] per category,
	// or one answer per question.
	JudgeScores JudgeFormat = "scores"
	// JudgeLlamaGuard parses "safe" or "unsafe\nS1,S3" replies; categories are numbered
	// S1, S2, ... in authored order.
	JudgeLlamaGuard JudgeFormat = "llamaGuard"
)

// LLMBackend is a model behind an OpenAI-compatible /v1/chat/completions endpoint.
type LLMBackend struct {
	// url of the chat completions endpoint, for example https://api.openai.com/v1/chat/completions.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="url must be an absolute http or https URL"
	URL string `json:"url"`

	// model the judge runs.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Model string `json:"model"`

	// format is scores (structured output) or llamaGuard.
	// +required
	Format JudgeFormat `json:"format"`

	// instructions prepended to the judge's system prompt.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Instructions string `json:"instructions,omitempty"`
}

// WebhookBackend is an HTTP service speaking the guardrail.dev webhook contract.
type WebhookBackend struct {
	// url the guard POSTs to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="url must be an absolute http or https URL"
	URL string `json:"url"`

	// caBundle is a PEM bundle of the CAs trusted for an https url, instead of the system roots.
	// Unset means the system roots.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CABundle []byte `json:"caBundle,omitempty"`
}

// Category is one thing a classifier scores.
type Category struct {
	// id of the category: a lowercase DNS label, unique in the classifier.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ID string `json:"id"`

	// description tells a judge what the category means. It is sent to the backend and
	// never appears in decisions.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description string `json:"description,omitempty"`
}

// QuestionType is the kind of answer a question expects.
// +kubebuilder:validation:Enum=boolean;choice;score
type QuestionType string

// Question types.
const (
	// QuestionBoolean answers with a probability that the "true" criterion holds.
	QuestionBoolean QuestionType = "boolean"
	// QuestionChoice answers with one of the criteria values.
	QuestionChoice QuestionType = "choice"
	// QuestionScore answers with a score in [0,1]; criteria are levels from lowest (0) to
	// highest (1), evenly spaced.
	QuestionScore QuestionType = "score"
)

// Question is one question a judge answers.
// +kubebuilder:validation:XValidation:rule="self.type != 'boolean' || (size(self.criteria) == 2 && self.criteria.exists(c, c.value == 'true') && self.criteria.exists(c, c.value == 'false'))",message="a boolean question has exactly two criteria, with values true and false",fieldPath=.criteria
// +kubebuilder:validation:XValidation:rule="self.type == 'boolean' || size(self.criteria) >= 2",message="choice and score questions need at least two criteria",fieldPath=.criteria
type Question struct {
	// id of the question, read by CEL rules as answers.<id>: a letter followed by letters,
	// digits or underscores.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_]*$`
	ID string `json:"id"`

	// type is boolean, choice or score.
	// +required
	Type QuestionType `json:"type"`

	// criteria describe the possible answers: for boolean, the values true and false; for
	// choice, each choice; for score, the levels from lowest to highest.
	// +required
	// +listType=map
	// +listMapKey=value
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=16
	Criteria []Criterion `json:"criteria"`

	// instructions add guidance for this question.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Instructions string `json:"instructions,omitempty"`
}

// Criterion is one possible answer to a question.
type Criterion struct {
	// value of the answer: true/false, a choice, or a score level's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value"`

	// description of when this answer applies.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description"`
}

// SecretKeyReference names a key of a Secret in the same namespace.
type SecretKeyReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key in the Secret's data. Defaults to apiKey.
	// +optional
	// +kubebuilder:default=apiKey
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// CacheSpec configures the answer cache.
type CacheSpec struct {
	// ttl is how long an answer is reused: a positive duration such as 30s, 10m or 1h.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|μs|ms|s|m|h)){1,4}$') && duration(self) > duration('0s')",message="must be a positive duration such as 500ms, 2s or 1m30s: up to 4 parts, each a number of at most 5 digits and a unit (ns, us, ms, s, m or h)"
	TTL Duration `json:"ttl"`

	// maxEntries bounds the cache; the least recently used entry is evicted first.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	MaxEntries int32 `json:"maxEntries"`
}
