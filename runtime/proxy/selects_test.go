package proxy

import (
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/labels"
)

// A guard enforces the Guardrails of its namespace whose selector matches its pod's
// labels; without --pod-labels, all of them.
func TestSelects(t *testing.T) {
	sel := func(ml map[string]spec.LabelValue, es ...spec.LabelSelectorRequirement) *spec.LabelSelector {
		return &spec.LabelSelector{MatchLabels: ml, MatchExpressions: es}
	}
	web := labels.Set{"tier": "web", "app": "shop"}
	tests := []struct {
		name      string
		podLabels labels.Set
		g         policy.Guardrail
		want      bool
	}{
		{"no selector", web, policy.Guardrail{Namespace: "ns"}, true},
		{"an empty selector", web, policy.Guardrail{Namespace: "ns", Selector: sel(nil)}, true},
		{"matching labels", web, policy.Guardrail{Namespace: "ns", Selector: sel(map[string]spec.LabelValue{"tier": "web"})}, true},
		{"other labels", web, policy.Guardrail{Namespace: "ns", Selector: sel(map[string]spec.LabelValue{"tier": "db"})}, false},
		{"NotIn", web, policy.Guardrail{Namespace: "ns", Selector: sel(nil,
			spec.LabelSelectorRequirement{Key: "tier", Operator: "NotIn", Values: []spec.LabelValue{"db"}})}, true},
		{"Exists of a missing label", web, policy.Guardrail{Namespace: "ns", Selector: sel(nil,
			spec.LabelSelectorRequirement{Key: "env", Operator: "Exists"})}, false},
		{"another namespace", web, policy.Guardrail{Namespace: "other"}, false},
		{"no pod labels given", nil, policy.Guardrail{Namespace: "ns", Selector: sel(map[string]spec.LabelValue{"tier": "db"})}, true},
	}
	for _, tt := range tests {
		p := &Proxy{cfg: Config{Namespace: "ns", PodLabels: tt.podLabels}}
		if got := p.selects(&tt.g); got != tt.want {
			t.Errorf("%s: selects = %v, want %v", tt.name, got, tt.want)
		}
	}
}
