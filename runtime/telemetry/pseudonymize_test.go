package telemetry

import (
	"bytes"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// TestPseudonymizedValuesAreCountedByCategory: a Pseudonymize decision's counts land in
// guard_pseudonymized_values_total per guardrail, category and outcome, Report mode's
// apart; nothing else of the decision is a label.
func TestPseudonymizedValuesAreCountedByCategory(t *testing.T) {
	tel := New(nil)
	r := rec("ns/mask", policy.PhaseInput, guardv1.OutcomePseudonymized)
	r.Findings = []engine.Finding{{Kind: engine.FindingCategory, Name: "email", Score: 1, Threshold: 1, Count: 3},
		{Kind: engine.FindingCategory, Name: "phone", Score: 1, Threshold: 1, Count: 1}}
	tel.Record(r)
	tel.Record(r)
	w := rec("ns/trial", policy.PhaseToolResults, guardv1.OutcomeWouldPseudonymize)
	w.Findings = []engine.Finding{{Kind: engine.FindingCategory, Name: "email", Count: 2}}
	tel.Record(w)
	var out bytes.Buffer
	if err := tel.Registry.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`guard_pseudonymized_values_total{category="email",guardrail="ns/mask",outcome="pseudonymized"} 6`,
		`guard_pseudonymized_values_total{category="phone",guardrail="ns/mask",outcome="pseudonymized"} 2`,
		`guard_pseudonymized_values_total{category="email",guardrail="ns/trial",outcome="wouldPseudonymize"} 2`,
		`guard_decisions_total{guardrail="ns/trial",outcome="wouldPseudonymize",phase="ToolResults"} 1`,
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("missing %s in\n%s", want, grepLines(out.String(), "pseudonymize"))
		}
	}
}
