package guardrail

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/controlplane"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// maxNamed bounds the pods a condition message names.
const maxNamed = 3

// reconcileEnforcement compares the running pods the selector matches with those whose
// guard acknowledged this generation (the control-plane server records acks on pods).
// Injected pods are read from the manager's cache; pods without a guard are not cached,
// and they are the ones a user must hear about, so they are listed from the apiserver —
// by metadata, in this namespace, for this selector and without the injected label only.
func (r *Reconciler) reconcileEnforcement(ctx context.Context, s *scope) error {
	g := s.obj
	sel := labels.Everything()
	if g.Spec.Selector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(g.Spec.Selector.ToMetaV1()); err != nil {
			return fmt.Errorf("selector: %w", err) // compiled already; unreachable
		}
	}
	reqs, _ := sel.Requirements()
	withLabel := func(op selection.Operator) labels.Selector {
		req, err := labels.NewRequirement(cp.LabelInjected, op, []string{"true"})
		if err != nil {
			panic(err) // constant arguments
		}
		return labels.NewSelector().Add(reqs...).Add(*req)
	}
	var guarded corev1.PodList
	if err := r.List(ctx, &guarded, ctrl.InNamespace(g.Namespace), ctrl.MatchingLabelsSelector{Selector: withLabel(selection.Equals)}); err != nil {
		return fmt.Errorf("listing the selected injected pods: %w", err)
	}
	unguarded := &metav1.PartialObjectMetadataList{}
	unguarded.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.APIReader.List(ctx, unguarded, ctrl.InNamespace(g.Namespace),
		ctrl.MatchingLabelsSelector{Selector: withLabel(selection.NotEquals)},
		ctrl.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning))}); err != nil {
		return fmt.Errorf("listing the selected pods without a guard: %w", err)
	}
	var acked, without, refused []string
	refusal := ""
	for i := range unguarded.Items {
		without = append(without, unguarded.Items[i].Name)
	}
	running := 0
	for i := range guarded.Items {
		p := &guarded.Items[i]
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		running++
		switch {
		case controlplane.ParseEnforced(p.Annotations[cp.AnnotationEnforced])[g.Name] == g.Generation:
			acked = append(acked, p.Name)
		case p.Annotations[cp.AnnotationRefused] != "":
			refused = append(refused, p.Name)
			refusal = p.Annotations[cp.AnnotationRefused]
		}
	}
	selected := running + len(without)
	g.Status.Enforcement = &v1alpha1.EnforcementStatus{
		SelectedPods: int32(selected), AcknowledgedPods: int32(len(acked)), //nolint:gosec // pods of a namespace
		PodsWithoutGuard: int32(len(without)), //nolint:gosec // pods of a namespace
		Summary:          fmt.Sprintf("%d/%d", len(acked), selected),
	}

	before := status.Get(g, v1alpha1.ConditionEnforced)
	st := metav1.ConditionFalse
	var reason, msg string
	switch {
	case selected == 0:
		reason, msg = v1alpha1.ReasonNoPodsSelected, fmt.Sprintf("No running pod of namespace %s matches the selector", g.Namespace)
	case len(without) > 0:
		reason = v1alpha1.ReasonPodsWithoutGuard
		msg = fmt.Sprintf("%d of %d selected pods run without a guard, so their traffic bypasses this policy: %s; "+
			"opt their namespace in (label %s=enabled) or the pods (label %s=true) and restart them",
			len(without), selected, named(without), cp.LabelInjection, cp.LabelInject)
	case len(refused) > 0:
		reason = v1alpha1.ReasonSnapshotRefused
		msg = fmt.Sprintf("%d of %d selected pods' guards refused the policy and keep their previous one: %s; the latest refusal: %s",
			len(refused), selected, named(refused), refusal)
	case len(acked) < selected:
		reason = v1alpha1.ReasonAwaitingAcknowledgement
		msg = fmt.Sprintf("%d of %d selected pods enforce generation %d", len(acked), selected, g.Generation)
	default:
		st, reason = metav1.ConditionTrue, v1alpha1.ReasonSucceeded
		msg = fmt.Sprintf("All %d selected pods enforce generation %d", selected, g.Generation)
	}
	status.Set(g, v1alpha1.ConditionEnforced, st, reason, msg)
	loud := reason == v1alpha1.ReasonPodsWithoutGuard || reason == v1alpha1.ReasonSnapshotRefused
	if loud && r.Recorder != nil && (before == nil || before.Reason != reason || before.Message != msg) {
		r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, reason, "Enforce", "%s", msg)
	}
	return nil
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
