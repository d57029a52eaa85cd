package intake

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
)

// Decisions of ClusterGuardrails: guards of any namespace report them
// under "/name"; they are summed into the ClusterGuardrail's status.decisions like a
// Guardrail's, and broken down by the guards' namespace into status.namespaces and
// status.otherNamespaces (at most v1alpha1.MaxNamespacesListed listed,
// policystatus.AddDecisions), with at most one write per ClusterGuardrail per interval.

// addNamespace records d as counted by a guard of namespace ns.
func (p *pendingDecisions) addNamespace(ns string, d *delta) {
	if p.namespaces == nil {
		p.namespaces = map[string]*delta{}
	}
	if p.namespaces[ns] == nil {
		p.namespaces[ns] = newDelta()
	}
	p.namespaces[ns].add(d)
}

// namespaceFigures are the decision fields of a namespace's breakdown entry for d.
func namespaceFigures(d *delta) v1alpha1.NamespaceFigures {
	return v1alpha1.NamespaceFigures{Blocked: d.outcomes[guardv1.OutcomeBlocked], Redacted: d.outcomes[guardv1.OutcomeRedacted],
		WouldBlock: d.outcomes[guardv1.OutcomeWouldBlock], Failed: d.outcomes[guardv1.OutcomeFailed]}
}

// writeCluster adds p to a ClusterGuardrail's status (writeStatus): its decisions and
// their breakdown by namespace.
func (in *Intake) writeCluster(ctx context.Context, key types.NamespacedName, p *pendingDecisions, writer string, epoch int64) (client.Object, bool, error) {
	namespaces := make([]string, 0, len(p.namespaces))
	for ns := range p.namespaces {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	return in.writeStatus(ctx, key, func() client.Object { return &v1alpha1.ClusterGuardrail{} }, decisionMarks, func(o client.Object) {
		g := o.(*v1alpha1.ClusterGuardrail)
		addDecisions(&g.Status.GuardrailStatus, p.delta)
		for _, ns := range namespaces {
			policystatus.AddDecisions(&g.Status, ns, namespaceFigures(p.namespaces[ns]))
		}
	}, writer, epoch)
}
