package intake

import (
	"encoding/json"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Every outcome of the contract is accepted in a batch and counted in the status field
// of the same name; every counter of status.decisions is an outcome of the contract. A new
// outcome the guard records and the status does not know (or the reverse) fails here.
func TestEveryOutcomeOfTheContractReachesItsStatusCounter(t *testing.T) {
	counters := map[string]bool{}
	raw, err := json.Marshal(v1alpha1.DecisionCounts{})
	must(t, err)
	var empty map[string]any
	must(t, json.Unmarshal(raw, &empty))
	for _, o := range guardv1.Outcomes {
		if !o.Known() {
			t.Errorf("outcome %q: a batch carrying it would be refused whole", o)
		}
		st := v1alpha1.GuardrailStatus{}
		d := newDelta()
		d.outcomes[o] = 3
		addDecisions(&st, d)
		raw, err := json.Marshal(st.Decisions)
		must(t, err)
		var got map[string]any
		must(t, json.Unmarshal(raw, &got))
		if got[string(o)] != float64(3) {
			t.Errorf("outcome %q counted as %v in status.decisions", o, got)
		}
		counters[string(o)] = true
	}
	// Every int64 counter of DecisionCounts (omitempty hides them at zero: set all).
	var all map[string]any
	full := v1alpha1.DecisionCounts{Allowed: 1, Warned: 1, Stripped: 1, Redacted: 1, Blocked: 1, Failed: 1, NotInspected: 1,
		Pseudonymized: 1, WouldWarn: 1, WouldStrip: 1, WouldRedact: 1, WouldPseudonymize: 1, WouldBlock: 1}
	raw, err = json.Marshal(full)
	must(t, err)
	must(t, json.Unmarshal(raw, &all))
	for field := range all {
		if !counters[field] {
			t.Errorf("status.decisions.%s is no outcome of the guard contract", field)
		}
	}
	if len(all) != len(guardv1.Outcomes) {
		t.Errorf("%d counters in status.decisions, %d outcomes in the contract", len(all), len(guardv1.Outcomes))
	}
}
