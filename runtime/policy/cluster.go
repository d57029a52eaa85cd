package policy

import (
	"cmp"
	"slices"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/field"
)

// Cluster baselines. A ClusterGuardrail and a ClusterClassifier travel
// in the same envelope as the namespaced kinds (Object, with their GuardrailSpec and
// ClassifierSpec), with the kind saying which they are and no namespace: their keys are
// "/name", which no namespaced object's key can be (a namespace is never empty), so a
// ClusterGuardrail resolves its classifierRef among ClusterClassifiers and a Guardrail
// among the Classifiers of its namespace, and the guard reports decisions of a
// ClusterGuardrail under "/name".
const (
	// KindClusterGuardrail is the kind of a cluster-scoped Guardrail.
	KindClusterGuardrail = "ClusterGuardrail"
	// KindClusterClassifier is the kind of a cluster-scoped Classifier.
	KindClusterClassifier = "ClusterClassifier"
)

// scopeErrors refuses a cluster object with a namespace: its key would be a namespaced
// object's, and its classifierRef would resolve among that namespace's Classifiers.
func scopeErrors(src Sources) Errors {
	var errs Errors
	for i := range src.Classifiers {
		c := &src.Classifiers[i]
		if c.Kind == KindClusterClassifier && c.Namespace != "" {
			errs = append(errs, &Error{Kind: KindClusterClassifier, Key: Key(c.Namespace, c.Name), Reason: spec.ReasonInvalidSpec,
				Errs: field.ErrorList{field.Forbidden(field.NewPath("metadata", "namespace"), "a ClusterClassifier has no namespace")}})
		}
	}
	for i := range src.Guardrails {
		g := &src.Guardrails[i]
		if g.Kind == KindClusterGuardrail && g.Namespace != "" {
			errs = append(errs, &Error{Kind: KindClusterGuardrail, Key: Key(g.Namespace, g.Name), Reason: spec.ReasonInvalidSpec,
				Errs: field.ErrorList{field.Forbidden(field.NewPath("metadata", "namespace"), "a ClusterGuardrail has no namespace")}})
		}
	}
	return errs
}

// RunOrder orders guardrails as the engine runs them: the
// cluster tier (ClusterGuardrails) before the namespace tier, and within a tier the
// sanitizers (Strip, Redact, Pseudonymize) by priority then name, then the others by key.
// A tier judges what the tiers before it left, so a tenant's sanitizer never hides
// content from a ClusterGuardrail: the cluster tier judges the content as it arrives.
func RunOrder(a, b *Guardrail) int {
	if a.Cluster != b.Cluster {
		if a.Cluster {
			return -1
		}
		return 1
	}
	as, bs := a.Sanitizer(), b.Sanitizer()
	switch {
	case as != bs:
		if as {
			return -1
		}
		return 1
	case as:
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Key, b.Key))
	}
	return cmp.Compare(a.Key, b.Key)
}

// Effective is the composed policy of a set of guardrails (those selecting one pod) at
// one phase: what `kubectl guardrail explain` shows as the effective rule per boundary.
type Effective struct {
	Phase Phase
	// Order lists the keys of the guardrails judging this phase, in run order (RunOrder).
	Order []string
	// Enforcing and Reporting split Order by mode.
	Enforcing, Reporting []string
	// Action is the strongest action an enforcing guardrail of this phase takes on a
	// match (Action.Stronger), ActionAllow when none enforces.
	Action Action
	// FailClosed is true when an evaluation failure at this phase refuses the content:
	// some guardrail of the phase fails closed (failure policies combine fail-closed).
	FailClosed bool
	// Categories maps each category id matched by a category rule of an enforcing
	// guardrail to the strongest action taken on it, and the guardrail taking it (the
	// first in run order among equals).
	Categories map[string]CategoryEffect
}

// CategoryEffect is the strongest enforced action on one category and who takes it.
type CategoryEffect struct {
	Action    Action
	Guardrail string
}

// Compose is the composition rule of cluster baselines and namespaces as data: every guardrail applies; a
// Report guardrail never lowers what an Enforce one does (Report changes only its own
// effect); on the same category the strongest enforced action wins; a phase fails closed
// when any of its guardrails does. It returns one Effective per phase that some guardrail
// judges, in phase order. It is pure: the engine enforces the same rule by running every
// guardrail (RunOrder) and letting any block, failure or sanitization stand.
func Compose(gs []*Guardrail) []Effective {
	ordered := slices.Clone(gs)
	slices.SortStableFunc(ordered, RunOrder)
	var out []Effective
	for p := PhaseInput; p <= PhaseToolResults; p++ {
		e := Effective{Phase: p, Categories: map[string]CategoryEffect{}}
		for _, g := range ordered {
			if !g.Phases.Has(p) {
				continue
			}
			e.Order = append(e.Order, g.Key)
			e.FailClosed = e.FailClosed || !g.FailOpen
			if g.Mode == ModeReport {
				e.Reporting = append(e.Reporting, g.Key)
				continue
			}
			e.Enforcing = append(e.Enforcing, g.Key)
			actions := []Action{}
			if len(g.Categories) > 0 {
				actions = append(actions, g.Action)
			}
			for _, r := range g.Rules {
				actions = append(actions, r.Action)
			}
			for _, a := range actions {
				if a.Stronger(e.Action) {
					e.Action = a
				}
			}
			for _, c := range g.Categories {
				if cur, ok := e.Categories[c.ID]; !ok || g.Action.Stronger(cur.Action) {
					e.Categories[c.ID] = CategoryEffect{Action: g.Action, Guardrail: g.Key}
				}
			}
		}
		if len(e.Order) > 0 {
			out = append(out, e)
		}
	}
	return out
}
