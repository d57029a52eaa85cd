package clusterclassifier

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
	"github.com/guardrail-dev/guardrail-operator/controllers/classifier"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/kube"
)

// Reconciler reconciles ClusterClassifiers.
type Reconciler struct {
	client.Client
	// APIReader reads Secrets directly from the apiserver: the manager caches only their
	// metadata, so credentials are not held in the operator's memory.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// OperatorNamespace holds the credentials' Secrets and the guards' Leases.
	OperatorNamespace string
}

// scope is what the steps of one reconcile share.
type scope struct {
	obj *v1alpha1.ClusterClassifier
}

type step func(ctx context.Context, s *scope) (ctrl.Result, error)

// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterclassifiers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterclassifiers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterclassifiers/finalizers,verbs=update
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterguardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=guardrail-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings a ClusterClassifier's status in line with its spec and its Secret.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &v1alpha1.ClusterClassifier{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patcher := status.NewPatcher(r.Client, r.Recorder, obj, v1alpha1.ConditionCredentialsResolved)
	defer policystatus.Settle(ctx, patcher, obj, &result, &retErr, nil)
	s := &scope{obj: obj}
	if !obj.DeletionTimestamp.IsZero() {
		// Deletion waits for the ClusterGuardrails that use it; held, it keeps serving them.
		users, err := r.users(ctx, obj.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if released, err := policystatus.Release(ctx, r.Client, r.Recorder, obj, "ClusterGuardrail", users); released || err != nil {
			return ctrl.Result{}, err
		}
	} else if err := policystatus.Protect(ctx, r.Client, obj); err != nil {
		return ctrl.Result{}, err
	}
	for _, st := range []step{r.reconcileUsage, r.reconcileSpec, r.reconcileCredentials} {
		res, err := st(ctx, s)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// reconcileSpec compiles the spec as the guard will (policystatus.CheckSpec).
func (r *Reconciler) reconcileSpec(_ context.Context, s *scope) (ctrl.Result, error) {
	m := kube.ClusterClassifier(s.obj)
	return policystatus.CheckSpec(s.obj, &s.obj.Status, &m, classifier.AllowLocalURLs)
}

// reconcileCredentials resolves credentialsSecretRef in the operator's namespace, never
// in a tenant's.
func (r *Reconciler) reconcileCredentials(ctx context.Context, s *scope) (ctrl.Result, error) {
	return policystatus.Credentials(ctx, r.APIReader, s.obj, s.obj.Spec.CredentialsSecretRef, r.OperatorNamespace)
}

// reconcileUsage counts the ClusterGuardrails that reference this ClusterClassifier and
// the live guards whose policy holds one of them.
func (r *Reconciler) reconcileUsage(ctx context.Context, s *scope) (ctrl.Result, error) {
	users, err := r.users(ctx, s.obj.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.obj.Status.Guardrails = int32(len(users)) //nolint:gosec // ClusterGuardrails of a cluster
	s.obj.Status.Guards = 0
	if len(users) == 0 {
		return ctrl.Result{}, nil
	}
	var leases coordinationv1.LeaseList
	if err := r.List(ctx, &leases, client.InNamespace(r.OperatorNamespace), client.HasLabels{guards.LabelLeasePodNamespace}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the guards' Leases: %w", err)
	}
	now := time.Now()
	for i := range leases.Items {
		a := guards.ReadAck(&leases.Items[i], now)
		if !a.Live {
			continue
		}
		for _, u := range users {
			if _, ok := a.Enforced[policystatus.ClusterName(u)]; ok {
				s.obj.Status.Guards++
				break
			}
		}
	}
	return ctrl.Result{}, nil
}

// users returns the names of the ClusterGuardrails that reference the ClusterClassifier
// name, sorted.
func (r *Reconciler) users(ctx context.Context, name string) ([]string, error) {
	var list v1alpha1.ClusterGuardrailList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ClusterGuardrails: %w", err)
	}
	var names []string
	for i := range list.Items {
		if list.Items[i].Spec.ClassifierRef.Name == name {
			names = append(names, list.Items[i].Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// SetupWithManager registers the reconciler. Secrets of the operator's namespace are
// watched by metadata; a change to one re-reconciles the ClusterClassifiers that name it.
// A ClusterGuardrail change re-reconciles the ClusterClassifier it references, and a
// guard's acknowledgement every ClusterClassifier (there are few).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ClusterClassifier{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.forSecret), builder.OnlyMetadata).
		Watches(&v1alpha1.ClusterGuardrail{}, handler.EnqueueRequestsFromMapFunc(forGuardrail),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.all),
			builder.WithPredicates(policystatus.EnforcedChanged)).
		Named("clusterclassifier").
		Complete(r)
}

func (r *Reconciler) forSecret(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != r.OperatorNamespace {
		return nil
	}
	var list v1alpha1.ClusterClassifierList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ClusterClassifiers for a Secret", "secret", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if ref := list.Items[i].Spec.CredentialsSecretRef; ref != nil && ref.Name == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

func (r *Reconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.ClusterClassifierList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ClusterClassifiers")
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}}
	}
	return reqs
}

func forGuardrail(_ context.Context, o client.Object) []reconcile.Request {
	g := o.(*v1alpha1.ClusterGuardrail)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: g.Spec.ClassifierRef.Name}}}
}
