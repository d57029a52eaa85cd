package intake

import (
	"context"
	"slices"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
)

// A guard reports usage only of the ModelProviders it received a credential for: those
// its pod's verified guard was injected for (guards.GuardProviders on the cached pod,
// which the cache's transform sets from the guard's --provider flags and drops for a
// guard that is not verified) and whose namespaceSelector selects the pod's namespace.
// Usage of any other provider is not that guard's to count — a tenant with a guard of its
// own must not inflate a platform's usage figures, nor list its namespace in a provider's
// breakdown — and is dropped (guardrail_controlplane_usage_not_selected_total); the rest
// of the batch counts. A pod not in the cache yet has no providers: its usage is dropped,
// unclaimed, and counted from its next batch, which carries it again (the figures are
// cumulative).

// keepUsedProviders removes from req the usage of providers the guard of pod does not
// use, and returns how many entries it removed.
func (in *Intake) keepUsedProviders(ctx context.Context, req *guardv1.DecisionsRequest, pod *metav1.PartialObjectMetadata) (int, error) {
	if len(req.Providers) == 0 {
		return 0, nil
	}
	cached := &corev1.Pod{}
	err := in.opts.Cache.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, cached)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	var used []string
	if err == nil && cached.UID == pod.UID {
		used = guards.GuardProviders(cached)
	}
	var nsLabels labels.Set
	if len(used) > 0 {
		nsMeta := &metav1.PartialObjectMetadata{}
		nsMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		if err := in.opts.Cache.Get(ctx, types.NamespacedName{Name: pod.Namespace}, nsMeta); err != nil {
			return 0, err
		}
		nsLabels = labels.Set(nsMeta.Labels)
	}
	dropped := 0
	kept := req.Providers[:0]
	for _, u := range req.Providers {
		ok, err := in.providerSelects(ctx, u.Provider, used, nsLabels)
		if err != nil {
			return 0, err
		}
		if !ok {
			dropped++
			continue
		}
		kept = append(kept, u)
	}
	req.Providers = kept
	return dropped, nil
}

// providerSelects reports whether the ModelProvider name is among used and exists with a
// namespaceSelector that selects a namespace of nsLabels.
func (in *Intake) providerSelects(ctx context.Context, name string, used []string, nsLabels labels.Set) (bool, error) {
	if !slices.Contains(used, name) {
		return false, nil
	}
	mp := &v1alpha1.ModelProvider{}
	err := in.opts.Cache.Get(ctx, types.NamespacedName{Name: name}, mp)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The selector is required: a provider without one (which the schema refuses)
	// selects no namespace here, unlike a ClusterGuardrail without one.
	return mp.Spec.NamespaceSelector != nil && selectsNamespace(mp.Spec.NamespaceSelector, nsLabels), nil
}
