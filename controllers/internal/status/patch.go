package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// StaleRetry is how soon a reconcile whose status patch met a newer object is retried:
// long enough for the watch event of that object to reach the cache.
const StaleRetry = 100 * time.Millisecond

// Patcher writes an object's status once per reconcile, from a deferred call.
type Patcher struct {
	client   client.Client
	recorder events.EventRecorder
	before   Object
	subs     []string
	inEffect func() string
	waiting  []string
	stale    bool
}

// NewPatcher remembers obj's status as it was read. subConditions are the condition types
// Ready is computed from, in order.
func NewPatcher(c client.Client, r events.EventRecorder, obj Object, subConditions ...string) *Patcher {
	return &Patcher{client: c, recorder: r, before: obj.DeepCopyObject().(Object), subs: subConditions,
		inEffect: func() string { return fmt.Sprintf("Generation %d is in effect", obj.GetGeneration()) }}
}

// InEffect sets the message of a True Ready condition; by default it names the generation.
func (p *Patcher) InEffect(message func() string) *Patcher {
	p.inEffect = message
	return p
}

// WaitingReasons names the reasons of a False Ready condition that mean "waiting for
// something that is on its way" (a dependency still reconciling): their Events are
// Normal. Every other False Ready is a Warning: it needs someone to act.
func (p *Patcher) WaitingReasons(reasons ...string) *Patcher {
	p.waiting = reasons
	return p
}

// Finalize settles kstatus conditions from the reconcile's outcome, computes Ready, and
// patches the status if anything changed. It emits an Event when Ready changes status or
// reason, and when a new generation comes into effect (Ready stays True with a new
// message); the Event's reason is Ready's reason.
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
	case IsTerminal(recErr):
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
	ready := Ready(obj.GetConditions(), obj.GetGeneration(), p.inEffect(), p.subs...)
	Set(obj, ready.Type, ready.Status, ready.Reason, ready.Message)

	if equality.Semantic.DeepEqual(statusOf(p.before), statusOf(obj)) {
		return nil
	}
	// The patch carries the resourceVersion it was computed from: a reconcile that read a
	// cached object older than the last status write (the watch event of that write not
	// in yet) is refused instead of writing the same transition twice, with a second
	// Event. It is retried with the object as it is now; see Stale.
	err := p.client.Status().Patch(ctx, obj, client.MergeFromWithOptions(p.before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		p.stale = true
		return nil
	}
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	p.emitTransition(obj)
	return nil
}

// Stale reports whether Finalize found the object changed since it was read: the
// reconcile must be retried (Requeue) rather than counted as an error.
func (p *Patcher) Stale() bool { return p.stale }

func (p *Patcher) emitTransition(obj Object) {
	if p.recorder == nil {
		return
	}
	old, cur := Get(p.before, v1alpha1.ConditionReady), Get(obj, v1alpha1.ConditionReady)
	if cur == nil || cur.Status == metav1.ConditionUnknown {
		return // still working; the outcome will be reported
	}
	if old != nil && old.Status == cur.Status && old.Reason == cur.Reason &&
		(cur.Status != metav1.ConditionTrue || old.Message == cur.Message) {
		return
	}
	kind := corev1.EventTypeNormal
	if cur.Status != metav1.ConditionTrue && !slices.Contains(p.waiting, cur.Reason) {
		kind = corev1.EventTypeWarning
	}
	p.recorder.Eventf(obj, nil, kind, cur.Reason, "Reconcile", "%s", cur.Message)
}

// IsTerminal reports whether err is a terminal error: the object is Stalled until its
// spec (or an object it references) changes.
func IsTerminal(err error) bool {
	return err != nil && errors.Is(err, reconcile.TerminalError(nil))
}

// Outcome is what a reconciler returns to controller-runtime. A terminal error has done
// its work once Finalize has recorded it as Stalled: it is logged at info level and not
// returned, because a spec that only a user can fix is no controller error — returned, it
// would be logged as an ERROR with a stack trace on every reconcile and counted in
// controller_runtime_reconcile_errors_total.
func Outcome(ctx context.Context, err error) error {
	if !IsTerminal(err) {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Stalled until the spec changes", "error", err.Error())
	return nil
}

// statusOf returns the part of obj that the patch writes.
func statusOf(obj Object) any {
	switch o := obj.(type) {
	case *v1alpha1.Classifier:
		return o.Status
	case *v1alpha1.Guardrail:
		return o.Status
	case *v1alpha1.ClusterClassifier:
		return o.Status
	case *v1alpha1.ClusterGuardrail:
		return o.Status
	case *v1alpha1.SharedGuard:
		return o.Status
	case *v1alpha1.ModelProvider:
		return o.Status
	}
	return struct {
		C []metav1.Condition
		G int64
	}{obj.GetConditions(), obj.GetObservedGeneration()}
}
