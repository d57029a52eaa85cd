package guardrail

import (
	"context"
	"fmt"
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
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

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
	g.Status.Enforcement = policystatus.Status(e.Enforcement)
	before := status.Get(g, v1alpha1.ConditionEnforced)
	st, reason, msg := enforcedCondition(g, e)
	status.Set(g, v1alpha1.ConditionEnforced, st, reason, msg)
	if policystatus.Loud(reason) && r.Recorder != nil && (before == nil || before.Reason != reason || before.Message != msg) {
		r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, reason, "Enforce", "%s", msg)
	}
	if !e.nextExpiry.IsZero() {
		s.recount = e.nextExpiry.Sub(now) + expirySlack
	}
	return ctrl.Result{}, nil
}

// selectedPod is what is known of one running pod a Guardrail selects
// (policystatus.Pod).
type selectedPod struct {
	name     string
	cached   bool
	guardErr error
	ack      *guards.Ack
}

// enforcement is policystatus.Enforcement with the fields this package's tests read.
type enforcement struct {
	policystatus.Enforcement
	selected   int
	acked      []string
	nextExpiry time.Time
}

// countEnforcement is policystatus.Count for Guardrail g (its guards' Leases name it by
// its name).
func countEnforcement(g *v1alpha1.Guardrail, pods []selectedPod) enforcement {
	ps := make([]policystatus.Pod, len(pods))
	for i, p := range pods {
		ps[i] = policystatus.Pod{Name: p.name, Cached: p.cached, GuardErr: p.guardErr, Ack: p.ack}
	}
	e := policystatus.Count(g.Name, g.Generation, ps)
	return enforcement{Enforcement: e, selected: e.Selected, acked: e.Acked, nextExpiry: e.NextExpiry}
}

// enforcedCondition is policystatus.Condition for g's namespace.
func enforcedCondition(g *v1alpha1.Guardrail, e enforcement) (metav1.ConditionStatus, string, string) {
	return policystatus.Condition(g.Generation, "namespace "+g.Namespace, e.Enforcement)
}

// notDistributed says that a Guardrail that does not compile reaches no guard.
func notDistributed(g *v1alpha1.Guardrail) {
	g.Status.Enforcement = nil
	policystatus.NotDistributed(g)
}
