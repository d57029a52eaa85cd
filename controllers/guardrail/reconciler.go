package guardrail

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
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/index"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/kube"
)

// waitInterval is how often a Guardrail waiting for its Classifier is looked at again, on
// top of the Classifier watch.
const waitInterval = policystatus.WaitInterval

// Reconciler reconciles Guardrails.
type Reconciler struct {
	client.Client
	// APIReader lists the pods a Guardrail selects: pods without a guard are not cached.
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

// scope is what the steps of one reconcile share.
type scope struct {
	obj        *v1alpha1.Guardrail
	classifier *v1alpha1.Classifier
	// compiled is the Guardrail as the guard enforces it, once it compiled.
	compiled *policy.Guardrail
	// recount is when status.enforcement changes unless something else does: the first
	// live guard's Lease expires. Zero when none is live.
	recount time.Duration
}

type step func(ctx context.Context, s *scope) (ctrl.Result, error)

// +kubebuilder:rbac:groups=guardrail.dev,resources=guardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=guardrails/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=classifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=guardrail-system,resources=leases,verbs=get;list;watch

// Reconcile brings a Guardrail's status in line with its spec and its Classifier.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &v1alpha1.Guardrail{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	s := &scope{obj: obj}
	patcher := status.NewPatcher(r.Client, r.Recorder, obj, v1alpha1.ConditionClassifierResolved).
		InEffect(func() string { return inEffect(obj, s.compiled) }).
		WaitingReasons(v1alpha1.ReasonClassifierNotReady)
	// Settled, the selected pods are recounted when the first live guard's Lease expires,
	// and now and then (pods without a guard are not watched).
	defer policystatus.Settle(ctx, patcher, obj, &result, &retErr, func() time.Duration {
		return policystatus.NextRecount(s.compiled != nil, s.recount)
	})

	for _, st := range []step{r.reconcileClassifier, r.reconcileCompile, r.reconcileEnforcement} {
		res, err := st(ctx, s)
		if err != nil || !res.IsZero() {
			if s.compiled == nil {
				notDistributed(obj)
			}
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// reconcileClassifier fetches the referenced Classifier and waits until it is Ready for
// its latest generation (policystatus.ClassifierReady); a Stalled Classifier stalls the
// Guardrail.
func (r *Reconciler) reconcileClassifier(ctx context.Context, s *scope) (ctrl.Result, error) {
	name, ns := s.obj.Spec.ClassifierRef.Name, s.obj.Namespace
	c := &v1alpha1.Classifier{}
	err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)
	switch {
	case apierrors.IsNotFound(err):
		return policystatus.ClassifierMissing(s.obj, "Classifier "+name, " in namespace "+ns)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading Classifier %s: %w", name, err)
	}
	if res, err := policystatus.ClassifierReady(s.obj, c, "Classifier "+name); err != nil || !res.IsZero() {
		return res, err
	}
	s.classifier = c
	return ctrl.Result{}, nil
}

// inEffect is the Ready message of a Guardrail whose generation is in effect
// (policystatus.InEffect).
func inEffect(g *v1alpha1.Guardrail, compiled *policy.Guardrail) string {
	return policystatus.InEffect(g.Spec.Mode, g.Generation, compiled)
}

// reconcileCompile compiles the Guardrail against its Classifier with policy.Compile's
// building blocks, the same code the guard runs. A failure names the field and stalls.
func (r *Reconciler) reconcileCompile(_ context.Context, s *scope) (ctrl.Result, error) {
	cc, err := kube.CompileClassifier(s.classifier, "")
	if err != nil {
		// The Classifier is Ready, so it compiled for its own reconciler: a version skew.
		return ctrl.Result{}, fmt.Errorf("compiling Classifier %s: %w", s.classifier.Name, err)
	}
	s.compiled, err = kube.CompileGuardrail(s.obj, cc)
	return ctrl.Result{}, policystatus.Compiled(s.obj, "Classifier "+s.classifier.Name, s.classifier.Generation, err)
}

// SetupWithManager registers the reconciler. A Classifier change re-reconciles every
// Guardrail of its namespace that references it, found through a field index.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Guardrail{}).
		Watches(&v1alpha1.Classifier{}, handler.EnqueueRequestsFromMapFunc(r.guardrailsForClassifier)).
		// Injected pods only (the manager's cache is restricted to them and trimmed to
		// metadata, phase and whether their spec carries the guard).
		Watches(&corev1.Pod{}, r.namespaceEvents(func(o client.Object) string { return o.GetNamespace() }),
			builder.WithPredicates(podChanged)).
		// Guards' Leases (the cache holds those of the operator's namespace): a guard's
		// acknowledgement, and its return after it stopped answering.
		Watches(&coordinationv1.Lease{}, r.namespaceEvents(func(o client.Object) string {
			return o.GetLabels()[guards.LabelLeasePodNamespace]
		}), builder.WithPredicates(leaseChanged)).
		Named("guardrail").
		Complete(r)
}

// podChanged and leaseChanged pass the pod and Lease events that can change a
// Guardrail's enforcement (policystatus).
var (
	podChanged   = policystatus.PodChanged
	leaseChanged = policystatus.LeaseChanged
)

// podCoalesce is how long pod events wait before the Guardrails of their namespace are
// recounted: a thousand guards acknowledging one apply is one status write per
// Guardrail, not a thousand.
const podCoalesce = time.Second

// namespaceEvents enqueues the Guardrails of the namespace an object concerns after
// podCoalesce; the queue keeps one request per Guardrail however many pods and guards
// report meanwhile.
func (r *Reconciler) namespaceEvents(namespaceOf func(client.Object) string) handler.EventHandler {
	enqueue := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		ns := namespaceOf(o)
		if ns == "" {
			return
		}
		for _, req := range r.guardrailsIn(ctx, ns) {
			q.AddAfter(req, podCoalesce)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}

func (r *Reconciler) guardrailsIn(ctx context.Context, ns string) []reconcile.Request {
	var list v1alpha1.GuardrailList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Guardrails of a namespace", "namespace", ns)
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return reqs
}

func (r *Reconciler) guardrailsForClassifier(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.GuardrailList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{index.GuardrailClassifier: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Guardrails for a Classifier", "classifier", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return reqs
}
