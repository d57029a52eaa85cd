package policyreport

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Reconciler writes the PolicyReport of one namespace (the request's Namespace; its Name
// is unused).
type Reconciler struct {
	client.Client

	once sync.Once
}

// +kubebuilder:rbac:groups=wgpolicyk8s.io,resources=policyreports,verbs=get;create;patch;delete

// Reconcile rebuilds the namespace's report from its Guardrails' status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var list v1alpha1.GuardrailList
	if err := r.List(ctx, &list, client.InNamespace(req.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	report := Build(req.Namespace, list.Items)
	if report == nil {
		old := &unstructured.Unstructured{}
		old.SetGroupVersionKind(GVK)
		old.SetNamespace(req.Namespace)
		old.SetName(Name)
		return ctrl.Result{}, r.ignoreNoCRD(ctx, client.IgnoreNotFound(r.Delete(ctx, old)))
	}
	err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(report), client.FieldOwner("guardrail-operator"), client.ForceOwnership)
	return ctrl.Result{}, r.ignoreNoCRD(ctx, err)
}

// ignoreNoCRD: without the PolicyReport CRD there is nothing to write (said once).
func (r *Reconciler) ignoreNoCRD(ctx context.Context, err error) error {
	if meta.IsNoMatchError(err) {
		r.once.Do(func() {
			ctrl.LoggerFrom(ctx).Info("The PolicyReport CRD (wgpolicyk8s.io/v1alpha2) is not installed; no PolicyReports are written")
		})
		return nil
	}
	return err
}

// SetupWithManager registers the reconciler: every change to a Guardrail, its status
// included (decision counters), reconciles its namespace's report.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("policyreport").
		Watches(&v1alpha1.Guardrail{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace()}}}
		})).
		Complete(r)
}
