package clusterguardrail

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policyreconciler"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Reconciler reconciles ClusterGuardrails.
type Reconciler = policyreconciler.Guardrails[*v1alpha1.ClusterGuardrail, *v1alpha1.ClusterClassifier, Kind]

// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterguardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterguardrails/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterclassifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=guardrail-system,resources=leases,verbs=get;list;watch

// Kind is the ClusterGuardrail: cluster-scoped, with a ClusterClassifier, selecting pods
// of the namespaces its namespaceSelector picks.
type Kind struct{}

var _ policyreconciler.GuardrailKind[*v1alpha1.ClusterGuardrail, *v1alpha1.ClusterClassifier] = Kind{}

// Kind is "ClusterGuardrail".
func (Kind) Kind() string { return policy.KindClusterGuardrail }

// ClassifierKind is "ClusterClassifier".
func (Kind) ClassifierKind() string { return policy.KindClusterClassifier }

// New returns an empty ClusterGuardrail.
func (Kind) New() *v1alpha1.ClusterGuardrail { return &v1alpha1.ClusterGuardrail{} }

// NewList returns an empty ClusterGuardrailList.
func (Kind) NewList() client.ObjectList { return &v1alpha1.ClusterGuardrailList{} }

// NewClassifier returns an empty ClusterClassifier.
func (Kind) NewClassifier() *v1alpha1.ClusterClassifier { return &v1alpha1.ClusterClassifier{} }

// Where is the namespaces namespaceSelector picks.
func (Kind) Where(*v1alpha1.ClusterGuardrail) string { return "the selected namespaces" }

// WatchesNamespaces is true: a namespace's labels decide namespaceSelector.
func (Kind) WatchesNamespaces() bool { return true }

// Parts returns g's GuardrailSpec and GuardrailStatus.
func (Kind) Parts(g *v1alpha1.ClusterGuardrail) (*v1alpha1.GuardrailSpec, *v1alpha1.GuardrailStatus) {
	return &g.Spec.GuardrailSpec, &g.Status.GuardrailStatus
}

// Sources returns g and c as the compiler reads them (g without namespaceSelector).
func (Kind) Sources(g *v1alpha1.ClusterGuardrail, c *v1alpha1.ClusterClassifier) (policy.GuardrailObject, policy.ClassifierObject) {
	return policykube.ClusterGuardrail(g), policykube.ClusterClassifier(c)
}

// Invalid checks namespaceSelector, which the compiler does not read: the operator
// applies it when it selects the guardrails of a pod.
func (Kind) Invalid(g *v1alpha1.ClusterGuardrail) string {
	if _, err := policyreconciler.Selector(g.Spec.NamespaceSelector); err != nil {
		return "spec.namespaceSelector: " + err.Error()
	}
	return ""
}

// Namespaces lists the namespaces namespaceSelector picks (every one when it is unset),
// by metadata from the cache.
func (Kind) Namespaces(ctx context.Context, c client.Reader, g *v1alpha1.ClusterGuardrail) (func(string) bool, error) {
	sel, err := policyreconciler.Selector(g.Spec.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("namespaceSelector: %w", err)
	}
	namespaces := &metav1.PartialObjectMetadataList{}
	namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := c.List(ctx, namespaces, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the selected namespaces: %w", err)
	}
	selected := make(map[string]bool, len(namespaces.Items))
	for i := range namespaces.Items {
		selected[namespaces.Items[i].Name] = true
	}
	return func(ns string) bool { return selected[ns] }, nil
}

// Breakdown writes status.selectedNamespaces and the per-namespace figures
// (policystatus.SetEnforcement).
func (Kind) Breakdown(g *v1alpha1.ClusterGuardrail, perNS map[string]policystatus.Enforcement) {
	figures := make(map[string]v1alpha1.NamespaceFigures, len(perNS))
	for ns, e := range perNS {
		figures[ns] = v1alpha1.NamespaceFigures{SelectedPods: int32(e.Selected), AcknowledgedPods: int32(len(e.Acked)), //nolint:gosec // pods of a namespace
			PodsWithoutGuard: int32(len(e.Without))} //nolint:gosec // pods of a namespace
	}
	g.Status.SelectedNamespaces = int32(len(perNS)) //nolint:gosec // namespaces of a cluster
	policystatus.SetEnforcement(&g.Status, figures)
}

// Referencing lists every ClusterGuardrail (there are few); those of another
// ClusterClassifier are skipped.
func (Kind) Referencing(client.Object) []client.ListOption { return nil }

// Recount finds every ClusterGuardrail, whichever namespace's pods, guards or labels
// changed.
func (Kind) Recount(string) ([]client.ListOption, bool) { return nil, true }

// Coalesce is how long pod, Lease and namespace events wait before the ClusterGuardrails
// are recounted: a thousand guards acknowledging one apply is one recount.
func (Kind) Coalesce() time.Duration { return 2 * time.Second }
