package modelprovider

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// Reconciler reconciles ModelProviders.
type Reconciler struct {
	client.Client
	// APIReader reads Secrets directly from the apiserver: the manager caches only their
	// metadata, so credentials are not held in the operator's memory.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// OperatorNamespace holds the credentials' Secrets; a Secret of the same name in any
	// other namespace is never read.
	OperatorNamespace string
	// AllowLocalURLs lets spec.url name the guard's own pod or link (CheckSpec); the
	// manager's --classifier-allow-local-urls, for development.
	AllowLocalURLs bool
}

// scope is what the steps of one reconcile share.
type scope struct {
	obj *v1alpha1.ModelProvider
}

type step func(ctx context.Context, s *scope) (ctrl.Result, error)

// +kubebuilder:rbac:groups=guardrail.dev,resources=modelproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=modelproviders/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=guardrail-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings a ModelProvider's status in line with its spec, its Secret and the
// pods that use it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &v1alpha1.ModelProvider{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // nothing outside the cluster to clean up
	}
	patcher := status.NewPatcher(r.Client, r.Recorder, obj, v1alpha1.ConditionCredentialsResolved).
		InEffect(func() string {
			return fmt.Sprintf("Generation %d is in effect: the guards of the pods that choose it in the namespaces it "+
				"selects receive its credential", obj.Generation)
		})
	defer policystatus.Settle(ctx, patcher, obj, &result, &retErr, nil)
	s := &scope{obj: obj}
	for _, st := range []step{r.reconcilePods, r.reconcileSpec, r.reconcileCredentials} {
		res, err := st(ctx, s)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// reconcileSpec stalls a spec the guard could not use (CheckSpec), naming the field.
func (r *Reconciler) reconcileSpec(_ context.Context, s *scope) (ctrl.Result, error) {
	problems := CheckSpec(&s.obj.Spec, r.AllowLocalURLs)
	if len(problems) == 0 {
		return ctrl.Result{}, nil
	}
	msg := strings.Join(problems, "; ")
	status.MarkStalled(s.obj, v1alpha1.ReasonInvalidSpec, msg)
	return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s", msg))
}

// reconcileCredentials resolves credentialsSecretRef in the operator's namespace, never
// in a tenant's; the value is checked for presence and not kept.
func (r *Reconciler) reconcileCredentials(ctx context.Context, s *scope) (ctrl.Result, error) {
	ref := s.obj.Spec.CredentialsSecretRef
	return policystatus.Credentials(ctx, r.APIReader, s.obj, &ref, r.OperatorNamespace)
}

// reconcilePods counts into status.pods and status.namespaces the running pods whose
// verified guard uses this provider in the namespaces its namespaceSelector selects: pods
// of other namespaces that name it get no credential, so they do not use it. Cached pods
// only: a pod without a verified guard has no provider (guards.GuardProviders).
func (r *Reconciler) reconcilePods(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.obj.Status.Pods, s.obj.Status.Namespaces = 0, 0
	if s.obj.Spec.NamespaceSelector == nil {
		return ctrl.Result{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(v1alpha1.LabelSelectorToMetaV1(s.obj.Spec.NamespaceSelector))
	if err != nil {
		return ctrl.Result{}, nil //nolint:nilerr // reconcileSpec stalls it, naming the field
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.MatchingFields{IndexPodProviders: s.obj.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the pods that use the provider: %w", err)
	}
	namespaces := &metav1.PartialObjectMetadataList{}
	namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.List(ctx, namespaces, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the selected namespaces: %w", err)
	}
	selected := make(map[string]bool, len(namespaces.Items))
	for i := range namespaces.Items {
		selected[namespaces.Items[i].Name] = true
	}
	pods32, namespaces32 := CountUsers(s.obj.Name, pods.Items, selected)
	s.obj.Status.Pods, s.obj.Status.Namespaces = pods32, namespaces32
	return ctrl.Result{}, nil
}

// CountUsers counts, among cached pods, the running ones whose verified guard uses the
// provider name in a namespace of selected, and their namespaces.
func CountUsers(name string, pods []corev1.Pod, selected map[string]bool) (podCount, namespaceCount int32) {
	seen := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodRunning || !selected[p.Namespace] || !usesProvider(p, name) {
			continue
		}
		podCount++
		if !seen[p.Namespace] {
			seen[p.Namespace] = true
			namespaceCount++
		}
	}
	return podCount, namespaceCount
}

func usesProvider(p client.Object, name string) bool {
	for _, n := range guards.GuardProviders(p) {
		if n == name {
			return true
		}
	}
	return false
}

// IndexPodProviders indexes cached pods by the providers their verified guard uses
// (guards.GuardProviders).
const IndexPodProviders = "guardrail.dev/guard-providers"

// PodProviders is the index function of IndexPodProviders.
func PodProviders(o client.Object) []string { return guards.GuardProviders(o) }

// SetupWithManager registers the pod index and the reconciler. A ModelProvider is
// reconciled when its spec changes (not on the intake's usage writes); a Secret of the
// operator's namespace (watched by metadata) re-reconciles the providers that name it; a
// pod, the providers its guard uses before and after the change; a namespace's labels,
// every provider (there are few).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, IndexPodProviders, PodProviders); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ModelProvider{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.forSecret), builder.OnlyMetadata).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(forPod), builder.WithPredicates(podChanged)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.all), builder.OnlyMetadata,
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Named("modelprovider").
		Complete(r)
}

// podChanged passes the pod events that can change a provider's count: a pod appears or
// goes, its phase changes, or its guard's verification or providers do.
var podChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if op, ok := o.(*corev1.Pod); ok {
			if np, ok := n.(*corev1.Pod); ok && op.Status.Phase != np.Status.Phase {
				return true
			}
		}
		for _, k := range []string{guards.AnnotationGuardVerification, guards.AnnotationGuardProviders} {
			if o.GetAnnotations()[k] != n.GetAnnotations()[k] {
				return true
			}
		}
		return false
	},
}

// forPod enqueues the providers a pod's verified guard uses (for an update, called for
// the old and the new pod alike).
func forPod(_ context.Context, o client.Object) []reconcile.Request {
	names := guards.GuardProviders(o)
	reqs := make([]reconcile.Request, 0, len(names))
	for _, n := range names {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
	}
	return reqs
}

func (r *Reconciler) forSecret(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != r.OperatorNamespace {
		return nil
	}
	var list v1alpha1.ModelProviderList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ModelProviders for a Secret", "secret", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.CredentialsSecretRef.Name == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

func (r *Reconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.ModelProviderList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ModelProviders")
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}}
	}
	return reqs
}
