package controlplane

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Cluster baselines in a pod's snapshot: the ClusterGuardrails whose
// namespaceSelector matches the labels of the pod's namespace, as the apiserver has them
// (a tenant may label its namespace, and so choose which baselines select it: a platform
// that must bind every namespace leaves namespaceSelector empty or selects on labels it
// controls with an admission policy), and whose selector matches the pod's labels. Their
// ClusterClassifiers' credentials are read from the operator's namespace. The guard runs
// them in a tier of their own before the namespace's Guardrails (policy.RunOrder).

// clusterGuardrails returns the ClusterGuardrails selecting a pod of ns with podLabels.
func (b *builder) clusterGuardrails(ctx context.Context, ns string, podLabels labels.Set) ([]policy.GuardrailObject, error) {
	var list v1alpha1.ClusterGuardrailList
	if err := b.cache.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ClusterGuardrails: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	nsLabels, err := b.namespaceLabels(ctx, ns)
	if err != nil {
		return nil, err
	}
	var out []policy.GuardrailObject
	for i := range list.Items {
		g := &list.Items[i]
		if g.DeletionTimestamp.IsZero() && selects(g.Spec.NamespaceSelector, nsLabels) && selects(g.Spec.Selector, podLabels) {
			out = append(out, policykube.ClusterGuardrail(g))
		}
	}
	return out, nil
}

// namespaceLabels reads the labels of namespace ns from the cache (metadata only).
func (b *builder) namespaceLabels(ctx context.Context, ns string) (labels.Set, error) {
	m := namespaceMeta()
	if err := b.cache.Get(ctx, types.NamespacedName{Name: ns}, m); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	return labels.Set(m.Labels), nil
}

// formatEnforced is the cp.AnnotationEnforced value of a snapshot: name=generation for a
// Guardrail of the pod's namespace, /name=generation for a ClusterGuardrail, so that a
// Guardrail and a ClusterGuardrail of the same name are told apart.
func formatEnforced(gs []policy.GuardrailObject) string {
	named := make([]policy.GuardrailObject, len(gs))
	for i := range gs {
		named[i] = policy.GuardrailObject{ObjectMeta: policy.ObjectMeta{Name: gs[i].Name, Generation: gs[i].Generation}}
		if gs[i].Kind == policy.KindClusterGuardrail {
			named[i].Name = policystatus.ClusterName(gs[i].Name)
		}
	}
	return guards.FormatEnforced(named)
}

func namespaceMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return m
}

// watchCluster touches the snapshots of every namespace when a ClusterGuardrail, a
// ClusterClassifier or a ModelProvider changes (a new generation, a deletion) or a Secret
// of the operator's namespace changes (a ClusterClassifier's or a ModelProvider's
// credential may rotate), and those of one
// namespace when its labels change (a namespaceSelector may select it or let it go).
func (s *Server) watchCluster(ctx context.Context, mgr ctrl.Manager, specChanged func(old, cur any) bool) error {
	all := func(any) { s.hub.touchAll() }
	operatorSecret := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(client.Object); ok && o.GetNamespace() == s.opts.LeaseNamespace {
			s.hub.touchAll()
		}
	}
	handlers := []struct {
		obj     client.Object
		on      func(any)
		changed func(old, cur any) bool
	}{
		{&v1alpha1.ClusterGuardrail{}, all, specChanged},
		{&v1alpha1.ClusterClassifier{}, all, specChanged},
		{&v1alpha1.ModelProvider{}, all, specChanged},
		{secretMeta(), operatorSecret, func(old, cur any) bool {
			o, ok1 := old.(client.Object)
			c, ok2 := cur.(client.Object)
			return !ok1 || !ok2 || o.GetResourceVersion() != c.GetResourceVersion()
		}},
		{namespaceMeta(), func(obj any) {
			if o, ok := obj.(client.Object); ok {
				s.hub.touch(o.GetName())
			}
		}, func(old, cur any) bool {
			o, ok1 := old.(client.Object)
			c, ok2 := cur.(client.Object)
			return !ok1 || !ok2 || !labels.Equals(o.GetLabels(), c.GetLabels())
		}},
	}
	for _, h := range handlers {
		inf, err := mgr.GetCache().GetInformer(ctx, h.obj)
		if err != nil {
			return err
		}
		on, changed := h.on, h.changed
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: on,
			UpdateFunc: func(old, cur any) {
				if changed(old, cur) {
					on(cur)
				}
			},
			DeleteFunc: on,
		}); err != nil {
			return err
		}
	}
	return nil
}
