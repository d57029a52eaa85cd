package policystatus

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// In-use protection of a classifier, as Kubernetes protects a PersistentVolumeClaim a pod
// uses: deleting a classifier that guardrails still reference would silently leave them
// without one, so deletion waits for them (v1alpha1.InUseProtectionFinalizer).

// Protect adds the in-use protection finalizer to a classifier that is not being deleted.
func Protect(ctx context.Context, c client.Client, obj status.Object) error {
	if !obj.GetDeletionTimestamp().IsZero() || controllerutil.ContainsFinalizer(obj, v1alpha1.InUseProtectionFinalizer) {
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, v1alpha1.InUseProtectionFinalizer)
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding finalizer %s: %w", v1alpha1.InUseProtectionFinalizer, err)
	}
	return nil
}

// Release removes the finalizer of a deleted classifier once users (the names of the
// guardrails referencing it, kind naming them: "Guardrail", "ClusterGuardrail") is empty,
// and reports released. While it is not, the InUse condition names them and a Warning
// Event does so whenever that list changes; Ready is untouched, since the classifier
// keeps serving them until they let it go.
func Release(ctx context.Context, c client.Client, r events.EventRecorder, obj status.Object, kind string, users []string) (released bool, err error) {
	if !controllerutil.ContainsFinalizer(obj, v1alpha1.InUseProtectionFinalizer) {
		return true, nil
	}
	if len(users) > 0 {
		msg := "Deletion waits until no " + kind + " uses this " + classifierKind(kind) + "; still used by " + strings.Join(users, ", ")
		if cond := status.Get(obj, v1alpha1.ConditionInUse); (cond == nil || cond.Message != msg) && r != nil {
			r.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.ReasonInUse, "Delete", "%s", msg)
		}
		status.Set(obj, v1alpha1.ConditionInUse, metav1.ConditionTrue, v1alpha1.ReasonInUse, msg)
		return false, nil
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, v1alpha1.InUseProtectionFinalizer)
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}

// classifierKind is the kind of classifier a kind of guardrail references.
func classifierKind(guardrailKind string) string {
	if guardrailKind == "ClusterGuardrail" {
		return "ClusterClassifier"
	}
	return "Classifier"
}
