// Package policykube is the operator's side of the policy compiler: it wraps the specs of the
// operator's API objects (api/v1alpha1, built on apimachinery) in the envelope the
// compiler and the control-plane snapshot take (policy.Object). The spec is the same Go
// type on both sides (api/v1alpha1/spec), so nothing is converted: only the metadata the
// guard reads is picked. The guard never links this package, so it links no apimachinery
// package.
package policykube

import (
	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"

	// Rules are type-checked with cel-go here; the guard cannot.
	_ "github.com/guardrail-dev/guardrail-operator/internal/rulecheck"
)

// Classifier returns c as the compiler reads it and the snapshot sends it: apiVersion,
// kind, name, namespace, uid, generation and a copy of the spec.
func Classifier(c *api.Classifier) policy.ClassifierObject {
	return policy.ClassifierObject{
		APIVersion: spec.APIVersion, Kind: "Classifier",
		ObjectMeta: meta(c.Name, c.Namespace, string(c.UID), c.Generation),
		Spec:       *c.Spec.DeepCopy(),
	}
}

// Guardrail returns g as the compiler reads it, as Classifier does.
func Guardrail(g *api.Guardrail) policy.GuardrailObject {
	return policy.GuardrailObject{
		APIVersion: spec.APIVersion, Kind: "Guardrail",
		ObjectMeta: meta(g.Name, g.Namespace, string(g.UID), g.Generation),
		Spec:       *g.Spec.DeepCopy(),
	}
}

func meta(name, namespace, uid string, generation int64) policy.ObjectMeta {
	return policy.ObjectMeta{Name: name, Namespace: namespace, UID: uid, Generation: generation}
}

// CompileClassifier is policy.CompileClassifier of c.
func CompileClassifier(c *api.Classifier, token string) (*policy.Classifier, error) {
	m := Classifier(c)
	return policy.CompileClassifier(&m, token)
}

// CompileGuardrail is policy.CompileGuardrail of g.
func CompileGuardrail(g *api.Guardrail, c *policy.Classifier) (*policy.Guardrail, error) {
	m := Guardrail(g)
	return policy.CompileGuardrail(&m, c)
}

// ClusterClassifier returns c as the compiler reads it: kind ClusterClassifier, no
// namespace (its key is "/name").
func ClusterClassifier(c *api.ClusterClassifier) policy.ClassifierObject {
	return policy.ClassifierObject{
		APIVersion: spec.APIVersion, Kind: policy.KindClusterClassifier,
		ObjectMeta: meta(c.Name, "", string(c.UID), c.Generation),
		Spec:       *c.Spec.DeepCopy(),
	}
}

// ClusterGuardrail returns g as the compiler reads it and the snapshot sends it: kind
// ClusterGuardrail, no namespace, and its GuardrailSpec without namespaceSelector, which
// the operator applies when it selects the guardrails of a pod.
func ClusterGuardrail(g *api.ClusterGuardrail) policy.GuardrailObject {
	return policy.GuardrailObject{
		APIVersion: spec.APIVersion, Kind: policy.KindClusterGuardrail,
		ObjectMeta: meta(g.Name, "", string(g.UID), g.Generation),
		Spec:       *g.Spec.GuardrailSpec.DeepCopy(),
	}
}

// CompileClusterClassifier is policy.CompileClassifier of c.
func CompileClusterClassifier(c *api.ClusterClassifier, token string) (*policy.Classifier, error) {
	m := ClusterClassifier(c)
	return policy.CompileClassifier(&m, token)
}

// CompileClusterGuardrail is policy.CompileGuardrail of g.
func CompileClusterGuardrail(g *api.ClusterGuardrail, c *policy.Classifier) (*policy.Guardrail, error) {
	m := ClusterGuardrail(g)
	return policy.CompileGuardrail(&m, c)
}
