package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Object is a guardrail.dev object with status conditions and an observed generation.
type Object interface {
	client.Object
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
	GetObservedGeneration() int64
	SetObservedGeneration(int64)
}

// Set sets condition t on obj, stamped with obj's generation. lastTransitionTime changes
// only when the status does.
func Set(obj Object, t string, s metav1.ConditionStatus, reason, message string) {
	conds := obj.GetConditions()
	meta.SetStatusCondition(&conds, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration(),
	})
	obj.SetConditions(conds)
}

// Remove deletes condition t from obj.
func Remove(obj Object, t string) {
	conds := obj.GetConditions()
	meta.RemoveStatusCondition(&conds, t)
	obj.SetConditions(conds)
}

// Get returns condition t of obj, or nil.
func Get(obj Object, t string) *metav1.Condition {
	return meta.FindStatusCondition(obj.GetConditions(), t)
}

// MarkReconciling records that the controller is working towards Ready (waiting on a
// dependency or retrying): kstatus reads it as InProgress.
func MarkReconciling(obj Object, reason, message string) {
	Set(obj, v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, message)
}

// MarkStalled records a terminal error that only a spec change can fix: kstatus reads it
// as Failed. Reconciling is removed, since kstatus would report InProgress while it is True.
func MarkStalled(obj Object, reason, message string) {
	Remove(obj, v1alpha1.ConditionReconciling)
	Set(obj, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, message)
}

// Ready computes the Ready condition from the object's conditions: Stalled wins, then
// the first sub-condition (in the given order) that is not True, then Reconciling; when
// none of these applies the object is Ready, with inEffect as the message. This is the
// only place Ready is decided.
func Ready(conds []metav1.Condition, generation int64, inEffect string, subConditions ...string) metav1.Condition {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: generation}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, c.Reason, c.Message
		return ready
	}
	for _, t := range subConditions {
		c := meta.FindStatusCondition(conds, t)
		if c == nil {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, v1alpha1.ReasonProgressing, t+" is not determined yet"
			return ready
		}
		if c.Status != metav1.ConditionTrue {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, c.Reason, c.Message
			return ready
		}
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReconciling); c != nil && c.Status == metav1.ConditionTrue {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, c.Reason, c.Message
		return ready
	}
	ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, v1alpha1.ReasonSucceeded, inEffect
	return ready
}
