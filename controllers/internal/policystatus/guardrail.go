package policystatus

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// WaitInterval is how often an object waiting for another (a guardrail for its classifier,
// a classifier for its Secret) is looked at again, on top of the watches.
const WaitInterval = time.Minute

// ClassifierMissing records that the classifier a guardrail references does not exist:
// what names it ("Classifier web", "ClusterClassifier web") and where says where it was
// looked for (" in namespace shop", or "" for a cluster object).
func ClassifierMissing(g status.Object, what, where string) (ctrl.Result, error) {
	status.Set(g, v1alpha1.ConditionClassifierResolved, metav1.ConditionFalse, v1alpha1.ReasonClassifierNotFound,
		what+" does not exist"+where)
	status.MarkReconciling(g, v1alpha1.ReasonClassifierNotFound, "Waiting for "+what+" to be created"+where)
	return ctrl.Result{RequeueAfter: WaitInterval}, nil
}

// ClassifierReady checks that the classifier c a guardrail g references (what names it,
// "Classifier web") is Ready for its latest generation. A Stalled classifier stalls the
// guardrail: waiting would leave it in progress forever, and GitOps tools would wait for
// it until their timeout. It returns a zero result and no error when c is Ready.
func ClassifierReady(g, c status.Object, what string) (ctrl.Result, error) {
	// Conditions are stamped with the generation they describe: one of an older generation
	// says nothing about the current spec.
	gen := c.GetGeneration()
	if !c.GetDeletionTimestamp().IsZero() && c.GetObservedGeneration() == gen-1 {
		// Deleting a custom resource bumps its generation without changing its spec: while
		// deletion waits for the classifier's users, its last judgement of the spec stands.
		gen = c.GetObservedGeneration()
	}
	current := func(cond *metav1.Condition) bool { return cond != nil && cond.ObservedGeneration == gen }
	if stalled := status.Get(c, v1alpha1.ConditionStalled); current(stalled) && stalled.Status == metav1.ConditionTrue {
		msg := fmt.Sprintf("%s is Stalled (%s): %s", what, stalled.Reason, stalled.Message)
		status.Set(g, v1alpha1.ConditionClassifierResolved, metav1.ConditionFalse, v1alpha1.ReasonClassifierStalled, msg)
		status.MarkStalled(g, v1alpha1.ReasonClassifierStalled, msg)
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s", msg))
	}
	ready := status.Get(c, v1alpha1.ConditionReady)
	if !current(ready) || ready.Status != metav1.ConditionTrue || c.GetObservedGeneration() != gen {
		why := "it is reconciling"
		if current(ready) && ready.Status != metav1.ConditionTrue && ready.Message != "" {
			why = ready.Message
		}
		status.Set(g, v1alpha1.ConditionClassifierResolved, metav1.ConditionFalse, v1alpha1.ReasonClassifierNotReady,
			fmt.Sprintf("%s is not Ready: %s", what, why))
		status.MarkReconciling(g, v1alpha1.ReasonClassifierNotReady,
			fmt.Sprintf("Waiting for %s to become Ready: %s", what, why))
		return ctrl.Result{RequeueAfter: WaitInterval}, nil
	}
	return ctrl.Result{}, nil
}

// Compiled records the outcome of compiling guardrail g against its Ready classifier
// (what names it, at generation gen): ClassifierResolved, and Stalled with the field named
// when it does not compile. compileErr is the compiler's (*policy.Error or nil).
func Compiled(g status.Object, what string, gen int64, compileErr error) error {
	if perr, ok := compileErr.(*policy.Error); ok && perr.Reason == v1alpha1.ReasonClassifierMismatch {
		status.Set(g, v1alpha1.ConditionClassifierResolved, metav1.ConditionFalse, perr.Reason, perr.Message())
	} else {
		status.Set(g, v1alpha1.ConditionClassifierResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
			fmt.Sprintf("%s (generation %d) is Ready", what, gen))
	}
	if compileErr == nil {
		return nil
	}
	perr, ok := compileErr.(*policy.Error)
	if !ok {
		return compileErr
	}
	status.MarkStalled(g, perr.Reason, perr.Message())
	return reconcile.TerminalError(compileErr)
}

// InEffect is the Ready message of a guardrail whose generation is in effect: it says the
// mode, so that a switch between Report and Enforce shows in status and in the Event, and,
// in Enforce mode, what of a stream may reach clients before it is judged (the cadence and
// hold-back trade-off of remote classifiers), where the user decides it. The mode is the
// compiled policy's (policy.Guardrail.Mode): the compiler decides Report or Enforce, for
// the guard and for this message alike. nil (nothing compiled, so Ready is not True) says
// the generation only.
func InEffect(generation int64, compiled *policy.Guardrail) string {
	switch {
	case compiled == nil:
		return fmt.Sprintf("Generation %d is in effect", generation)
	case compiled.Mode == policy.ModeReport:
		return fmt.Sprintf("Generation %d is in effect in Report mode: decisions are recorded, content is left untouched", generation)
	}
	msg := fmt.Sprintf("Generation %d is in effect in %s mode", generation, compiled.Mode)
	if u := compiled.Unjudged(); u != "" {
		msg += "; " + u
	}
	return msg
}
