package controlplane_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/controlplane"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// nextProvider polls as a guard running version until the subscription answers a
// snapshot whose single provider satisfies ok, and returns it.
func nextProvider(t *testing.T, tok, running string, what string, ok func(cp.Provider) bool) cp.Snapshot {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		status, body := poll(t, tok, cp.SubscribeRequest{Running: running})
		if status == http.StatusNoContent {
			continue
		}
		if status != http.StatusOK {
			t.Fatalf("the subscription answered %d: %s", status, redact(body))
		}
		var s cp.Snapshot
		must(t, json.Unmarshal(body, &s))
		running = s.Version
		if len(s.Providers) == 1 && ok(s.Providers[0]) {
			return s
		}
	}
	t.Fatalf("no snapshot with %s within 20s", what)
	return cp.Snapshot{}
}

// A namespace that reached a limit of a ModelProvider in Enforce mode gets the provider
// marked exhausted in its guards' snapshot as soon as status.budgets says so (the
// intake's write), with the limit and the window's end; Report mode marks nothing; at the
// window's end the guards get the snapshot without the mark.
func TestAnEnforcedBudgetMarksTheProviderUntilTheWindowEnds(t *testing.T) {
	ns, prefix := keylessFixture(t)
	ctx := context.Background()
	name := prefix + "-a"
	// Budget windows run on a clock 12 s before the end of a minute.
	now := time.Now().UTC()
	target := now.Truncate(time.Minute).Add(48 * time.Second)
	if target.Before(now) {
		target = target.Add(time.Minute)
	}
	controlplane.ShiftBudgetClock(target.Sub(now))
	t.Cleanup(func() { controlplane.ShiftBudgetClock(0) })
	minute := target.Truncate(time.Minute)
	day := time.Date(minute.Year(), minute.Month(), minute.Day(), 0, 0, 0, 0, time.UTC)

	setMode := func(mode v1alpha1.BudgetMode) {
		t.Helper()
		mp := &v1alpha1.ModelProvider{}
		must(t, k8s.Get(ctx, client.ObjectKey{Name: name}, mp))
		five := int64(5)
		mp.Spec.Limits = &v1alpha1.ProviderLimits{RequestsPerMinute: &five, Mode: mode}
		must(t, k8s.Update(ctx, mp))
	}
	setMode(v1alpha1.BudgetModeEnforce)
	p := keylessPod(t, ns, "budget-1", nil, name)
	tok := token(t, p, guardv1.Audience)
	first := nextProvider(t, tok, "", "the provider, unmarked", func(p cp.Provider) bool { return p.Exhausted == nil })

	// The intake's write: the namespace's minute reached 5 requests.
	mp := &v1alpha1.ModelProvider{}
	must(t, k8s.Get(ctx, client.ObjectKey{Name: name}, mp))
	mp.Status.Budgets = []v1alpha1.NamespaceBudget{{Namespace: ns,
		Minute: &v1alpha1.BudgetWindow{Start: metav1.NewTime(minute), Requests: 5},
		Day:    &v1alpha1.BudgetWindow{Start: metav1.NewTime(day), Requests: 5}}}
	must(t, k8s.Status().Update(ctx, mp))
	marked := nextProvider(t, tok, first.Version, "the provider marked exhausted", func(p cp.Provider) bool { return p.Exhausted != nil })
	if e := marked.Providers[0].Exhausted; e.Budget != guardv1.BudgetRequestsPerMinute || !e.Until.Equal(minute.Add(time.Minute)) {
		t.Fatalf("the provider is marked %+v, want requestsPerMinute until %s", e, minute.Add(time.Minute))
	}
	if marked.Providers[0].Credential == "" {
		t.Errorf("the marked provider lost its credential")
	}

	// Report mode never blocks: the same figures mark nothing.
	setMode(v1alpha1.BudgetModeReport)
	report := nextProvider(t, tok, marked.Version, "the provider unmarked in Report mode", func(p cp.Provider) bool { return p.Exhausted == nil })
	if report.Version != first.Version {
		t.Errorf("in Report mode the snapshot is %s, want the one without budgets (%s)", report.Version, first.Version)
	}
	setMode(v1alpha1.BudgetModeEnforce)
	again := nextProvider(t, tok, report.Version, "the provider marked again in Enforce mode", func(p cp.Provider) bool { return p.Exhausted != nil })

	// The minute ends: the guards get the snapshot without the mark.
	ended := nextProvider(t, tok, again.Version, "the provider unmarked at the window's end", func(p cp.Provider) bool { return p.Exhausted == nil })
	if got := time.Now().Add(target.Sub(now)); got.Before(minute.Add(time.Minute)) {
		t.Errorf("the mark was lifted at %s, before the window's end %s", got, minute.Add(time.Minute))
	}
	if ended.Version != first.Version {
		t.Errorf("after the window the snapshot is %s, want the unmarked one (%s)", ended.Version, first.Version)
	}
}
