package controlplane

import (
	"context"
	"fmt"
	"sort"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/modelprovider"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// Keyless apps in a pod's snapshot: the ModelProviders its verified guard
// was injected for (the guard's --provider flags, which the cache's transform records as
// guards.AnnotationGuardProviders), each with its credential read from the operator's
// namespace, when the provider's namespaceSelector selects the pod's namespace and its spec
// is one a guard can use (modelprovider.CheckSpec: no URL on the pod's own host). A guard
// whose pod names no provider receives no provider credential, and a provider that does
// not select the namespace is left out: the guard then answers the pod's calls with
// provider_unavailable rather than forward them with the app's own key.

// providers returns the providers of names that select ns and whose credential resolves,
// sorted by name, and records each credential Secret's version in secretVersions (key
// "provider:NAME") so that a rotation changes the snapshot's version.
func (b *builder) providers(ctx context.Context, ns string, names []string, secretVersions map[string]string) ([]cp.Provider, error) {
	if len(names) == 0 {
		return nil, nil
	}
	nsLabels, err := b.namespaceLabels(ctx, ns)
	if err != nil {
		return nil, err
	}
	var out []cp.Provider
	for _, name := range names {
		mp := &v1alpha1.ModelProvider{}
		err := b.cache.Get(ctx, types.NamespacedName{Name: name}, mp)
		if apierrors.IsNotFound(err) {
			continue // the guard answers provider_unavailable; the injector said why
		}
		if err != nil {
			return nil, fmt.Errorf("reading ModelProvider %s: %w", name, err)
		}
		if !mp.DeletionTimestamp.IsZero() || mp.Spec.NamespaceSelector == nil || !selects(mp.Spec.NamespaceSelector, nsLabels) {
			continue
		}
		if len(modelprovider.CheckSpec(&mp.Spec, b.allowLocal)) > 0 {
			// Stalled, its status naming the field: above all a URL on the guard's own
			// host, where any container of the pod could listen for the key.
			continue
		}
		ref := mp.Spec.CredentialsSecretRef
		credential, rv, err := b.credential(ctx, b.operatorNamespace, &ref)
		if err != nil {
			return nil, err
		}
		if credential == "" {
			continue // not resolved: the ModelProvider's status says so
		}
		p := cp.Provider{Name: mp.Name, API: string(mp.Spec.API), URL: mp.Spec.URL, Credential: credential}
		for _, h := range mp.Spec.Headers {
			if p.Headers == nil {
				p.Headers = map[string]string{}
			}
			p.Headers[h.Name] = h.Value
		}
		if budget, until := modelprovider.Exhausted(mp, ns, budgetClock()); budget != "" {
			p.Exhausted = &guardv1.ProviderExhaustion{Budget: budget, Until: until}
			windowEndsFrom(ctx)(ns, until)
		}
		secretVersions["provider:"+mp.Name] = rv
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
