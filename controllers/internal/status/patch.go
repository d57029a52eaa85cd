package status

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Patcher writes an object's status once per reconcile, from a deferred call.
type Patcher struct {
	client   client.Client
	recorder events.EventRecorder
	before   Object
	subs     []string
}

// NewPatcher remembers obj's status as it was read. subConditions are the condition types
// Ready is computed from, in order.
func NewPatcher(c client.Client, r events.EventRecorder, obj Object, subConditions ...string) *Patcher {
	return &Patcher{client: c, recorder: r, before: obj.DeepCopyObject().(Object), subs: subConditions}
}

// Finalize settles kstatus conditions from the reconcile's outcome, computes Ready, and
// patches the status if anything changed; on a Ready transition it emits an Event whose
// reason is Ready's reason.
//
//   - success (no error, no requeue): the generation is handled; Reconciling and Stalled
//     are removed and observedGeneration is set.
//   - terminal error (reconcile.TerminalError; the step marked Stalled): the generation is
//     handled as far as it can be; observedGeneration is set.
//   - waiting (RequeueAfter) or a transient error: Reconciling stays True and
//     observedGeneration keeps its old value, so tools wait.
func (p *Patcher) Finalize(ctx context.Context, obj Object, res ctrl.Result, recErr error) error {
	switch {
	case recErr == nil && res.IsZero():
		Remove(obj, v1alpha1.ConditionReconciling)
		Remove(obj, v1alpha1.ConditionStalled)
		obj.SetObservedGeneration(obj.GetGeneration())
	case errors.Is(recErr, reconcile.TerminalError(nil)):
		Remove(obj, v1alpha1.ConditionReconciling)
		obj.SetObservedGeneration(obj.GetGeneration())
	case recErr != nil:
		Remove(obj, v1alpha1.ConditionStalled)
		if c := Get(obj, v1alpha1.ConditionReconciling); c == nil || c.Status != metav1.ConditionTrue {
			MarkReconciling(obj, v1alpha1.ReasonProgressing, "Retrying after an error: "+recErr.Error())
		}
	default:
		Remove(obj, v1alpha1.ConditionStalled)
	}
	ready := Ready(obj.GetConditions(), obj.GetGeneration(), p.subs...)
	Set(obj, ready.Type, ready.Status, ready.Reason, ready.Message)

	if equality.Semantic.DeepEqual(statusOf(p.before), statusOf(obj)) {
		return nil
	}
	if err := p.client.Status().Patch(ctx, obj, client.MergeFrom(p.before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	p.emitTransition(obj)
	return nil
}

func (p *Patcher) emitTransition(obj Object) {
	if p.recorder == nil {
		return
	}
	old, cur := Get(p.before, v1alpha1.ConditionReady), Get(obj, v1alpha1.ConditionReady)
	if cur == nil || (old != nil && old.Status == cur.Status && old.Reason == cur.Reason) {
		return
	}
	if cur.Status == metav1.ConditionUnknown {
		return // still working; the outcome will be reported
	}
	kind := corev1.EventTypeNormal
	if cur.Status != metav1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	p.recorder.Eventf(obj, nil, kind, cur.Reason, "Reconcile", "%s", cur.Message)
}

// statusOf returns the part of obj that the patch writes.
func statusOf(obj Object) any {
	switch o := obj.(type) {
	case *v1alpha1.Classifier:
		return o.Status
	case *v1alpha1.Guardrail:
		return o.Status
	}
	return struct {
		C []metav1.Condition
		G int64
	}{obj.GetConditions(), obj.GetObservedGeneration()}
}
