package policystatus

import (
	"maps"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
)

// PodChanged passes the pod events that can change a guardrail's enforcement: a pod
// appears or goes, or its labels, phase or guard verification change.
var PodChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if !maps.Equal(o.GetLabels(), n.GetLabels()) {
			return true
		}
		if op, ok := o.(*corev1.Pod); ok {
			if np, ok := n.(*corev1.Pod); ok && op.Status.Phase != np.Status.Phase {
				return true
			}
		}
		k := guards.AnnotationGuardVerification
		return o.GetAnnotations()[k] != n.GetAnnotations()[k]
	},
}

// LeaseChanged passes the guard Lease events that can change a guardrail's enforcement:
// a Lease appears or goes, its acknowledgement changes, or its guard answers again after
// its Lease expired. A heartbeat alone passes nothing: a thousand guards renew every few
// seconds between them, and expiry is found by the recount at the first expiry.
var LeaseChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*coordinationv1.Lease)
		n, ok2 := e.ObjectNew.(*coordinationv1.Lease)
		if !ok1 || !ok2 {
			return true
		}
		for _, k := range []string{guardv1.AnnotationEnforced, guardv1.AnnotationRefused} {
			if o.Annotations[k] != n.Annotations[k] {
				return true
			}
		}
		if n.Spec.RenewTime == nil {
			return false
		}
		// Expired before this renewal: the guard was counted as not answering.
		return !guards.ReadAck(o, n.Spec.RenewTime.Time).Live
	},
}

// EnforcedChanged passes Lease events that change which guardrails a guard enforces.
var EnforcedChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[guardv1.AnnotationEnforced] != e.ObjectNew.GetAnnotations()[guardv1.AnnotationEnforced]
	},
}

// ClusterName is the name under which a guard's Lease lists a ClusterGuardrail it
// enforces (guardv1.AnnotationEnforced, guards.Ack.Enforced): "/name", which no Guardrail's
// name can be, so that a Guardrail and a ClusterGuardrail of the same name are told apart.
func ClusterName(name string) string { return "/" + name }
