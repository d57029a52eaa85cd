package policyreport

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

func gr(name string, mode v1alpha1.Mode, d *v1alpha1.DecisionCounts) v1alpha1.Guardrail {
	return v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GuardrailSpec{Mode: mode}, Status: v1alpha1.GuardrailStatus{Decisions: d}}
}

func TestTheReportSummarisesReportModeGuardrailsOnly(t *testing.T) {
	r := Build("shop", []v1alpha1.Guardrail{
		gr("enforced", v1alpha1.ModeEnforce, &v1alpha1.DecisionCounts{Blocked: 9}),
		gr("pii", v1alpha1.ModeReport, &v1alpha1.DecisionCounts{WouldBlock: 7, Allowed: 3,
			Categories: []v1alpha1.CategoryCount{{Name: "email", Matches: 7}}}),
		gr("tone", v1alpha1.ModeReport, &v1alpha1.DecisionCounts{WouldWarn: 2}),
		gr("quiet", v1alpha1.ModeReport, nil),
	})
	if r == nil {
		t.Fatal("no report")
	}
	results := r.Object["results"].([]any)
	want := []struct{ policy, result string }{{"pii", "fail"}, {"quiet", "pass"}, {"tone", "warn"}}
	if len(results) != len(want) {
		t.Fatalf("%d results, want %d", len(results), len(want))
	}
	for i, w := range want {
		res := results[i].(map[string]any)
		if res["policy"] != w.policy || res["result"] != w.result {
			t.Errorf("result %d: %v/%v, want %s/%s", i, res["policy"], res["result"], w.policy, w.result)
		}
	}
	props := results[0].(map[string]any)["properties"].(map[string]any)
	if props["wouldBlock"] != "7" || props["category.email"] != "7" {
		t.Errorf("properties %v", props)
	}
	sum := r.Object["summary"].(map[string]any)
	if sum["fail"] != int64(1) || sum["warn"] != int64(1) || sum["pass"] != int64(1) {
		t.Errorf("summary %v", sum)
	}
	if Build("shop", []v1alpha1.Guardrail{gr("enforced", v1alpha1.ModeEnforce, nil)}) != nil {
		t.Error("a namespace without Report-mode Guardrails got a report")
	}
}
