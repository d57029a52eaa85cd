package modelprovider

import (
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// A namespace is exhausted only in Enforce mode, only by figures of the current windows,
// and the day's limit wins over the minute's (it ends later).
func TestExhaustedReadsTheCurrentWindowsInEnforceModeOnly(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 30, 20, 0, time.UTC)
	minute, day := Windows(now)
	if !minute.Equal(time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)) || !day.Equal(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("windows %s %s", minute, day)
	}
	ten := int64(10)
	mp := &v1alpha1.ModelProvider{Spec: v1alpha1.ModelProviderSpec{Limits: &v1alpha1.ProviderLimits{
		RequestsPerMinute: &ten, TokensPerDay: &ten, Mode: v1alpha1.BudgetModeEnforce}}}
	set := func(mReq, dTok int64, minuteStart time.Time) {
		mp.Status.Budgets = []v1alpha1.NamespaceBudget{{Namespace: "shop",
			Minute: &v1alpha1.BudgetWindow{Start: metav1.NewTime(minuteStart), Requests: mReq},
			Day:    &v1alpha1.BudgetWindow{Start: metav1.NewTime(day), Tokens: dTok}}}
	}
	for _, c := range []struct {
		name      string
		mReq, tok int64
		start     time.Time
		mode      v1alpha1.BudgetMode
		budget    string
		until     time.Time
	}{
		{"under every limit", 9, 9, minute, v1alpha1.BudgetModeEnforce, "", time.Time{}},
		{"the minute's requests reached", 10, 9, minute, v1alpha1.BudgetModeEnforce, guardv1.BudgetRequestsPerMinute, minute.Add(time.Minute)},
		{"an earlier minute's requests", 50, 9, minute.Add(-time.Minute), v1alpha1.BudgetModeEnforce, "", time.Time{}},
		{"both: the day's wins", 10, 10, minute, v1alpha1.BudgetModeEnforce, guardv1.BudgetTokensPerDay, day.AddDate(0, 0, 1)},
		{"Report mode", 10, 10, minute, v1alpha1.BudgetModeReport, "", time.Time{}},
	} {
		set(c.mReq, c.tok, c.start)
		mp.Spec.Limits.Mode = c.mode
		budget, until := Exhausted(mp, "shop", now)
		if budget != c.budget || !until.Equal(c.until) {
			t.Errorf("%s: exhausted %q until %s, want %q until %s", c.name, budget, until, c.budget, c.until)
		}
		if b, _ := Exhausted(mp, "other", now); b != "" {
			t.Errorf("%s: another namespace is exhausted by shop's figures", c.name)
		}
	}
}
