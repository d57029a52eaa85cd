package injection

import (
	"context"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// eventWindow bounds how old a pod may be for its injection to be reported: after a
// manager restart the pod cache lists every injected pod again, and only recent ones are
// news.
const eventWindow = 2 * time.Minute

// EventReconciler turns what the injector left on a pod (AnnotationInjectionWarnings, the
// injected label) into Events on the pod, once the pod exists. It runs on the leader only
// (one Event per pod), from a cache of the pods labelled guardrail.dev/injected.
//
// The label is a claim anyone who writes the pod can make: Normal Injected is recorded
// only for a pod whose spec, read from the apiserver, passes VerifyGuard; a pod labelled
// injected=true that does not gets a Warning NotInjected saying why.
type EventReconciler struct {
	// Pods is a cache of the pods labelled guardv1.LabelInjected. It may hold their
	// metadata only: the spec is read through APIReader.
	Pods cache.Cache
	// APIReader reads the spec of a pod labelled injected=true, once, when it is created.
	APIReader client.Reader
	// Guard is the manager's guard (Config.Guard), what VerifyGuard expects.
	Guard Guard
	// Recorder records the Events.
	Recorder events.EventRecorder
	// now is the clock; tests may set it.
	now func() time.Time
}

// SetupWithManager registers the reconciler; it reacts to pod creations only.
func (r *EventReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.now == nil {
		r.now = time.Now
	}
	onCreate := handler.TypedFuncs[*corev1.Pod, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("injection-events").
		WatchesRawSource(source.Kind(r.Pods, &corev1.Pod{}, onCreate)).
		Complete(r)
}

// Reconcile records the Events of one newly created injected pod.
func (r *EventReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Pods.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.now().Sub(pod.CreationTimestamp.Time) > eventWindow || !pod.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	claimed := pod.Labels[guardv1.LabelInjected] == labelTrue
	if claimed {
		// The cache's copy may have no spec; the apiserver's is what the kubelet runs.
		full := &corev1.Pod{}
		if err := r.APIReader.Get(ctx, req.NamespacedName, full); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if full.UID != pod.UID {
			return ctrl.Result{}, nil // deleted and created again: its own create event follows
		}
		pod = full
	}
	for _, f := range parseWarnings(pod.Annotations[guardv1.AnnotationInjectionWarnings]) {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, f.reason, "Inject", "%s", f.message)
	}
	if !claimed {
		return ctrl.Result{}, nil
	}
	if err := VerifyGuard(pod, r.Guard); err != nil {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonNotInjected, "Inject",
			"The pod is labelled %s=true but does not carry the injector's guard: %v", guardv1.LabelInjected, err)
		return ctrl.Result{}, nil
	}
	shape := "a native sidecar"
	if hasRegularContainer(pod, guardv1.ContainerName) {
		shape = "a regular container"
	}
	r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, ReasonInjected, "Inject",
		"Injected the guard as %s (injector %s)", shape, pod.Annotations[guardv1.AnnotationInjectorVersion])
	return ctrl.Result{}, nil
}

func hasRegularContainer(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return true
		}
	}
	return false
}
