package controlplane

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// A snapshot holds the Guardrails of the pod's namespace and the ClusterGuardrails that
// select it (kind ClusterGuardrail, no namespace); a Guardrail of another namespace is
// refused, and so is a ClusterGuardrail that claims a namespace.
func TestCompileTakesClusterGuardrails(t *testing.T) {
	one := spec.Score(1)
	classifier := func(kind, ns string) policy.ClassifierObject {
		return policy.ClassifierObject{Kind: kind, ObjectMeta: policy.ObjectMeta{Namespace: ns, Name: "words"},
			Spec: spec.ClassifierSpec{Builtin: &spec.BuiltinBackend{Keywords: []spec.KeywordRule{{Category: "birds", Words: []string{"heron"}}}}}}
	}
	guardrail := func(kind, ns string) policy.GuardrailObject {
		return policy.GuardrailObject{Kind: kind, ObjectMeta: policy.ObjectMeta{Namespace: ns, Name: "no-birds"},
			Spec: spec.GuardrailSpec{Mode: spec.ModeEnforce, ClassifierRef: spec.LocalObjectReference{Name: "words"},
				Threshold: &one, Action: spec.ActionBlock, Reason: "no"}}
	}
	snap := &Snapshot{Namespace: "shop",
		Classifiers: []policy.ClassifierObject{classifier("Classifier", "shop"), classifier(policy.KindClusterClassifier, "")},
		Guardrails:  []policy.GuardrailObject{guardrail("Guardrail", "shop"), guardrail(policy.KindClusterGuardrail, "")}}
	compiled, err := Compile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(compiled.Guardrails) != 2 || compiled.Guardrails[0].Key != "/no-birds" || !compiled.Guardrails[0].Cluster {
		t.Fatalf("compiled %d guardrails, the first %s (cluster %v)", len(compiled.Guardrails), compiled.Guardrails[0].Key, compiled.Guardrails[0].Cluster)
	}
	for _, tc := range []struct {
		name string
		g    policy.GuardrailObject
		want string
	}{
		{"a Guardrail of another namespace", guardrail("Guardrail", "other"), "is not of namespace shop"},
		{"a ClusterGuardrail with a namespace", guardrail(policy.KindClusterGuardrail, "other"), "metadata.namespace"},
	} {
		bad := &Snapshot{Namespace: "shop", Classifiers: snap.Classifiers, Guardrails: []policy.GuardrailObject{tc.g}}
		if _, err := Compile(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
