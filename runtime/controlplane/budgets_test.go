package controlplane

import (
	"encoding/json"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
)

// A provider marked exhausted in the snapshot reaches the guard's policy with the budget
// and the window's end; a mark without either refuses the snapshot; no mark is no mark.
func TestAnExhaustedProviderReachesThePolicyWithItsBudgetAndEnd(t *testing.T) {
	until := time.Date(2026, 12, 7, 0, 42, 0, 0, time.UTC)
	raw := `{"version":"v1","namespace":"shop","classifiers":[],"guardrails":[],"providers":[
	 {"name":"a","api":"OpenAI","url":"https://llm.example/v1","credential":"k","exhausted":{"budget":"tokensPerDay","until":"2026-12-07T00:42:00Z"}},
	 {"name":"b","api":"Anthropic","url":"https://llm.example","credential":"k"}]}`
	var s Snapshot
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	ps, err := compileProviders(&s)
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Exhausted != guardv1.BudgetTokensPerDay || !ps[0].ExhaustedUntil.Equal(until) {
		t.Errorf("provider a: exhausted %q until %s, want tokensPerDay until %s", ps[0].Exhausted, ps[0].ExhaustedUntil, until)
	}
	if ps[1].Exhausted != "" || !ps[1].ExhaustedUntil.IsZero() {
		t.Errorf("provider b, not marked, is exhausted %q until %s", ps[1].Exhausted, ps[1].ExhaustedUntil)
	}
	s.Providers[0].Exhausted = &guardv1.ProviderExhaustion{Budget: guardv1.BudgetTokensPerDay}
	if _, err := compileProviders(&s); err == nil {
		t.Error("a mark without its window's end was accepted")
	}
}
