package intake

import (
	"context"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// A guard of any namespace may report on ClusterGuardrails ("/name"), but only on those
// that select its namespace: its snapshot holds no other. A batch naming a baseline that
// does not select the guard's namespace (or does not exist) is not that guard's to count
// — a tenant with a guard of its own must not add blocks to a platform's baseline, nor
// list its namespace in the baseline's breakdown. Such entries are dropped, with the
// figures of ClusterClassifiers that no selecting baseline uses and the samples of dropped
// baselines; the rest of the batch counts. A baseline whose namespaceSelector stopped
// matching after the guard counted loses those late counts: its status then describes the
// namespaces it selects.

// keepSelectedBaselines removes from req what concerns cluster objects that do not apply
// to namespace ns, and returns how many entries it removed.
func (in *Intake) keepSelectedBaselines(ctx context.Context, req *guardv1.DecisionsRequest, ns string) (int, error) {
	if !namesCluster(req) {
		return 0, nil
	}
	var list v1alpha1.ClusterGuardrailList
	if err := in.opts.Cache.List(ctx, &list); err != nil {
		return 0, err
	}
	nsMeta := &metav1.PartialObjectMetadata{}
	nsMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := in.opts.Cache.Get(ctx, types.NamespacedName{Name: ns}, nsMeta); err != nil {
		return 0, err
	}
	nsLabels := labels.Set(nsMeta.Labels)
	guardrails, classifiers := map[string]bool{}, map[string]bool{}
	for i := range list.Items {
		g := &list.Items[i]
		if selectsNamespace(g.Spec.NamespaceSelector, nsLabels) {
			guardrails["/"+g.Name] = true
			classifiers["/"+g.Spec.ClassifierRef.Name] = true
		}
	}
	dropped := 0
	keptG := req.Guardrails[:0]
	for _, g := range req.Guardrails {
		if key := localName(g.Guardrail); strings.HasPrefix(key, "/") && !guardrails[key] {
			dropped++
			continue
		}
		keptG = append(keptG, g)
	}
	req.Guardrails = keptG
	keptC := req.Classifiers[:0]
	for _, c := range req.Classifiers {
		if key := localName(c.Classifier); strings.HasPrefix(key, "/") && !classifiers[key] {
			dropped++
			continue
		}
		keptC = append(keptC, c)
	}
	req.Classifiers = keptC
	keptS := req.Samples[:0]
	for _, s := range req.Samples {
		if key := localName(s.Guardrail); strings.HasPrefix(key, "/") && !guardrails[key] {
			continue
		}
		keptS = append(keptS, s)
	}
	req.Samples = keptS
	return dropped, nil
}

// namesCluster reports whether a batch names any cluster object.
func namesCluster(req *guardv1.DecisionsRequest) bool {
	for _, g := range req.Guardrails {
		if strings.HasPrefix(g.Guardrail, "/") {
			return true
		}
	}
	for _, c := range req.Classifiers {
		if strings.HasPrefix(c.Classifier, "/") {
			return true
		}
	}
	return false
}

// selectsNamespace reports whether a ClusterGuardrail's namespaceSelector matches a
// namespace's labels; no selector selects every namespace, and one that does not parse
// (the schema and the reconciler refuse it) selects none.
func selectsNamespace(sel *v1alpha1.LabelSelector, set labels.Set) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(v1alpha1.LabelSelectorToMetaV1(sel))
	return err == nil && s.Matches(set)
}
