package proxy

import (
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/labels"
)

// A ClusterGuardrail has no namespace: the guard enforces it whatever its own namespace,
// as long as its pod selector matches (the operator applied its namespaceSelector).
func TestSelectsClusterGuardrails(t *testing.T) {
	web := labels.Set{"tier": "web"}
	p := &Proxy{cfg: Config{Namespace: "shop", PodLabels: web}}
	if !p.selects(&policy.Guardrail{Key: "/baseline", Cluster: true}) {
		t.Error("a ClusterGuardrail without a selector is not enforced")
	}
	db := &spec.LabelSelector{MatchLabels: map[string]spec.LabelValue{"tier": "db"}}
	if p.selects(&policy.Guardrail{Key: "/db-only", Cluster: true, Selector: db}) {
		t.Error("a ClusterGuardrail whose selector does not match the pod is enforced")
	}
	if p.selects(&policy.Guardrail{Key: "/stray", Namespace: ""}) {
		t.Error("a namespaced guardrail of no namespace is enforced as if it were a ClusterGuardrail")
	}
}
