package guardrail

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// maxNamed bounds the pods a condition message names.
const maxNamed = 3

// expirySlack is how long after a guard's Lease expires its Guardrails are recounted.
const expirySlack = 100 * time.Millisecond

// reconcileEnforcement compares the running pods the selector matches with those whose
// guard acknowledged this generation and still answers. Selected pods are listed from the
// apiserver by metadata (pods without a guard are not cached, and they are the ones a
// user must hear about); what a guard acknowledged is its Lease in the operator's
// namespace, written by the control-plane server only; whether a pod's spec carries the
// guard is what the cache found (guards.GuardVerification). Labels and annotations
// of pods prove nothing: tenants write them. The next recount is due when the first live
// guard's Lease expires, so a guard that stops answering drops out without any event.
func (r *Reconciler) reconcileEnforcement(ctx context.Context, s *scope) (ctrl.Result, error) {
	g := s.obj
	sel := labels.Everything()
	if g.Spec.Selector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(v1alpha1.LabelSelectorToMetaV1(g.Spec.Selector)); err != nil {
			return ctrl.Result{}, fmt.Errorf("selector: %w", err) // compiled already; unreachable
		}
	}
	running := &metav1.PartialObjectMetadataList{}
	running.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.APIReader.List(ctx, running, client.InNamespace(g.Namespace), client.MatchingLabelsSelector{Selector: sel},
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning))}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the selected pods: %w", err)
	}
	var cached corev1.PodList
	if err := r.List(ctx, &cached, client.InNamespace(g.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the selected injected pods: %w", err)
	}
	now := r.now()
	leases, err := guards.ListAcks(ctx, r.Client, r.LeaseNamespace, g.Namespace, now)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the guards' Leases: %w", err)
	}
	verified := make(map[types.UID]error, len(cached.Items))
	for i := range cached.Items {
		verified[cached.Items[i].UID] = guards.GuardVerification(&cached.Items[i])
	}
	acks := make(map[types.UID]guards.Ack, len(leases))
	for _, a := range leases {
		acks[a.UID] = a
	}
	pods := make([]selectedPod, len(running.Items))
	for i := range running.Items {
		p := &running.Items[i]
		pods[i] = selectedPod{name: p.Name}
		pods[i].guardErr, pods[i].cached = verified[p.UID]
		if a, ok := acks[p.UID]; ok {
			pods[i].ack = &a
		}
	}
	e := countEnforcement(g, pods)
	g.Status.Enforcement = &v1alpha1.EnforcementStatus{
		SelectedPods: int32(e.selected), AcknowledgedPods: int32(len(e.acked)), //nolint:gosec // pods of a namespace
		PodsWithoutGuard: int32(len(e.without)), //nolint:gosec // pods of a namespace
		Summary:          fmt.Sprintf("%d/%d", len(e.acked), e.selected),
	}
	before := status.Get(g, v1alpha1.ConditionEnforced)
	st, reason, msg := enforcedCondition(g, e)
	status.Set(g, v1alpha1.ConditionEnforced, st, reason, msg)
	loud := reason == v1alpha1.ReasonPodsWithoutGuard || reason == v1alpha1.ReasonSnapshotRefused ||
		reason == v1alpha1.ReasonGuardsNotAnswering
	if loud && r.Recorder != nil && (before == nil || before.Reason != reason || before.Message != msg) {
		r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, reason, "Enforce", "%s", msg)
	}
	if !e.nextExpiry.IsZero() {
		s.recount = e.nextExpiry.Sub(now) + expirySlack
	}
	return ctrl.Result{}, nil
}

// selectedPod is what is known of one running pod a Guardrail selects.
type selectedPod struct {
	name string
	// cached is whether the cache holds the pod (it is labelled injected); guardErr is then
	// what the cache found of its spec: nil when it carries the guard.
	cached   bool
	guardErr error
	// ack is its guard's Lease, nil when it has none.
	ack *guards.Ack
}

// enforcement is how the selected pods stand for one generation of a Guardrail.
type enforcement struct {
	selected                                       int
	acked, without, notAnswering, refused, waiting []string
	// refusal is what the first refusing guard (by pod name) said, printable and bounded.
	refusal string
	// nextExpiry is when the first live guard's Lease expires; zero when none is live.
	nextExpiry time.Time
}

// countEnforcement sorts each selected pod into one bucket:
//
//   - without a guard: its spec does not carry the guard (cached and not verified), or it
//     has neither a Lease nor a cached spec that carries the guard;
//   - not answering: its guard's Lease expired (the guard stopped polling);
//   - acknowledged: its guard's live Lease names this generation;
//   - refused: its guard's live Lease says it refused the latest snapshot;
//   - waiting: a guard that has not acknowledged this generation yet (or is starting).
func countEnforcement(g *v1alpha1.Guardrail, pods []selectedPod) enforcement {
	e := enforcement{selected: len(pods)}
	sort.Slice(pods, func(i, j int) bool { return pods[i].name < pods[j].name })
	for _, p := range pods {
		switch {
		case p.cached && p.guardErr != nil, p.ack == nil && !p.cached:
			e.without = append(e.without, p.name)
		case p.ack == nil:
			e.waiting = append(e.waiting, p.name)
		case !p.ack.Live:
			e.notAnswering = append(e.notAnswering, p.name)
		default:
			if e.nextExpiry.IsZero() || p.ack.Expires.Before(e.nextExpiry) {
				e.nextExpiry = p.ack.Expires
			}
			gen, ok := p.ack.Enforced[g.Name]
			switch {
			case ok && gen == g.Generation:
				e.acked = append(e.acked, p.name)
			case p.ack.Refused != "":
				if len(e.refused) == 0 {
					e.refusal = p.ack.Refused
				}
				e.refused = append(e.refused, p.name)
			default:
				e.waiting = append(e.waiting, p.name)
			}
		}
	}
	return e
}

// enforcedCondition is the Enforced condition of e, the loudest reason first: a bypass,
// then guards that stopped answering, then refusals.
func enforcedCondition(g *v1alpha1.Guardrail, e enforcement) (metav1.ConditionStatus, string, string) {
	switch {
	case e.selected == 0:
		return metav1.ConditionFalse, v1alpha1.ReasonNoPodsSelected,
			fmt.Sprintf("No running pod of namespace %s matches the selector", g.Namespace)
	case len(e.without) > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonPodsWithoutGuard,
			fmt.Sprintf("%d of %d selected pods run without a guard, so their traffic bypasses this policy: %s; "+
				"opt their namespace in (label %s=enabled) or the pods (label %s=true) and restart them",
				len(e.without), e.selected, named(e.without), cp.LabelInjection, cp.LabelInject)
	case len(e.notAnswering) > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonGuardsNotAnswering,
			fmt.Sprintf("%d of %d selected pods' guards stopped answering the control plane, so what they enforce is "+
				"unknown: %s; look at their %s containers", len(e.notAnswering), e.selected, named(e.notAnswering),
				injection.ContainerName)
	case len(e.refused) > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonSnapshotRefused,
			fmt.Sprintf("%d of %d selected pods' guards refused the policy and keep their previous one: %s; a refusal: %s",
				len(e.refused), e.selected, named(e.refused), e.refusal)
	case len(e.acked) < e.selected:
		return metav1.ConditionFalse, v1alpha1.ReasonAwaitingAcknowledgement,
			fmt.Sprintf("%d of %d selected pods enforce generation %d", len(e.acked), e.selected, g.Generation)
	}
	return metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("All %d selected pods enforce generation %d", e.selected, g.Generation)
}

// named lists a few names, sorted, and how many more there are.
func named(names []string) string {
	sort.Strings(names)
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, +%d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}

// notDistributed says that a Guardrail that does not compile reaches no guard.
func notDistributed(g *v1alpha1.Guardrail) {
	g.Status.Enforcement = nil
	status.Set(g, v1alpha1.ConditionEnforced, metav1.ConditionFalse, v1alpha1.ReasonNotDistributed,
		"This generation is not sent to guards until it compiles; guards that had an earlier generation keep it")
}
