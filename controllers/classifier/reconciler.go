package classifier

import (
	"context"
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/index"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/kube"
)

// AllowLocalURLs is the manager's --classifier-allow-local-urls: backend URLs may name
// loopback, link-local and unspecified addresses (policy.LocalBackendURLs), for
// development, where fake backends listen on 127.0.0.1. It is a package variable, bound
// by main before controllers.Setup builds the reconciler, because it is one process-wide
// setting; tests and the local harnesses set it before starting a manager.
var AllowLocalURLs bool

// Reconciler reconciles Classifiers.
type Reconciler struct {
	client.Client
	// APIReader reads Secrets directly from the apiserver: the manager caches only their
	// metadata, so credentials are not held in the operator's memory.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// LeaseNamespace holds the guards' Leases (the operator's namespace), read from the
	// cache: what each guard acknowledged.
	LeaseNamespace string
}

// scope is what the steps of one reconcile share.
type scope struct {
	obj *v1alpha1.Classifier
}

type step func(ctx context.Context, s *scope) (ctrl.Result, error)

// +kubebuilder:rbac:groups=guardrail.dev,resources=classifiers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=classifiers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=classifiers/finalizers,verbs=update
// +kubebuilder:rbac:groups=guardrail.dev,resources=guardrails,verbs=get;list;watch
// Secrets: config/rbac/secret_reader_role.yaml, bound cluster-wide or per watched namespace.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings a Classifier's status in line with its spec and its Secret.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &v1alpha1.Classifier{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	patcher := status.NewPatcher(r.Client, r.Recorder, obj, v1alpha1.ConditionCredentialsResolved)
	defer policystatus.Settle(ctx, patcher, obj, &result, &retErr, nil)

	s := &scope{obj: obj}
	if !obj.DeletionTimestamp.IsZero() {
		if released, err := r.reconcileDelete(ctx, s); released || err != nil {
			return ctrl.Result{}, err
		}
		// Held by its users, the Classifier keeps serving them: it is reconciled as usual.
	}
	for _, st := range []step{r.reconcileFinalizer, r.reconcileUsage, r.reconcileSpec, r.reconcileCredentials} {
		res, err := st(ctx, s)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// reconcileFinalizer adds the in-use protection finalizer (policystatus.Protect).
func (r *Reconciler) reconcileFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, policystatus.Protect(ctx, r.Client, s.obj)
}

// reconcileDelete removes the finalizer of a deleted Classifier once no Guardrail
// references it (policystatus.Release), and reports released.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (released bool, err error) {
	users, err := r.users(ctx, s.obj)
	if err != nil {
		return false, err
	}
	return policystatus.Release(ctx, r.Client, r.Recorder, s.obj, "Guardrail", users)
}

// reconcileSpec compiles the spec (policystatus.CheckSpec): what the schema cannot check
// stalls the Classifier with the offending field named, and so does a local backend URL
// unless AllowLocalURLs.
func (r *Reconciler) reconcileSpec(_ context.Context, s *scope) (ctrl.Result, error) {
	m := kube.Classifier(s.obj)
	return policystatus.CheckSpec(s.obj, &s.obj.Status, &m, AllowLocalURLs)
}

// reconcileCredentials checks that the Secret named by credentialsSecretRef, in the
// Classifier's namespace, holds a non-empty value under its key. The value is not kept.
func (r *Reconciler) reconcileCredentials(ctx context.Context, s *scope) (ctrl.Result, error) {
	return policystatus.Credentials(ctx, r.APIReader, s.obj, s.obj.Spec.CredentialsSecretRef, s.obj.Namespace)
}

// reconcileUsage counts the Guardrails that reference this Classifier. It runs first, so
// that the count is shown whatever the state of the Classifier.
func (r *Reconciler) reconcileUsage(ctx context.Context, s *scope) (ctrl.Result, error) {
	users, err := r.users(ctx, s.obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.obj.Status.Guardrails = int32(len(users)) //nolint:gosec // bounded by the Guardrails of a namespace
	guards, err := r.guards(ctx, s.obj.Namespace, users)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.obj.Status.Guards = int32(guards) //nolint:gosec // bounded by the pods of a namespace
	return ctrl.Result{}, nil
}

// guards counts the guards of ns that answer and acknowledged a policy holding one of the
// Guardrails users (the control-plane server records acks on each guard's Lease in the
// operator's namespace; tenants cannot write them).
func (r *Reconciler) guards(ctx context.Context, ns string, users []string) (int, error) {
	if len(users) == 0 {
		return 0, nil
	}
	acks, err := guards.ListAcks(ctx, r.Client, r.LeaseNamespace, ns, time.Now())
	if err != nil {
		return 0, fmt.Errorf("listing the guards' Leases: %w", err)
	}
	n := 0
	for _, a := range acks {
		if !a.Live {
			continue
		}
		for _, u := range users {
			if _, ok := a.Enforced[u]; ok {
				n++
				break
			}
		}
	}
	return n, nil
}

// users returns the names of the Guardrails that reference c, sorted.
func (r *Reconciler) users(ctx context.Context, c *v1alpha1.Classifier) ([]string, error) {
	var list v1alpha1.GuardrailList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace),
		client.MatchingFields{index.GuardrailClassifier: c.Name}); err != nil {
		return nil, fmt.Errorf("listing Guardrails: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	sort.Strings(names)
	return names, nil
}

// SetupWithManager registers the reconciler. Secrets are watched by metadata only; a
// change to one re-reconciles the Classifiers that name it. A Guardrail change
// re-reconciles the Classifier it references, to keep the usage count true.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Classifier{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.classifiersForSecret), builder.OnlyMetadata).
		Watches(&v1alpha1.Guardrail{}, handler.EnqueueRequestsFromMapFunc(classifierForGuardrail),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Guards' Leases: what they acknowledged counts as status.guards.
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.classifiersForLease),
			builder.WithPredicates(enforcedChanged)).
		Named("classifier").
		Complete(r)
}

func (r *Reconciler) classifiersForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ClassifierList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{index.ClassifierSecret: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Classifiers for a Secret", "secret", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return reqs
}

// enforcedChanged passes Lease events that change which Guardrails a guard enforces.
var enforcedChanged = policystatus.EnforcedChanged

// classifiersForLease enqueues every Classifier of the namespace of a guard's pod: there
// are few, and a guard that stopped enforcing a Guardrail no longer names it.
func (r *Reconciler) classifiersForLease(ctx context.Context, o client.Object) []reconcile.Request {
	ns := o.GetLabels()[guards.LabelLeasePodNamespace]
	if ns == "" {
		return nil
	}
	var list v1alpha1.ClassifierList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Classifiers for a guard's Lease", "lease", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return reqs
}

func classifierForGuardrail(_ context.Context, o client.Object) []reconcile.Request {
	g := o.(*v1alpha1.Guardrail)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Spec.ClassifierRef.Name}}}
}
