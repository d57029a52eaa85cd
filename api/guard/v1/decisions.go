package guardv1

// The decisions protocol rides on the subscription's channel:
// same base URL, TLS, and bearer token (so the same pod binding and namespace).
//
//	POST /v1/decisions
//	Authorization: Bearer <projected service-account token, audience guardrail.dev>
//	DecisionsRequest
//
// Counts are cumulative since the guard process started, under a random incarnation id:
// a batch says "since I started, guardrail G decided wouldBlock for 12 requests", never
// "12 more". The operator counts the difference with what it already counted for
// (pod, incarnation), which it records on the pod, so a resent or reordered batch adds
// nothing, a lost one is made good by the next, and the guard's memory is bounded by its
// key space rather than by how long the operator is unreachable. Answers: 204 counted
// (or nothing new), 400 malformed, 401/403 refused (403 also when a count names a
// Guardrail of another namespace; "/name", a ClusterGuardrail, is accepted from a guard
// of any namespace), 409 an incarnation older than the one counted, 413 too
// many keys, 503 retry later.
const (
	// DecisionsPath is the endpoint.
	DecisionsPath = "/v1/decisions"
	// MaxDecisionsBytes bounds a batch on the wire.
	MaxDecisionsBytes = 1 << 20
	// MaxDecisionKeys bounds the count keys of an incarnation. Past it, a new key is
	// merged into its guardrail and outcome's overflow key (generation 0, no phase or
	// category): totals stay exact, only the breakdown is coarser. Overflow keys are at
	// most one per guardrail and outcome.
	MaxDecisionKeys = 256
	// MaxMatchNames bounds the category and rule names counted per guardrail (the
	// status lists at most 128); past it, matches count under OtherMatches.
	MaxMatchNames = 64
	// OtherMatches is where matches past MaxMatchNames count.
	OtherMatches = "_other"
	// MaxSamples bounds the findings sampled per batch.
	MaxSamples = 16
	// MaxIDChars bounds an incarnation and a sampled request id.
	MaxIDChars = 64
)

// DecisionsRequest is one batch: everything the guard counted since it started.
type DecisionsRequest struct {
	// Incarnation is random per guard process; Started (Unix milliseconds) orders the
	// incarnations of a pod.
	Incarnation string `json:"incarnation"`
	Started     int64  `json:"started"`
	// Guardrails holds the cumulative counts, one entry per guardrail.
	Guardrails []GuardrailDecisions `json:"guardrails,omitempty"`
	// Samples are findings of recent decisions other than allowed: ids and numbers only.
	Samples []Sample `json:"samples,omitempty"`
	// Merged counts the decisions counted into overflow keys so far.
	Merged int64 `json:"merged,omitempty"`
	// Classifiers holds cumulative call figures, one entry per classifier.
	Classifiers []ClassifierCalls `json:"classifiers,omitempty"`
	// Providers holds cumulative usage, one entry per ModelProvider the guard called.
	Providers []ProviderUsage `json:"providers,omitempty"`
}

// MaxProviders bounds the providers a batch reports on.
const MaxProviders = 8

// ProviderUsage is one ModelProvider's cumulative usage through this guard: requests sent
// to it, and the tokens of the provider's usage fields (streamed answers included).
type ProviderUsage struct {
	// Provider is the ModelProvider's name.
	Provider     string `json:"provider"`
	Requests     int64  `json:"requests,omitempty"`
	InputTokens  int64  `json:"inputTokens,omitempty"`
	OutputTokens int64  `json:"outputTokens,omitempty"`
}

// LatencyBucketsMs are the upper bounds of the latency histogram of classifier calls, in
// milliseconds; a last bucket counts the calls above the largest.
var LatencyBucketsMs = []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}

// MaxClassifiers bounds the classifiers a batch reports on.
const MaxClassifiers = 64

// ClassifierCalls are one classifier's cumulative call figures: calls are evaluations
// that called the classifier (built-in ones included), errors are evaluation failures by
// code, and Latency counts calls per LatencyBucketsMs bucket (len+1 entries).
type ClassifierCalls struct {
	// Classifier is namespace/name.
	Classifier string           `json:"classifier"`
	Calls      int64            `json:"calls,omitempty"`
	Errors     map[string]int64 `json:"errors,omitempty"`
	Latency    []int64          `json:"latency,omitempty"`
}

// GuardrailDecisions are one guardrail's cumulative counts.
type GuardrailDecisions struct {
	// Guardrail is namespace/name, or "/name" for a ClusterGuardrail (the guardrail's
	// key, policy.Guardrail.Key): the operator counts a ClusterGuardrail's decisions into
	// its status, broken down by the guard's namespace. A guard that knows no
	// ClusterGuardrail never sends such a key, so batches of older guards read as before.
	Guardrail string `json:"guardrail"`
	// Last is when its latest decision was made (Unix milliseconds).
	Last int64 `json:"last,omitempty"`
	// Counts: requests by generation, phase, outcome, category and code. A request
	// counts once per outcome (see runtime/telemetry): summed over the other fields, the
	// count of an outcome is the number of requests that came to it.
	Counts []DecisionCount `json:"counts,omitempty"`
	// Matches: requests in which each category or rule matched.
	Matches map[string]int64 `json:"matches,omitempty"`
}

// DecisionCount is the number of requests of one key.
type DecisionCount struct {
	Generation int64   `json:"generation,omitempty"`
	Phase      string  `json:"phase,omitempty"`
	Outcome    Outcome `json:"outcome"`
	// Category is the first finding's category or rule of the request's first
	// evaluation with this outcome.
	Category string `json:"category,omitempty"`
	// Code of an evaluation failure.
	Code     string `json:"code,omitempty"`
	Requests int64  `json:"requests"`
}

// Sample is one decision's findings, for a human to follow up: never text.
type Sample struct {
	Guardrail  string          `json:"guardrail"`
	Generation int64           `json:"generation,omitempty"`
	Phase      string          `json:"phase,omitempty"`
	Outcome    Outcome         `json:"outcome"`
	Code       string          `json:"code,omitempty"`
	RequestID  string          `json:"requestId,omitempty"`
	Findings   []SampleFinding `json:"findings,omitempty"`
}

// SampleFinding is a matched category or rule with its score and threshold.
type SampleFinding struct {
	Name      string  `json:"name"`
	Score     float64 `json:"score,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
}

// ValidID reports whether s may travel as an incarnation or request id: 1 to MaxIDChars
// of letters, digits and ._:- — an id, never free text.
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDChars {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// LessCount is the order of counts in a batch and in a claim: outcome, generation, phase,
// category, code.
func LessCount(a, b DecisionCount) bool {
	if a.Outcome != b.Outcome {
		return a.Outcome < b.Outcome
	}
	if a.Generation != b.Generation {
		return a.Generation < b.Generation
	}
	if a.Phase != b.Phase {
		return a.Phase < b.Phase
	}
	if a.Category != b.Category {
		return a.Category < b.Category
	}
	return a.Code < b.Code
}
