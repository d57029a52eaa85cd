package clusterguardrail

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/kube"
)

// Reconciler reconciles ClusterGuardrails.
type Reconciler struct {
	client.Client
	// APIReader lists the pods a ClusterGuardrail selects: pods without a guard are not
	// cached.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// LeaseNamespace holds the guards' Leases (the operator's namespace), read from the
	// cache.
	LeaseNamespace string
	// Now is the clock guards' Leases are judged by; nil is time.Now.
	Now func() time.Time
}

func (r *Reconciler) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// coalesce is how long pod, Lease and namespace events wait before the ClusterGuardrails
// are recounted: a thousand guards acknowledging one apply is one recount.
const coalesce = 2 * time.Second

// scope is what the steps of one reconcile share.
type scope struct {
	obj        *v1alpha1.ClusterGuardrail
	classifier *v1alpha1.ClusterClassifier
	compiled   *policy.Guardrail
	// recount is when status.enforcement changes unless something else does.
	recount time.Duration
}

type step func(ctx context.Context, s *scope) (ctrl.Result, error)

// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterguardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterguardrails/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterclassifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=guardrail-system,resources=leases,verbs=get;list;watch

// Reconcile brings a ClusterGuardrail's status in line with its spec, its
// ClusterClassifier and the pods it selects.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &v1alpha1.ClusterGuardrail{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	s := &scope{obj: obj}
	patcher := status.NewPatcher(r.Client, r.Recorder, obj, v1alpha1.ConditionClassifierResolved).
		InEffect(func() string { return policystatus.InEffect(obj.Spec.Mode, obj.Generation, s.compiled) }).
		WaitingReasons(v1alpha1.ReasonClassifierNotReady)
	defer policystatus.Settle(ctx, patcher, obj, &result, &retErr, func() time.Duration {
		return policystatus.NextRecount(s.compiled != nil, s.recount)
	})

	for _, st := range []step{r.reconcileClassifier, r.reconcileCompile, r.reconcileEnforcement} {
		res, err := st(ctx, s)
		if err != nil || !res.IsZero() {
			if s.compiled == nil {
				obj.Status.Enforcement = nil
				policystatus.NotDistributed(obj)
			}
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// reconcileClassifier fetches the referenced ClusterClassifier and waits until it is
// Ready for its latest generation; a Stalled one stalls the ClusterGuardrail.
func (r *Reconciler) reconcileClassifier(ctx context.Context, s *scope) (ctrl.Result, error) {
	name := s.obj.Spec.ClassifierRef.Name
	c := &v1alpha1.ClusterClassifier{}
	err := r.Get(ctx, types.NamespacedName{Name: name}, c)
	switch {
	case apierrors.IsNotFound(err):
		return policystatus.ClassifierMissing(s.obj, "ClusterClassifier "+name, "")
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading ClusterClassifier %s: %w", name, err)
	}
	if res, err := policystatus.ClassifierReady(s.obj, c, "ClusterClassifier "+name); err != nil || !res.IsZero() {
		return res, err
	}
	s.classifier = c
	return ctrl.Result{}, nil
}

// reconcileCompile compiles the ClusterGuardrail against its ClusterClassifier with the
// compiler the guard runs; a failure names the field and stalls.
func (r *Reconciler) reconcileCompile(_ context.Context, s *scope) (ctrl.Result, error) {
	cc, err := kube.CompileClusterClassifier(s.classifier, "")
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("compiling ClusterClassifier %s: %w", s.classifier.Name, err)
	}
	if s.obj.Spec.NamespaceSelector != nil {
		if _, err := selectorOf(s.obj.Spec.NamespaceSelector); err != nil {
			msg := "spec.namespaceSelector: " + err.Error()
			status.MarkStalled(s.obj, v1alpha1.ReasonInvalidSpec, msg)
			return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s", msg))
		}
	}
	s.compiled, err = kube.CompileClusterGuardrail(s.obj, cc)
	return ctrl.Result{}, policystatus.Compiled(s.obj, "ClusterClassifier "+s.classifier.Name, s.classifier.Generation, err)
}

// SetupWithManager registers the reconciler. A ClusterClassifier change re-reconciles the
// ClusterGuardrails that reference it; injected pods, guards' Leases and namespaces
// (their labels decide the namespaceSelector) recount every ClusterGuardrail after a
// short coalescing delay.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ns := &corev1.Namespace{}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ClusterGuardrail{}).
		Watches(&v1alpha1.ClusterClassifier{}, handler.EnqueueRequestsFromMapFunc(r.forClassifier)).
		Watches(&corev1.Pod{}, r.recountAll(), builder.WithPredicates(policystatus.PodChanged)).
		Watches(&coordinationv1.Lease{}, r.recountAll(), builder.WithPredicates(policystatus.LeaseChanged)).
		Watches(ns, r.recountAll(), builder.OnlyMetadata).
		Named("clusterguardrail").
		Complete(r)
}

func (r *Reconciler) forClassifier(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ClusterGuardrailList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ClusterGuardrails for a ClusterClassifier", "classifier", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.ClassifierRef.Name == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

// recountAll enqueues every ClusterGuardrail after coalesce; the queue keeps one request
// per ClusterGuardrail however many events arrive meanwhile.
func (r *Reconciler) recountAll() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		var list v1alpha1.ClusterGuardrailList
		if err := r.List(ctx, &list); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing ClusterGuardrails")
			return
		}
		for i := range list.Items {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}}, coalesce)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, _ event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q)
		},
	}
}
