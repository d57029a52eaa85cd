package clusterguardrail

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
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

// expirySlack is how long after a guard's Lease expires the ClusterGuardrails are
// recounted.
const expirySlack = 100 * time.Millisecond

// selectorOf parses a label selector of the API; nil selects everything.
func selectorOf(s *v1alpha1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(v1alpha1.LabelSelectorToMetaV1(s))
}

// reconcileEnforcement counts, in every namespace the namespaceSelector selects, the
// running pods the selector matches and those whose guard acknowledged this generation
// (its Lease lists the ClusterGuardrail as /name): one list of the selected pods from the
// apiserver (by metadata), one of the injected pods and one of the guards' Leases from
// the cache, whatever the number of namespaces. The counts are summed into
// status.enforcement and the Enforced condition, and broken down by namespace.
func (r *Reconciler) reconcileEnforcement(ctx context.Context, s *scope) (ctrl.Result, error) {
	g := s.obj
	podSel, err := selectorOf(g.Spec.Selector)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("selector: %w", err) // compiled already; unreachable
	}
	nsSel, err := selectorOf(g.Spec.NamespaceSelector)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("namespaceSelector: %w", err)
	}
	namespaces := &metav1.PartialObjectMetadataList{}
	namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.List(ctx, namespaces, client.MatchingLabelsSelector{Selector: nsSel}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the selected namespaces: %w", err)
	}
	selectedNS := make(map[string]bool, len(namespaces.Items))
	for i := range namespaces.Items {
		selectedNS[namespaces.Items[i].Name] = true
	}
	running := &metav1.PartialObjectMetadataList{}
	running.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.APIReader.List(ctx, running, client.MatchingLabelsSelector{Selector: podSel},
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning))}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the selected pods: %w", err)
	}
	var cached corev1.PodList
	if err := r.List(ctx, &cached, client.MatchingLabelsSelector{Selector: podSel}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the selected injected pods: %w", err)
	}
	var leases coordinationv1.LeaseList
	if err := r.List(ctx, &leases, client.InNamespace(r.LeaseNamespace), client.HasLabels{guards.LabelLeasePodNamespace}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the guards' Leases: %w", err)
	}
	now := r.now()
	verified := make(map[types.UID]error, len(cached.Items))
	for i := range cached.Items {
		verified[cached.Items[i].UID] = guards.GuardVerification(&cached.Items[i])
	}
	acks := make(map[types.UID]guards.Ack, len(leases.Items))
	for i := range leases.Items {
		a := guards.ReadAck(&leases.Items[i], now)
		acks[a.UID] = a
	}
	byNS := map[string][]policystatus.Pod{}
	for i := range running.Items {
		p := &running.Items[i]
		if !selectedNS[p.Namespace] {
			continue
		}
		pod := policystatus.Pod{Name: p.Namespace + "/" + p.Name}
		pod.GuardErr, pod.Cached = verified[p.UID]
		if a, ok := acks[p.UID]; ok {
			pod.Ack = &a
		}
		byNS[p.Namespace] = append(byNS[p.Namespace], pod)
	}
	name := policystatus.ClusterName(g.Name)
	var total policystatus.Enforcement
	perNS := make(map[string]v1alpha1.NamespaceFigures, len(byNS))
	for ns, pods := range byNS {
		e := policystatus.Count(name, g.Generation, pods)
		total.Add(e)
		perNS[ns] = v1alpha1.NamespaceFigures{SelectedPods: int32(e.Selected), AcknowledgedPods: int32(len(e.Acked)), //nolint:gosec // pods of a namespace
			PodsWithoutGuard: int32(len(e.Without))} //nolint:gosec // pods of a namespace
	}
	g.Status.Enforcement = policystatus.Status(total)
	g.Status.SelectedNamespaces = int32(len(byNS)) //nolint:gosec // namespaces of a cluster
	policystatus.SetEnforcement(&g.Status, perNS)

	before := status.Get(g, v1alpha1.ConditionEnforced)
	st, reason, msg := policystatus.Condition(g.Generation, "the selected namespaces", total)
	status.Set(g, v1alpha1.ConditionEnforced, st, reason, msg)
	if policystatus.Loud(reason) && r.Recorder != nil && (before == nil || before.Reason != reason || before.Message != msg) {
		r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, reason, "Enforce", "%s", msg)
	}
	if !total.NextExpiry.IsZero() {
		s.recount = total.NextExpiry.Sub(now) + expirySlack
	}
	return ctrl.Result{}, nil
}
