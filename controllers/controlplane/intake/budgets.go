package intake

import (
	"fmt"
	"sort"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/modelprovider"
)

// Budgets of ModelProviders (spec.limits). The usage this replica writes into a
// ModelProvider's status.usage is added, in the same write, to the namespace's figures
// of the current UTC minute and day in status.budgets: the windows agree with
// status.usage whichever replica claimed the usage, a write retried under its mark adds
// nothing twice, and of concurrent writers each adds to what the other wrote (optimistic
// lock). Usage counts in the window of the write, not of the call: the guards report it
// at their decision interval. The write that makes a namespace reach a limit — exactly
// one, since writes are serialized — emits the Event (BudgetWouldBeExceeded in Report
// mode, BudgetExceeded in Enforce mode) and counts guardrail_provider_budget_reached_total:
// at most once per namespace, limit and window. The control plane reads status.budgets
// to mark the provider exhausted in the namespace's snapshots (Enforce mode).

// timeNow is the clock of the windows (tests set it).
var timeNow = time.Now

var budgetReached = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "guardrail_provider_budget_reached_total",
	Help: "Times a namespace reached a limit of a ModelProvider in a window (at most once per window), by provider, " +
		"namespace, budget (requestsPerMinute, tokensPerMinute, requestsPerDay, tokensPerDay) and mode (Report, Enforce).",
}, []string{"provider", "namespace", "budget", "mode"})

func init() { ctrlmetrics.Registry.MustRegister(budgetReached) }

// reached is a limit a write made a namespace reach.
type reached struct {
	namespace, budget string
	used, limit       int64
	until             time.Time
}

// addBudget adds what guards of namespace ns counted (d) to mp's status.budgets at now,
// and returns the limits this made ns reach. Without limits, status.budgets is removed.
// Windows that ended are dropped (a day's entry) or emptied (a minute's) first, and every
// entry's remaining figures follow the current limits. At most
// v1alpha1.MaxBudgetNamespaces namespaces are kept: a namespace new to a full list takes
// the place of the one furthest from its limits when it comes nearer to its own,
// otherwise it is not tracked (its budget then counts from zero when it enters).
func addBudget(mp *v1alpha1.ModelProvider, ns string, d usageDelta, now time.Time) []reached {
	st, l := &mp.Status, mp.Spec.Limits
	if l == nil {
		st.Budgets = nil
		return nil
	}
	minute, day := modelprovider.Windows(now)
	kept := st.Budgets[:0]
	for _, b := range st.Budgets {
		if b.Day == nil || !b.Day.Start.UTC().Equal(day) {
			continue
		}
		if b.Minute != nil && !b.Minute.Start.UTC().Equal(minute) {
			b.Minute = nil
		}
		kept = append(kept, b)
	}
	st.Budgets = kept
	defer func() {
		for i := range st.Budgets {
			remaining(l, &st.Budgets[i])
		}
		sort.Slice(st.Budgets, func(i, j int) bool { return st.Budgets[i].Namespace < st.Budgets[j].Namespace })
	}()
	if d.empty() {
		return nil
	}
	tokens := satAdd(d.input, d.output)
	i := budgetIndex(st.Budgets, ns)
	if i < 0 {
		fresh := v1alpha1.NamespaceBudget{Namespace: ns}
		if len(st.Budgets) < v1alpha1.MaxBudgetNamespaces {
			st.Budgets = append(st.Budgets, fresh)
			i = len(st.Budgets) - 1
		} else {
			victim := 0
			for j := range st.Budgets {
				if pressure(l, &st.Budgets[j]) < pressure(l, &st.Budgets[victim]) {
					victim = j
				}
			}
			probe := v1alpha1.NamespaceBudget{Namespace: ns, Minute: &v1alpha1.BudgetWindow{Requests: d.requests, Tokens: tokens},
				Day: &v1alpha1.BudgetWindow{Requests: d.requests, Tokens: tokens}}
			if pressure(l, &probe) <= pressure(l, &st.Budgets[victim]) {
				return nil
			}
			st.Budgets[victim] = fresh
			i = victim
		}
	}
	b := &st.Budgets[i]
	if b.Minute == nil {
		b.Minute = &v1alpha1.BudgetWindow{Start: metav1.NewTime(minute)}
	}
	if b.Day == nil {
		b.Day = &v1alpha1.BudgetWindow{Start: metav1.NewTime(day)}
	}
	var out []reached
	for _, w := range []struct {
		w   *v1alpha1.BudgetWindow
		day bool
	}{{b.Minute, false}, {b.Day, true}} {
		before := modelprovider.Reached(l, w.day, w.w.Requests, w.w.Tokens)
		w.w.Requests, w.w.Tokens = satAdd(w.w.Requests, d.requests), satAdd(w.w.Tokens, tokens)
		for _, name := range modelprovider.Reached(l, w.day, w.w.Requests, w.w.Tokens) {
			if contains(before, name) {
				continue
			}
			used, limit := figureOf(l, name, w.w)
			out = append(out, reached{namespace: ns, budget: name, used: used, limit: limit,
				until: modelprovider.WindowEnd(w.w.Start.Time, w.day)})
		}
	}
	return out
}

func budgetIndex(bs []v1alpha1.NamespaceBudget, ns string) int {
	for i := range bs {
		if bs[i].Namespace == ns {
			return i
		}
	}
	return -1
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// limitsOf returns a window's request and token limits.
func limitsOf(l *v1alpha1.ProviderLimits, day bool) (requests, tokens *int64) {
	if day {
		return l.RequestsPerDay, l.TokensPerDay
	}
	return l.RequestsPerMinute, l.TokensPerMinute
}

// figureOf returns the figure of w the budget name counts and its limit.
func figureOf(l *v1alpha1.ProviderLimits, name string, w *v1alpha1.BudgetWindow) (used, limit int64) {
	switch name {
	case guardv1.BudgetRequestsPerMinute:
		return w.Requests, *l.RequestsPerMinute
	case guardv1.BudgetTokensPerMinute:
		return w.Tokens, *l.TokensPerMinute
	case guardv1.BudgetRequestsPerDay:
		return w.Requests, *l.RequestsPerDay
	default:
		return w.Tokens, *l.TokensPerDay
	}
}

// remaining sets the remaining figures of b's windows from the limits.
func remaining(l *v1alpha1.ProviderLimits, b *v1alpha1.NamespaceBudget) {
	for _, w := range []struct {
		w   *v1alpha1.BudgetWindow
		day bool
	}{{b.Minute, false}, {b.Day, true}} {
		if w.w == nil {
			continue
		}
		reqs, toks := limitsOf(l, w.day)
		w.w.RequestsRemaining, w.w.TokensRemaining = left(reqs, w.w.Requests), left(toks, w.w.Tokens)
	}
}

func left(limit *int64, used int64) *int64 {
	if limit == nil {
		return nil
	}
	r := max(0, *limit-used)
	return &r
}

// pressure is how near b is to its nearest limit: the largest share of a limit used.
func pressure(l *v1alpha1.ProviderLimits, b *v1alpha1.NamespaceBudget) float64 {
	p := 0.0
	for _, w := range []struct {
		w   *v1alpha1.BudgetWindow
		day bool
	}{{b.Minute, false}, {b.Day, true}} {
		if w.w == nil {
			continue
		}
		reqs, toks := limitsOf(l, w.day)
		if reqs != nil {
			p = max(p, float64(w.w.Requests)/float64(*reqs))
		}
		if toks != nil {
			p = max(p, float64(w.w.Tokens)/float64(*toks))
		}
	}
	return p
}

// budgetEvent says what a write made namespaces reach, names and numbers only.
func budgetEvent(mode v1alpha1.BudgetMode, rs []reached) (eventType, reason, message string) {
	const maxListed = 5
	parts := make([]string, 0, min(len(rs), maxListed))
	for i, r := range rs {
		if i == maxListed {
			break
		}
		parts = append(parts, fmt.Sprintf("namespace %s reached %s (%d of %d) in the window ending %s",
			r.namespace, r.budget, r.used, r.limit, r.until.UTC().Format(time.RFC3339)))
	}
	msg := strings.Join(parts, "; ")
	if len(rs) > maxListed {
		msg += fmt.Sprintf("; and %d more", len(rs)-maxListed)
	}
	if mode == v1alpha1.BudgetModeEnforce {
		return "Warning", "BudgetExceeded", msg + ": its guards answer its calls to this provider with 429 until the window ends"
	}
	return "Normal", "BudgetWouldBeExceeded", msg + ": Report mode, no call was refused (in Enforce mode its calls would be " +
		"answered with 429 until the window ends)"
}
