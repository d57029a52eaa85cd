package modelprovider

import (
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Budgets (spec.limits): each namespace's use of a ModelProvider is counted in two fixed
// UTC windows, the minute and the day, in status.budgets. The intake adds to them where
// it writes status.usage (so both agree, whichever replica claimed the usage); the
// control plane marks the provider exhausted in the snapshots of a namespace that reached
// a limit in Enforce mode, until its window ends.

// Windows returns the start of the UTC minute and of the UTC day of now.
func Windows(now time.Time) (minute, day time.Time) {
	now = now.UTC()
	return now.Truncate(time.Minute), time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
}

// WindowEnd returns when the window that started at start ends: a minute or a day later.
func WindowEnd(start time.Time, day bool) time.Time {
	if day {
		return start.UTC().AddDate(0, 0, 1)
	}
	return start.Add(time.Minute)
}

// Reached returns the limits of limits that figures of one window (requests, tokens)
// reach, of the minute's (day false) or the day's.
func Reached(limits *v1alpha1.ProviderLimits, day bool, requests, tokens int64) []string {
	if limits == nil {
		return nil
	}
	reqLimit, tokLimit, reqName, tokName := limits.RequestsPerMinute, limits.TokensPerMinute,
		guardv1.BudgetRequestsPerMinute, guardv1.BudgetTokensPerMinute
	if day {
		reqLimit, tokLimit, reqName, tokName = limits.RequestsPerDay, limits.TokensPerDay,
			guardv1.BudgetRequestsPerDay, guardv1.BudgetTokensPerDay
	}
	var out []string
	if reqLimit != nil && requests >= *reqLimit {
		out = append(out, reqName)
	}
	if tokLimit != nil && tokens >= *tokLimit {
		out = append(out, tokName)
	}
	return out
}

// Exhausted returns the budget of mp that namespace ns has used up at now, when mp's
// limits are enforced, and when its window ends; "" when none is (or the limits are in
// Report mode). Of a minute's and a day's limit both reached, the day's wins: it ends
// later. Figures of a window that has ended count for nothing.
func Exhausted(mp *v1alpha1.ModelProvider, ns string, now time.Time) (budget string, until time.Time) {
	l := mp.Spec.Limits
	if l == nil || l.Mode != v1alpha1.BudgetModeEnforce {
		return "", time.Time{}
	}
	minute, day := Windows(now)
	for i := range mp.Status.Budgets {
		b := &mp.Status.Budgets[i]
		if b.Namespace != ns {
			continue
		}
		if w := b.Day; w != nil && w.Start.UTC().Equal(day) {
			if r := Reached(l, true, w.Requests, w.Tokens); len(r) > 0 {
				return r[0], WindowEnd(day, true)
			}
		}
		if w := b.Minute; w != nil && w.Start.UTC().Equal(minute) {
			if r := Reached(l, false, w.Requests, w.Tokens); len(r) > 0 {
				return r[0], WindowEnd(minute, false)
			}
		}
	}
	return "", time.Time{}
}
