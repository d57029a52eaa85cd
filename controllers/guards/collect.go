package guards

import (
	"context"
	"fmt"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultCollectInterval is how often LeaseCollector looks again at a Lease whose pod
// exists.
const DefaultCollectInterval = 5 * time.Minute

// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=guardrail-system,resources=leases,verbs=get;list;watch;create;update;patch;delete

// LeaseCollector deletes the Leases of guard pods that no longer exist: a Lease in the
// operator's namespace cannot be owned by a pod of another. A pod's deletion deletes its
// Lease at once (injected pods are cached); every Lease is looked at again each Interval,
// which collects those whose deletion was missed (the manager was down, or the pod had no
// injected label). It runs on the leader.
type LeaseCollector struct {
	// Client reads Leases and pods from the manager's cache and deletes Leases.
	Client client.Client
	// APIReader reads a pod the cache does not hold.
	APIReader client.Reader
	// Namespace holds the guards' Leases (the operator's).
	Namespace string
	// Interval is how often a Lease whose pod exists is looked at again; 0 means
	// DefaultCollectInterval.
	Interval time.Duration
}

// SetupWithManager registers the collector: Lease creations (each Lease once, also when
// the manager starts) and pod deletions trigger it.
func (c *LeaseCollector) SetupWithManager(mgr ctrl.Manager) error {
	if c.Interval <= 0 {
		c.Interval = DefaultCollectInterval
	}
	onPodDelete := handler.Funcs{
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: LeaseName(e.Object.GetUID())}})
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("guard-lease-collector").
		For(&coordinationv1.Lease{}, ctrlbuilder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return isGuardLease(e.Object, c.Namespace) },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Watches(&corev1.Pod{}, onPodDelete).
		Complete(c)
}

func isGuardLease(o client.Object, ns string) bool {
	return o.GetNamespace() == ns && o.GetLabels()[guardv1.LabelLeasePodNamespace] != ""
}

// Reconcile deletes a guard's Lease when its pod (namespace, name and uid) is gone.
func (c *LeaseCollector) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	lease := &coordinationv1.Lease{}
	if err := c.Client.Get(ctx, req.NamespacedName, lease); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !isGuardLease(lease, c.Namespace) {
		return ctrl.Result{}, nil
	}
	key := types.NamespacedName{Namespace: lease.Labels[guardv1.LabelLeasePodNamespace], Name: lease.Annotations[guardv1.AnnotationLeasePod]}
	uid := types.UID(lease.Annotations[guardv1.AnnotationLeasePodUID])
	gone, err := c.podGone(ctx, key, uid)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !gone {
		return ctrl.Result{RequeueAfter: c.Interval}, nil
	}
	if owed := lease.Annotations[guardv1.AnnotationDecisionsOwed]; owed != "" && owed != "[]" {
		// Counts claimed from the guard are not in status yet: the replica that claimed
		// them writes them, or another takes them over when it is gone (package intake),
		// and removes them from the Lease.
		return ctrl.Result{RequeueAfter: min(c.Interval, time.Minute)}, nil
	}
	err = c.Client.Delete(ctx, lease, client.Preconditions{UID: &lease.UID})
	if err = client.IgnoreNotFound(err); err != nil {
		return ctrl.Result{}, fmt.Errorf("deleting the Lease of a deleted pod: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted the Lease of a guard whose pod is gone", "pod", key.String())
	return ctrl.Result{}, nil
}

// podGone reports whether no pod key with uid exists: the cache holds injected pods, the
// apiserver is asked about any other.
func (c *LeaseCollector) podGone(ctx context.Context, key types.NamespacedName, uid types.UID) (bool, error) {
	if key.Namespace == "" || key.Name == "" || uid == "" {
		return true, nil // not written by this operator's server: nothing to keep it for
	}
	cached := &corev1.Pod{}
	err := c.Client.Get(ctx, key, cached)
	if err == nil && cached.UID == uid {
		return false, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	pod := &metav1.PartialObjectMetadata{}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	err = c.APIReader.Get(ctx, key, pod)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return pod.UID != uid, nil
}
