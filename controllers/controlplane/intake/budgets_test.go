package intake

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"k8s.io/client-go/tools/events"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

func ptr(v int64) *int64 { return &v }

// limited is a ModelProvider with limits.
func limited(mode v1alpha1.BudgetMode, l v1alpha1.ProviderLimits) *v1alpha1.ModelProvider {
	mp := modelProvider("openai", "true")
	l.Mode = mode
	mp.Spec.Limits = &l
	return mp
}

func window(b *v1alpha1.NamespaceBudget, day bool) v1alpha1.BudgetWindow {
	w := b.Minute
	if day {
		w = b.Day
	}
	if w == nil {
		return v1alpha1.BudgetWindow{}
	}
	return *w
}

// Each namespace has its own share: its minute and day windows count its requests and
// tokens (input and output), a limit is reported the first time it is reached in a
// window and not again in that window, and a new minute (a new day) starts from zero.
func TestBudgetWindowsCountEachNamespaceAndRollOver(t *testing.T) {
	mp := limited(v1alpha1.BudgetModeReport, v1alpha1.ProviderLimits{RequestsPerMinute: ptr(10), TokensPerDay: ptr(1000)})
	t0 := time.Date(2026, 12, 7, 23, 58, 30, 0, time.UTC)

	if got := addBudget(mp, "shop", usageDelta{requests: 4, input: 100, output: 50}, t0); len(got) != 0 {
		t.Fatalf("4 of 10 requests reached %+v", got)
	}
	if got := addBudget(mp, "other", usageDelta{requests: 9, input: 10}, t0); len(got) != 0 {
		t.Fatalf("another namespace's 9 requests reached %+v: each namespace has its own share", got)
	}
	got := addBudget(mp, "shop", usageDelta{requests: 6, input: 10, output: 10}, t0.Add(10*time.Second))
	if len(got) != 1 || got[0].budget != guardv1.BudgetRequestsPerMinute || got[0].used != 10 || got[0].limit != 10 ||
		!got[0].until.Equal(time.Date(2026, 12, 7, 23, 59, 0, 0, time.UTC)) {
		t.Fatalf("10 of 10 requests per minute: reached %+v, want requestsPerMinute 10/10 until 23:59", got)
	}
	if got := addBudget(mp, "shop", usageDelta{requests: 1}, t0.Add(20*time.Second)); len(got) != 0 {
		t.Fatalf("a limit already reached in the window was reported again: %+v", got)
	}
	b := &mp.Status.Budgets[budgetIndex(mp.Status.Budgets, "shop")]
	if m := window(b, false); m.Requests != 11 || m.Tokens != 170 || *m.RequestsRemaining != 0 || m.TokensRemaining != nil ||
		!m.Start.Time.Equal(time.Date(2026, 12, 7, 23, 58, 0, 0, time.UTC)) {
		t.Errorf("shop's minute %+v, want 11 requests, 170 tokens, 0 requests remaining, no token limit", m)
	}
	if d := window(b, true); d.Requests != 11 || d.Tokens != 170 || *d.TokensRemaining != 830 || d.RequestsRemaining != nil {
		t.Errorf("shop's day %+v, want 11 requests, 170 tokens, 830 remaining", d)
	}

	// The next minute: the minute starts from zero, the day goes on.
	if got := addBudget(mp, "shop", usageDelta{requests: 2, input: 700}, t0.Add(40*time.Second)); len(got) != 0 {
		t.Fatalf("2 requests of a new minute reached %+v", got)
	}
	b = &mp.Status.Budgets[budgetIndex(mp.Status.Budgets, "shop")]
	if m := window(b, false); m.Requests != 2 || *m.RequestsRemaining != 8 {
		t.Errorf("the next minute %+v, want 2 requests, 8 remaining", m)
	}
	if o := &mp.Status.Budgets[budgetIndex(mp.Status.Budgets, "other")]; o.Minute != nil {
		t.Errorf("another namespace's minute that ended is kept: %+v", o.Minute)
	}
	got = addBudget(mp, "shop", usageDelta{output: 130}, t0.Add(50*time.Second))
	if len(got) != 1 || got[0].budget != guardv1.BudgetTokensPerDay || got[0].used != 1000 ||
		!got[0].until.Equal(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("1000 of 1000 tokens per day: reached %+v, want tokensPerDay until midnight", got)
	}

	// The next day: yesterday's entries are gone, the day starts from zero.
	addBudget(mp, "shop", usageDelta{requests: 1, input: 1}, t0.Add(2*time.Minute))
	if len(mp.Status.Budgets) != 1 || mp.Status.Budgets[0].Namespace != "shop" {
		t.Fatalf("after midnight status.budgets is %+v, want shop alone", mp.Status.Budgets)
	}
	if d := window(&mp.Status.Budgets[0], true); d.Requests != 1 || d.Tokens != 1 ||
		!d.Start.Time.Equal(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("the new day %+v", d)
	}

	// Without limits, nothing is kept.
	mp.Spec.Limits = nil
	addBudget(mp, "shop", usageDelta{requests: 1}, t0.Add(3*time.Minute))
	if mp.Status.Budgets != nil {
		t.Errorf("without limits status.budgets is %+v", mp.Status.Budgets)
	}
}

// At most MaxBudgetNamespaces namespaces are kept: a newcomer nearer to its limits takes the place of the
// one furthest from them; a lighter one is not tracked.
func TestBudgetsKeepTheNamespacesNearestToTheirLimits(t *testing.T) {
	mp := limited(v1alpha1.BudgetModeEnforce, v1alpha1.ProviderLimits{RequestsPerDay: ptr(100)})
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for i := range v1alpha1.MaxBudgetNamespaces {
		addBudget(mp, fmt.Sprintf("ns-%03d", i), usageDelta{requests: int64(10 + i%80)}, now)
	}
	addBudget(mp, "light", usageDelta{requests: 5}, now)
	if len(mp.Status.Budgets) != v1alpha1.MaxBudgetNamespaces || budgetIndex(mp.Status.Budgets, "light") >= 0 {
		t.Fatalf("a namespace lighter than every listed one entered: %d listed", len(mp.Status.Budgets))
	}
	got := addBudget(mp, "heavy", usageDelta{requests: 100}, now)
	if budgetIndex(mp.Status.Budgets, "heavy") < 0 || budgetIndex(mp.Status.Budgets, "ns-000") >= 0 ||
		len(mp.Status.Budgets) != v1alpha1.MaxBudgetNamespaces {
		t.Fatalf("a namespace at its limit did not replace the lightest one")
	}
	if len(got) != 1 || got[0].budget != guardv1.BudgetRequestsPerDay {
		t.Errorf("a namespace entering at its limit reached %+v", got)
	}
}

// Through the intake: in Report mode the write that makes a namespace reach a limit emits
// one Normal BudgetWouldBeExceeded Event and counts the metric, once per window however
// many writes follow; status.budgets agrees with status.usage. Nothing is refused: the
// provider is never marked (the control plane reads Enforce mode only).
func TestReportModeReportsAReachedLimitOncePerWindow(t *testing.T) {
	defer func(f func() time.Time) { timeNow = f }(timeNow)
	now := time.Now().UTC().Truncate(time.Minute).Add(5 * time.Second)
	timeNow = func() time.Time { return now }
	w := newUsageWorld(t, true, []string{"openai"}, limited(v1alpha1.BudgetModeReport, v1alpha1.ProviderLimits{RequestsPerMinute: ptr(4)}))
	rec := events.NewFakeRecorder(10)
	w.in.opts.Recorder = rec
	started := time.Now().Add(-time.Minute)
	metric := func() float64 {
		return counter(t, "guardrail_provider_budget_reached_total", map[string]string{"provider": "openai", "namespace": "tenant",
			"budget": guardv1.BudgetRequestsPerMinute, "mode": "Report"})
	}
	before := metric()

	for i, n := range []int64{3, 5, 7} {
		if code := w.post(t, started, guardv1.ProviderUsage{Provider: "openai", Requests: n, InputTokens: 10 * n}); code != http.StatusNoContent {
			t.Fatalf("post %d: %d", i, code)
		}
		w.in.flush(context.Background())
	}
	mp := w.provider(t, "openai")
	if len(mp.Status.Budgets) != 1 || mp.Status.Budgets[0].Minute == nil || mp.Status.Budgets[0].Minute.Requests != 7 ||
		mp.Status.Usage.Requests != 7 || *mp.Status.Budgets[0].Minute.RequestsRemaining != 0 {
		t.Fatalf("status.budgets %+v (usage %+v), want tenant's minute at 7 requests, like status.usage", mp.Status.Budgets, mp.Status.Usage)
	}
	if got := metric() - before; got != 1 {
		t.Errorf("guardrail_provider_budget_reached_total grew by %v, want 1", got)
	}
	var evs []string
	for len(rec.Events) > 0 {
		evs = append(evs, <-rec.Events)
	}
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal BudgetWouldBeExceeded") ||
		!strings.Contains(evs[0], "namespace tenant reached requestsPerMinute (5 of 4)") || !strings.Contains(evs[0], "no call was refused") {
		t.Fatalf("events %q, want one Normal BudgetWouldBeExceeded naming tenant and requestsPerMinute", evs)
	}
	if strings.Contains(evs[0], providerCredential) {
		t.Fatalf("the event holds the credential")
	}

	// The next minute: reached again, reported again.
	now = now.Add(time.Minute)
	if code := w.post(t, started, guardv1.ProviderUsage{Provider: "openai", Requests: 12}); code != http.StatusNoContent {
		t.Fatalf("status %d", code)
	}
	w.in.flush(context.Background())
	if got := metric() - before; got != 2 {
		t.Errorf("in the next minute the metric grew by %v in all, want 2", got)
	}
	if len(rec.Events) != 1 {
		t.Errorf("in the next minute %d events, want 1", len(rec.Events))
	}
}

// A provider without limits keeps no budgets and reports nothing: the feature is off.
func TestWithoutLimitsNoBudgetIsKept(t *testing.T) {
	w := newUsageWorld(t, true, []string{"openai"}, modelProvider("openai", "true"))
	rec := events.NewFakeRecorder(10)
	w.in.opts.Recorder = rec
	if code := w.post(t, time.Now().Add(-time.Minute), guardv1.ProviderUsage{Provider: "openai", Requests: 1000, InputTokens: 1}); code != http.StatusNoContent {
		t.Fatalf("status %d", code)
	}
	w.in.flush(context.Background())
	if mp := w.provider(t, "openai"); mp.Status.Budgets != nil || mp.Status.Usage.Requests != 1000 || len(rec.Events) != 0 {
		t.Fatalf("without limits: budgets %+v, usage %+v, %d events", mp.Status.Budgets, mp.Status.Usage, len(rec.Events))
	}
}
