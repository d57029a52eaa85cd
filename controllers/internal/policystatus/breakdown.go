package policystatus

import (
	"math"
	"sort"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// A ClusterGuardrail's status breaks enforcement and decisions down by namespace in at
// most v1alpha1.MaxNamespacesListed entries (status.namespaces) and one sum of the rest
// (status.otherNamespaces), so that it stays a few KiB at any number of namespaces. Two
// writers share it, each under an optimistic lock: the ClusterGuardrail reconciler writes
// the enforcement figures of every selected namespace (SetEnforcement), the decisions
// intake adds decision counts (AddDecisions). Invariants: a namespace is listed at most
// once; the decisions of the listed entries plus otherNamespaces are every decision
// counted (a namespace that leaves the list leaves its counts in otherNamespaces, and one
// that joins starts from zero); the enforcement figures of the listed entries plus
// otherNamespaces are the latest count.

// decisions is the weight of an entry's decision counts.
func decisions(f *v1alpha1.NamespaceFigures) int64 {
	return satAdd(satAdd(f.Blocked, f.Redacted), satAdd(f.WouldBlock, f.Failed))
}

// attention reports whether a namespace has selected pods that do not enforce.
func attention(f *v1alpha1.NamespaceFigures) bool { return f.AcknowledgedPods < f.SelectedPods }

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func addDecisionFigures(to *v1alpha1.NamespaceFigures, f *v1alpha1.NamespaceFigures) {
	to.Blocked, to.Redacted = satAdd(to.Blocked, f.Blocked), satAdd(to.Redacted, f.Redacted)
	to.WouldBlock, to.Failed = satAdd(to.WouldBlock, f.WouldBlock), satAdd(to.Failed, f.Failed)
}

// SetEnforcement writes the enforcement figures of every selected namespace (perNS holds
// SelectedPods, AcknowledgedPods and PodsWithoutGuard; its decision fields are ignored)
// into st, and chooses the listed namespaces: those with pods that do not enforce first,
// then the most decisions, then by name. A namespace no longer selected leaves the list
// (its decisions stay in otherNamespaces).
func SetEnforcement(st *v1alpha1.ClusterGuardrailStatus, perNS map[string]v1alpha1.NamespaceFigures) {
	type entry struct {
		ns string
		f  v1alpha1.NamespaceFigures
	}
	listed := map[string]v1alpha1.NamespaceFigures{}
	for _, e := range st.Namespaces {
		listed[e.Namespace] = e.NamespaceFigures
	}
	other := v1alpha1.OtherNamespaces{}
	if st.OtherNamespaces != nil {
		addDecisionFigures(&other.NamespaceFigures, &st.OtherNamespaces.NamespaceFigures)
	}
	candidates := make([]entry, 0, len(perNS))
	for ns, f := range perNS {
		c := v1alpha1.NamespaceFigures{SelectedPods: f.SelectedPods, AcknowledgedPods: f.AcknowledgedPods, PodsWithoutGuard: f.PodsWithoutGuard}
		if old, ok := listed[ns]; ok {
			addDecisionFigures(&c, &old)
			delete(listed, ns)
		}
		candidates = append(candidates, entry{ns, c})
	}
	for _, old := range listed {
		addDecisionFigures(&other.NamespaceFigures, &old) // no longer selected
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := &candidates[i].f, &candidates[j].f
		if attention(a) != attention(b) {
			return attention(a)
		}
		if da, db := decisions(a), decisions(b); da != db {
			return da > db
		}
		return candidates[i].ns < candidates[j].ns
	})
	st.Namespaces = nil
	for i, c := range candidates {
		if i < v1alpha1.MaxNamespacesListed {
			st.Namespaces = append(st.Namespaces, v1alpha1.NamespaceBreakdown{Namespace: c.ns, NamespaceFigures: c.f})
			continue
		}
		other.Namespaces++
		other.SelectedPods += c.f.SelectedPods
		other.AcknowledgedPods += c.f.AcknowledgedPods
		other.PodsWithoutGuard += c.f.PodsWithoutGuard
		addDecisionFigures(&other.NamespaceFigures, &c.f)
	}
	sort.Slice(st.Namespaces, func(i, j int) bool { return st.Namespaces[i].Namespace < st.Namespaces[j].Namespace })
	st.OtherNamespaces = nil
	if other != (v1alpha1.OtherNamespaces{}) {
		st.OtherNamespaces = &other
	}
}

// AddDecisions adds the decision counts of one namespace (f's decision fields) to st. A
// listed namespace gets them; an unlisted one joins the list while it has room, or takes
// the place of the listed namespace with the fewest decisions among those whose pods all
// enforce when it brings more than that one has (the heavy hitters of the space-saving
// algorithm), whose counts go to otherNamespaces; otherwise they go to otherNamespaces.
func AddDecisions(st *v1alpha1.ClusterGuardrailStatus, ns string, f v1alpha1.NamespaceFigures) {
	add := v1alpha1.NamespaceFigures{Blocked: f.Blocked, Redacted: f.Redacted, WouldBlock: f.WouldBlock, Failed: f.Failed}
	for i := range st.Namespaces {
		if st.Namespaces[i].Namespace == ns {
			addDecisionFigures(&st.Namespaces[i].NamespaceFigures, &add)
			return
		}
	}
	if len(st.Namespaces) < v1alpha1.MaxNamespacesListed {
		st.Namespaces = append(st.Namespaces, v1alpha1.NamespaceBreakdown{Namespace: ns, NamespaceFigures: add})
		sort.Slice(st.Namespaces, func(i, j int) bool { return st.Namespaces[i].Namespace < st.Namespaces[j].Namespace })
		return
	}
	if st.OtherNamespaces == nil {
		st.OtherNamespaces = &v1alpha1.OtherNamespaces{}
	}
	victim := -1
	for i := range st.Namespaces {
		e := &st.Namespaces[i].NamespaceFigures
		if attention(e) {
			continue
		}
		if victim < 0 || decisions(e) < decisions(&st.Namespaces[victim].NamespaceFigures) {
			victim = i
		}
	}
	if victim < 0 || decisions(&add) <= decisions(&st.Namespaces[victim].NamespaceFigures) {
		addDecisionFigures(&st.OtherNamespaces.NamespaceFigures, &add)
		return
	}
	v := &st.Namespaces[victim]
	o := st.OtherNamespaces
	o.Namespaces++
	o.SelectedPods += v.SelectedPods
	o.AcknowledgedPods += v.AcknowledgedPods
	o.PodsWithoutGuard += v.PodsWithoutGuard
	addDecisionFigures(&o.NamespaceFigures, &v.NamespaceFigures)
	*v = v1alpha1.NamespaceBreakdown{Namespace: ns, NamespaceFigures: add}
	sort.Slice(st.Namespaces, func(i, j int) bool { return st.Namespaces[i].Namespace < st.Namespaces[j].Namespace })
}
