package intake

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
)

// Exactly once, whatever happens to a replica. A claim (claim.go) moves counts from a
// guard's cumulative figures into a replica's buffer; the buffer reaches status at the
// next flush. Two things make that exact:
//
//   - What a replica claimed and has not yet written is not only in its memory: the claim
//     also records it on the guard's Lease, in guards.AnnotationDecisionsOwed, as an entry
//     of the replica (its writer id, new each time the process starts) and the epoch of
//     the flush that will write it. A replica that dies (SIGKILL, OOM, node loss) leaves
//     its entries behind; once its heartbeat Lease has expired another replica takes them
//     over (sweep.go): what already reached status is dropped, the rest becomes that
//     replica's own, written at its next flush.
//   - Each status write marks the object with "<writer>/<epoch>" (status.decisions.writes,
//     status.calls.writes, status.usage.writes; one mark per writer, the latest). A
//     writer writes an object's epochs in order, so a mark says which of its epochs
//     reached that object. A write whose outcome is unknown (a timeout, a connection cut
//     by a SIGTERM) is retried under the same mark, and the retry finds it: counted once.
//     Whoever takes over a dead writer's entries finds there what already landed.

// maxMarks bounds an object's write marks: one per writer, the least recently written
// dropped beyond it. A mark is needed while its writer may still retry or be taken over,
// a few intervals; it would take 16 other writers (replica restarts) writing the same
// object in between for a mark to go too early.
const maxMarks = 16

// mark is an object's mark for writer's epoch.
func mark(writer string, epoch int64) string { return writer + "/" + strconv.FormatInt(epoch, 10) }

// landedIn reports whether marks say that writer's epoch reached the object.
func landedIn(marks []string, writer string, epoch int64) bool {
	for _, m := range marks {
		w, e, ok := strings.Cut(m, "/")
		if !ok || w != writer {
			continue
		}
		n, err := strconv.ParseInt(e, 10, 64)
		return err == nil && n >= epoch
	}
	return false
}

// withMark returns marks with writer's mark at epoch, last (the most recent), keeping at
// most maxMarks.
func withMark(marks []string, writer string, epoch int64) []string {
	out := make([]string, 0, len(marks)+1)
	for _, m := range marks {
		if w, _, _ := strings.Cut(m, "/"); w != writer {
			out = append(out, m)
		}
	}
	out = append(out, mark(writer, epoch))
	if len(out) > maxMarks {
		out = out[len(out)-maxMarks:]
	}
	return out
}

// owedEntry is what one writer claimed from one guard for one epoch and has not written
// (or not yet seen written): deltas, in the shapes of the guard's own wire types, keyed by
// the batch's local names (the namespace is the Lease's pod's).
type owedEntry struct {
	Writer string `json:"writer"`
	Epoch  int64  `json:"epoch"`
	// Claims are the ids of the latest claims merged into the entry: a replica that does
	// not know whether its claim reached the Lease (its write timed out) looks for it here.
	Claims      []string                     `json:"claims,omitempty"`
	Guardrails  []guardv1.GuardrailDecisions `json:"guardrails,omitempty"`
	Classifiers []guardv1.ClassifierCalls    `json:"classifiers,omitempty"`
	Providers   []guardv1.ProviderUsage      `json:"providers,omitempty"`
}

// maxClaimsKept bounds an entry's claim ids: a claim is looked for right after it was
// written and, if that failed, at its epoch's flush; a guard makes one or two claims per
// epoch at the default intervals.
const maxClaimsKept = 16

// maxOwedBytes bounds the annotation (with the claim's maxClaimBytes, within the
// apiserver's 256 KiB for all of an object's annotations). A claim that would not fit is
// answered 503 and resent by the guard after the next flush emptied the entries.
const maxOwedBytes = 96 << 10

func parseOwed(s string) ([]owedEntry, error) {
	var es []owedEntry
	if s == "" {
		return nil, nil
	}
	err := json.Unmarshal([]byte(s), &es)
	return es, err
}

// encodeOwed is the annotation's value; "" when nothing is owed.
func encodeOwed(es []owedEntry) (string, error) {
	if len(es) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(es)
	return string(raw), err
}

// add merges bd into the entry.
func (e *owedEntry) add(bd batchDelta) {
	bd2 := e.delta()
	bd2.merge(bd)
	*e = owedEntry{Writer: e.Writer, Epoch: e.Epoch, Claims: e.Claims}
	e.set(bd2)
}

// set writes bd into the entry's delta fields, sorted so that the annotation is stable.
func (e *owedEntry) set(bd batchDelta) {
	e.Guardrails, e.Classifiers, e.Providers = nil, nil, nil
	for name, d := range bd.guardrails {
		e.Guardrails = append(e.Guardrails, d.wire(name))
	}
	sort.Slice(e.Guardrails, func(i, j int) bool { return e.Guardrails[i].Guardrail < e.Guardrails[j].Guardrail })
	for name, d := range bd.classifiers {
		e.Classifiers = append(e.Classifiers, guardv1.ClassifierCalls{Classifier: name, Calls: d.calls, Errors: d.errors,
			Latency: d.latency})
	}
	sort.Slice(e.Classifiers, func(i, j int) bool { return e.Classifiers[i].Classifier < e.Classifiers[j].Classifier })
	for name, d := range bd.providers {
		e.Providers = append(e.Providers, guardv1.ProviderUsage{Provider: name, Requests: d.requests, InputTokens: d.input,
			OutputTokens: d.output})
	}
	sort.Slice(e.Providers, func(i, j int) bool { return e.Providers[i].Provider < e.Providers[j].Provider })
}

// delta reads the entry's deltas back.
func (e *owedEntry) delta() batchDelta {
	bd := batchDelta{guardrails: map[string]*delta{}, classifiers: map[string]*callDelta{}, providers: map[string]usageDelta{}}
	for i := range e.Guardrails {
		bd.guardrails[e.Guardrails[i].Guardrail] = deltaOfWire(&e.Guardrails[i])
	}
	for _, c := range e.Classifiers {
		bd.classifiers[c.Classifier] = &callDelta{calls: c.Calls, errors: c.Errors, latency: c.Latency}
	}
	for _, u := range e.Providers {
		bd.providers[u.Provider] = usageDelta{requests: u.Requests, input: u.InputTokens, output: u.OutputTokens}
	}
	return bd
}

// empty reports whether the entry owes nothing.
func (e *owedEntry) empty() bool {
	return len(e.Guardrails) == 0 && len(e.Classifiers) == 0 && len(e.Providers) == 0
}

// keep keeps only the parts of the entry for which keep(kind, local name) holds.
func (e *owedEntry) keep(keep func(kind itemKind, name string) bool) {
	e.Guardrails = slices.DeleteFunc(e.Guardrails, func(g guardv1.GuardrailDecisions) bool { return !keep(kindDecisions, g.Guardrail) })
	e.Classifiers = slices.DeleteFunc(e.Classifiers, func(c guardv1.ClassifierCalls) bool { return !keep(kindCalls, c.Classifier) })
	e.Providers = slices.DeleteFunc(e.Providers, func(u guardv1.ProviderUsage) bool { return !keep(kindUsage, u.Provider) })
}

// addClaim records a claim id in the entry, keeping the latest maxClaimsKept.
func (e *owedEntry) addClaim(id string) {
	e.Claims = append(e.Claims, id)
	if len(e.Claims) > maxClaimsKept {
		e.Claims = e.Claims[len(e.Claims)-maxClaimsKept:]
	}
}

// wire is d in the guard's wire shape: Counts hold the added requests per outcome,
// phase, category and code.
func (d *delta) wire(name string) guardv1.GuardrailDecisions {
	g := guardv1.GuardrailDecisions{Guardrail: name}
	if !d.last.IsZero() {
		g.Last = d.last.UnixMilli()
	}
	seen := map[guardv1.Outcome]int64{} // claimOne breaks every request down; the rest is a safeguard
	for k, n := range d.detail {
		g.Counts = append(g.Counts, guardv1.DecisionCount{Phase: k.phase, Outcome: k.outcome, Category: k.category, Code: k.code, Requests: n})
		seen[k.outcome] = satAdd(seen[k.outcome], n)
	}
	for outcome, n := range d.outcomes {
		if rest := n - seen[outcome]; rest > 0 {
			g.Counts = append(g.Counts, guardv1.DecisionCount{Outcome: outcome, Requests: rest})
		}
	}
	sort.Slice(g.Counts, func(i, j int) bool { return guardv1.LessCount(g.Counts[i], g.Counts[j]) })
	if len(d.matches) > 0 {
		g.Matches = map[string]int64{}
		for k, v := range d.matches {
			g.Matches[k] = v
		}
	}
	return g
}

// deltaOfWire reads a delta written by wire.
func deltaOfWire(g *guardv1.GuardrailDecisions) *delta {
	d := newDelta()
	for _, c := range g.Counts {
		if !c.Outcome.Known() || c.Requests <= 0 {
			continue
		}
		d.outcomes[c.Outcome] = satAdd(d.outcomes[c.Outcome], c.Requests)
		k := detailKey{c.Outcome, c.Phase, c.Category, c.Code}
		d.detail[k] = satAdd(d.detail[k], c.Requests)
	}
	for k, v := range g.Matches {
		if v > 0 {
			d.matches[k] = v
		}
	}
	if g.Last > 0 {
		d.last = time.UnixMilli(g.Last)
	}
	return d
}

// merge adds o into b.
func (b *batchDelta) merge(o batchDelta) {
	if b.guardrails == nil {
		b.guardrails = map[string]*delta{}
	}
	if b.classifiers == nil {
		b.classifiers = map[string]*callDelta{}
	}
	if b.providers == nil {
		b.providers = map[string]usageDelta{}
	}
	for name, d := range o.guardrails {
		if b.guardrails[name] == nil {
			b.guardrails[name] = newDelta()
		}
		b.guardrails[name].add(d)
	}
	for name, d := range o.classifiers {
		if b.classifiers[name] == nil {
			b.classifiers[name] = &callDelta{}
		}
		b.classifiers[name].add(d)
	}
	for name, d := range o.providers {
		u := b.providers[name]
		u.add(d)
		b.providers[name] = u
	}
}
