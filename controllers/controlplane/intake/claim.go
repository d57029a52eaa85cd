package intake

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"k8s.io/apimachinery/pkg/types"
)

// Counting decisions exactly once: a guard sends cumulative
// counts of its incarnation; what was already counted for (pod, incarnation) is recorded
// on the guard's Lease in the operator's namespace (package guards), in guardv1.AnnotationDecisions,
// by a merge patch that carries the Lease's resourceVersion. Whoever writes the new
// cumulative there first has claimed the difference and counts it; a replica that loses
// the race re-reads the Lease and claims only what is left (usually nothing). The pure
// functions below compute that difference, and refuse one no guard could have made.

// maxClaimBytes bounds the annotation (the apiserver allows 256 KiB for all of an object's
// annotations).
const maxClaimBytes = 96 << 10

// claimed is the content of guardv1.AnnotationDecisions: the cumulative counts of one
// incarnation that have been counted.
type claimed struct {
	Incarnation string `json:"incarnation"`
	Started     int64  `json:"started"`
	// Counted is when (Unix ms, the manager's clock) the last batch was claimed: what the
	// next batch may add is bounded by the time since (plausible).
	Counted     int64                        `json:"counted,omitempty"`
	Guardrails  []guardv1.GuardrailDecisions `json:"guardrails,omitempty"`
	Classifiers []guardv1.ClassifierCalls    `json:"classifiers,omitempty"`
	// Providers are the ModelProviders' usage figures (usage.go).
	Providers []guardv1.ProviderUsage `json:"providers,omitempty"`
}

// batchDelta is what one batch adds, per Guardrail and per Classifier name (the namespace
// is the pod's), or "/name" for a ClusterGuardrail or a ClusterClassifier (localName).
type batchDelta struct {
	guardrails  map[string]*delta
	classifiers map[string]*callDelta
	// providers is what the batch adds to each ModelProvider's usage, by name.
	providers map[string]usageDelta
}

func (b batchDelta) empty() bool {
	return len(b.guardrails) == 0 && len(b.classifiers) == 0 && len(b.providers) == 0
}

// callDelta is what one batch adds to a Classifier's call figures.
type callDelta struct {
	calls   int64
	errors  map[string]int64
	latency []int64
}

func (d *callDelta) add(o *callDelta) {
	d.calls = satAdd(d.calls, o.calls)
	for k, v := range o.errors {
		if d.errors == nil {
			d.errors = map[string]int64{}
		}
		d.errors[k] = satAdd(d.errors[k], v)
	}
	if len(d.latency) < len(o.latency) {
		d.latency = append(d.latency, make([]int64, len(o.latency)-len(d.latency))...)
	}
	for i, v := range o.latency {
		d.latency[i] = satAdd(d.latency[i], v)
	}
}

// satAdd adds two counts, neither negative (validateBatch refuses those), and stays at
// math.MaxInt64 rather than wrapping: a counter in status never turns negative.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// errStaleIncarnation: a batch of an incarnation older than the one already counted (a
// dead guard's late batch); counting it would count its decisions twice.
var errStaleIncarnation = errors.New("a newer incarnation of this pod's guard has been counted")

// delta is what one batch adds to one Guardrail.
type delta struct {
	outcomes map[guardv1.Outcome]int64
	// detail breaks outcomes down by phase and category, for Events.
	detail  map[detailKey]int64
	matches map[string]int64
	last    time.Time
}

type detailKey struct {
	outcome               guardv1.Outcome
	phase, category, code string
}

func newDelta() *delta {
	return &delta{outcomes: map[guardv1.Outcome]int64{}, detail: map[detailKey]int64{}, matches: map[string]int64{}}
}

func (d *delta) empty() bool { return len(d.outcomes) == 0 && len(d.matches) == 0 }

// add merges o into d.
func (d *delta) add(o *delta) {
	for k, v := range o.outcomes {
		d.outcomes[k] = satAdd(d.outcomes[k], v)
	}
	for k, v := range o.detail {
		d.detail[k] = satAdd(d.detail[k], v)
	}
	for k, v := range o.matches {
		d.matches[k] = satAdd(d.matches[k], v)
	}
	if o.last.After(d.last) {
		d.last = o.last
	}
}

// parseClaim reads the annotation; an absent one is an empty claim.
func parseClaim(s string) (claimed, error) {
	var c claimed
	if s == "" {
		return c, nil
	}
	err := json.Unmarshal([]byte(s), &c)
	return c, err
}

// Plausibility (issue: a pod that is not a guard, or a guard's token in other hands,
// must not be able to make the counters say anything): a batch adds at most what one
// guard can decide in the time since its last counted batch.
const (
	// maxDecisionsPerSecond is far above what one guard serves (a guard saturates one
	// core at a few thousand requests a second, each judged in up to five phases).
	maxDecisionsPerSecond = 50_000
	// decisionsBurst is what any batch may add whatever the time since the last.
	decisionsBurst = 100_000
	// maxElapsed bounds the time a batch may account for: a guard that could not report
	// for longer (the manager down for a day) loses nothing more than its plausibility.
	maxElapsed = 24 * time.Hour
	// maxClockSkew is how far in the future a guard's start may lie.
	maxClockSkew = 5 * time.Minute
)

// errImplausible: a batch adds more than one guard can have decided since its last one.
var errImplausible = errors.New("the batch adds more decisions than one guard can make in the time since its last batch")

// claim returns what req adds to prev, per Guardrail name (the namespace is the pod's),
// and the claim to record, counted at now. Per key the new claim is max(prev, req): a
// batch older than one already counted (reordered, or resent late) adds nothing and
// lowers nothing. A batch whose additions exceed what a guard can decide since its last
// counted batch (or since it started) is refused with errImplausible, and nothing of it
// is counted.
func claim(prev claimed, req *guardv1.DecisionsRequest, now time.Time) (batchDelta, claimed, error) {
	if time.UnixMilli(req.Started).After(now.Add(maxClockSkew)) {
		return batchDelta{}, prev, errImplausible
	}
	if prev.Incarnation != req.Incarnation {
		if prev.Incarnation != "" && prev.Started > req.Started {
			return batchDelta{}, prev, errStaleIncarnation
		}
		// A new incarnation starts from zero: the previous one's last batch was counted
		// or is lost with it.
		prev = claimed{}
	}
	since := time.UnixMilli(req.Started)
	if prev.Counted > 0 {
		since = time.UnixMilli(prev.Counted)
	}
	limit := plausibleLimit(now.Sub(since))
	next := claimed{Incarnation: req.Incarnation, Started: req.Started, Counted: now.UnixMilli()}
	old := map[string]*guardv1.GuardrailDecisions{}
	for i := range prev.Guardrails {
		old[prev.Guardrails[i].Guardrail] = &prev.Guardrails[i]
	}
	deltas := map[string]*delta{}
	seen := map[string]bool{}
	for i := range req.Guardrails {
		cur := &req.Guardrails[i]
		seen[cur.Guardrail] = true
		merged, d := claimOne(old[cur.Guardrail], cur)
		next.Guardrails = append(next.Guardrails, merged)
		if !d.empty() {
			deltas[localName(cur.Guardrail)] = d
		}
	}
	for i := range prev.Guardrails {
		if !seen[prev.Guardrails[i].Guardrail] {
			next.Guardrails = append(next.Guardrails, prev.Guardrails[i])
		}
	}
	sort.Slice(next.Guardrails, func(i, j int) bool { return next.Guardrails[i].Guardrail < next.Guardrails[j].Guardrail })
	calls := map[string]*callDelta{}
	oldCalls := map[string]*guardv1.ClassifierCalls{}
	for i := range prev.Classifiers {
		oldCalls[prev.Classifiers[i].Classifier] = &prev.Classifiers[i]
	}
	seen = map[string]bool{}
	for i := range req.Classifiers {
		cur := &req.Classifiers[i]
		seen[cur.Classifier] = true
		merged, d := claimCalls(oldCalls[cur.Classifier], cur)
		next.Classifiers = append(next.Classifiers, merged)
		if d.calls > 0 {
			calls[localName(cur.Classifier)] = d
		}
	}
	for i := range prev.Classifiers {
		if !seen[prev.Classifiers[i].Classifier] {
			next.Classifiers = append(next.Classifiers, prev.Classifiers[i])
		}
	}
	sort.Slice(next.Classifiers, func(i, j int) bool { return next.Classifiers[i].Classifier < next.Classifiers[j].Classifier })
	var usage map[string]usageDelta
	next.Providers, usage = claimUsage(prev.Providers, req.Providers)
	bd := batchDelta{guardrails: deltas, classifiers: calls, providers: usage}
	if !bd.within(limit) {
		return batchDelta{}, prev, errImplausible
	}
	if bd.empty() {
		// Nothing counted: the plausibility window keeps running from the last batch
		// that added something.
		next.Counted = prev.Counted
	}
	return bd, next, nil
}

// plausibleLimit is the most one guard can decide in elapsed, per Guardrail or
// Classifier and per batch.
func plausibleLimit(elapsed time.Duration) int64 {
	elapsed = min(max(elapsed, 0), maxElapsed)
	return decisionsBurst + maxDecisionsPerSecond*int64(elapsed/time.Second)
}

// within reports whether no Guardrail's requests, match count, Classifier's calls or ModelProvider's usage in b
// exceed limit.
func (b batchDelta) within(limit int64) bool {
	for _, d := range b.guardrails {
		var requests int64
		for _, n := range d.outcomes {
			requests = satAdd(requests, n)
		}
		if requests > limit {
			return false
		}
		for _, n := range d.matches {
			if n > limit {
				return false
			}
		}
	}
	for _, c := range b.classifiers {
		if c.calls > limit {
			return false
		}
	}
	for _, u := range b.providers {
		if !u.within(limit) {
			return false
		}
	}
	return true
}

// claimCalls merges one classifier's figures into what was claimed (per figure, the
// maximum) and returns the merge and the difference.
func claimCalls(prev, cur *guardv1.ClassifierCalls) (guardv1.ClassifierCalls, *callDelta) {
	if prev == nil {
		prev = &guardv1.ClassifierCalls{}
	}
	merged := guardv1.ClassifierCalls{Classifier: cur.Classifier, Calls: max(prev.Calls, cur.Calls)}
	d := &callDelta{calls: max(0, cur.Calls-prev.Calls)}
	for k, v := range prev.Errors {
		if merged.Errors == nil {
			merged.Errors = map[string]int64{}
		}
		merged.Errors[k] = v
	}
	for k, v := range cur.Errors {
		if n := v - prev.Errors[k]; n > 0 {
			if d.errors == nil {
				d.errors = map[string]int64{}
			}
			d.errors[k] = n
			if merged.Errors == nil {
				merged.Errors = map[string]int64{}
			}
			merged.Errors[k] = v
		}
	}
	n := max(len(prev.Latency), len(cur.Latency))
	merged.Latency = make([]int64, n)
	d.latency = make([]int64, n)
	for i := range n {
		var p, c int64
		if i < len(prev.Latency) {
			p = prev.Latency[i]
		}
		if i < len(cur.Latency) {
			c = cur.Latency[i]
		}
		merged.Latency[i] = max(p, c)
		d.latency[i] = max(0, c-p)
	}
	return merged, d
}

// claimOne merges one guardrail's counts into what was claimed and returns the merge and
// the difference.
func claimOne(prev, cur *guardv1.GuardrailDecisions) (guardv1.GuardrailDecisions, *delta) {
	d := newDelta()
	type key struct {
		generation     int64
		phase          string
		outcome        guardv1.Outcome
		category, code string
	}
	counted := map[key]int64{}
	merged := guardv1.GuardrailDecisions{Guardrail: cur.Guardrail, Last: cur.Last}
	if prev != nil {
		merged.Last = max(prev.Last, cur.Last)
		for _, c := range prev.Counts {
			counted[key{c.Generation, c.Phase, c.Outcome, c.Category, c.Code}] = c.Requests
		}
	}
	for _, c := range cur.Counts {
		k := key{c.Generation, c.Phase, c.Outcome, c.Category, c.Code}
		if n := c.Requests - counted[k]; n > 0 {
			d.outcomes[c.Outcome] = satAdd(d.outcomes[c.Outcome], n)
			dk := detailKey{c.Outcome, c.Phase, c.Category, c.Code}
			d.detail[dk] = satAdd(d.detail[dk], n)
			counted[k] = c.Requests
		}
	}
	for k, v := range counted {
		merged.Counts = append(merged.Counts, guardv1.DecisionCount{Generation: k.generation, Phase: k.phase, Outcome: k.outcome,
			Category: k.category, Code: k.code, Requests: v})
	}
	sort.Slice(merged.Counts, func(i, j int) bool { return guardv1.LessCount(merged.Counts[i], merged.Counts[j]) })
	matches := map[string]int64{}
	if prev != nil {
		for k, v := range prev.Matches {
			matches[k] = v
		}
	}
	for k, v := range cur.Matches {
		if n := v - matches[k]; n > 0 {
			d.matches[k] = satAdd(d.matches[k], n)
			matches[k] = v
		}
	}
	if len(matches) > 0 {
		merged.Matches = matches
	}
	if !d.empty() {
		d.last = time.UnixMilli(cur.Last)
	}
	return merged, d
}

// knownOutcomes are the outcomes a guard may count (guardv1.Outcome values).

// validateBatch checks a batch from a guard of namespace ns; a count for a Guardrail of
// another namespace refuses the whole batch.
func validateBatch(req *guardv1.DecisionsRequest, ns string) error {
	if !guardv1.ValidID(req.Incarnation) || req.Started <= 0 {
		return &refusal{400, "bad_request", "a batch needs an incarnation id and its start time"}
	}
	keys := 0
	for _, g := range req.Guardrails {
		gns, name, ok := strings.Cut(g.Guardrail, "/")
		if !ok || name == "" || len(g.Guardrail) > 253+64 {
			return &refusal{400, "bad_request", "a guardrail is named namespace/name"}
		}
		if gns != ns && gns != "" {
			return &refusal{403, "other_namespace", "decisions are accepted only for Guardrails of the guard's own namespace and ClusterGuardrails"}
		}
		keys += len(g.Counts) + len(g.Matches)
		for _, c := range g.Counts {
			if !c.Outcome.Known() || c.Requests < 0 || !validName(c.Phase, 16) || !validName(c.Category, 253) ||
				!validName(c.Code, 32) {
				return &refusal{400, "bad_request", "a count has an unknown outcome or an out-of-range field"}
			}
		}
		for k, v := range g.Matches {
			if v < 0 || k == "" || !validName(k, 253) {
				return &refusal{400, "bad_request", "a match count is out of range"}
			}
		}
	}
	if len(req.Classifiers) > guardv1.MaxClassifiers {
		return &refusal{413, "too_large", "the batch reports on more classifiers than a guard keeps"}
	}
	for _, c := range req.Classifiers {
		cns, name, ok := strings.Cut(c.Classifier, "/")
		if !ok || name == "" || len(c.Classifier) > 253+64 {
			return &refusal{400, "bad_request", "a classifier is named namespace/name"}
		}
		if cns != ns && cns != "" {
			return &refusal{403, "other_namespace", "figures are accepted only for Classifiers of the guard's own namespace and ClusterClassifiers"}
		}
		if c.Calls < 0 || len(c.Latency) > len(guardv1.LatencyBucketsMs)+1 || len(c.Errors) > 8 {
			return &refusal{400, "bad_request", "classifier figures out of range"}
		}
		for k, v := range c.Errors {
			if v < 0 || !validName(k, 32) {
				return &refusal{400, "bad_request", "classifier figures out of range"}
			}
		}
		for _, v := range c.Latency {
			if v < 0 {
				return &refusal{400, "bad_request", "classifier figures out of range"}
			}
		}
	}
	if err := validateUsage(req.Providers); err != nil {
		return err
	}
	if len(req.Samples) > guardv1.MaxSamples {
		return &refusal{413, "too_large", "the batch has more samples than a guard keeps"}
	}
	for _, sm := range req.Samples {
		if len(sm.Findings) > 8 || !validName(sm.Phase, 16) || !validName(sm.Code, 32) ||
			(sm.RequestID != "" && !guardv1.ValidID(sm.RequestID)) {
			return &refusal{400, "bad_request", "a sample is out of range"}
		}
		for _, f := range sm.Findings {
			if !validName(f.Name, 253) {
				return &refusal{400, "bad_request", "a sample is out of range"}
			}
		}
	}
	if keys > 2*guardv1.MaxDecisionKeys+len(req.Guardrails)*(len(guardv1.Outcomes)+guardv1.MaxMatchNames+1) {
		return &refusal{413, "too_large", "the batch has more keys than a guard keeps"}
	}
	return nil
}

// validName reports whether s may be written into status and Events as a phase, code,
// category or rule name: names of the policy, never free text — at most limit of letters,
// digits and ._:/- (empty is valid: the field is absent).
func validName(s string, limit int) bool {
	if len(s) > limit {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-' || c == '/'
		if !ok {
			return false
		}
	}
	return true
}

// localName is how a batch's key (namespace/name, or /name for a cluster object) is kept
// once validateBatch bound it to the guard's namespace: the name, or /name.
func localName(key string) string {
	if strings.HasPrefix(key, "/") {
		return key
	}
	_, name, _ := strings.Cut(key, "/")
	return name
}

// objectKey is the key of the object a local name (localName) denotes for a guard of
// namespace ns: a cluster object has no namespace.
func objectKey(ns, name string) types.NamespacedName {
	if cluster, ok := strings.CutPrefix(name, "/"); ok {
		return types.NamespacedName{Name: cluster}
	}
	return types.NamespacedName{Namespace: ns, Name: name}
}
