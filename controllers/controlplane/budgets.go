package controlplane

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/modelprovider"
)

// Budgets in Enforce mode: a ModelProvider whose status.budgets shows that a namespace
// reached one of its limits in the current window is marked exhausted (the limit, the
// window's end) in the snapshots of that namespace's guards, which answer its calls with
// 429 until then. The intake writes status.budgets; a write that changes whether a
// namespace is exhausted marks that namespace's snapshots stale (watchBudgets), so its
// guards get the mark within the debounce, and the window's end marks them stale again
// (windowTimers), so that they get the snapshot without it. Report mode, or a provider
// without limits, marks nothing: its snapshots are what they were without budgets.

// exhaustionChanges returns the namespaces whose exhaustion at now differs between two
// states of a ModelProvider of the same spec.
func exhaustionChanges(old, cur *v1alpha1.ModelProvider, now time.Time) []string {
	seen := map[string]bool{}
	var out []string
	for _, mp := range []*v1alpha1.ModelProvider{old, cur} {
		for i := range mp.Status.Budgets {
			ns := mp.Status.Budgets[i].Namespace
			if seen[ns] {
				continue
			}
			seen[ns] = true
			ob, ou := modelprovider.Exhausted(old, ns, now)
			cb, cu := modelprovider.Exhausted(cur, ns, now)
			if ob != cb || !ou.Equal(cu) {
				out = append(out, ns)
			}
		}
	}
	return out
}

// watchBudgets touches the namespaces whose exhaustion a status write of a ModelProvider
// changes. A change of spec (limits, mode) touches every namespace already (watchCluster).
func (s *Server) watchBudgets(ctx context.Context, mgr ctrl.Manager) error {
	inf, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.ModelProvider{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1alpha1.ModelProvider)
			c, ok2 := cur.(*v1alpha1.ModelProvider)
			if !ok1 || !ok2 || c.Spec.Limits == nil || c.Spec.Limits.Mode != v1alpha1.BudgetModeEnforce {
				return
			}
			for _, ns := range exhaustionChanges(o, c, budgetClock()) {
				s.hub.touch(ns)
			}
		},
	})
	return err
}

// windowTimers touch a namespace's snapshots when a budget window it is exhausted in
// ends: at most one timer per namespace and end, gone once fired.
type windowTimers struct {
	touch func(ns string)
	mu    sync.Mutex
	// timers by namespace, then by the window's end.
	timers map[string]map[time.Time]*time.Timer
}

// windowSlack is how long after a window's end its namespace is touched: the rebuild
// must see the window ended.
const windowSlack = 50 * time.Millisecond

// at touches ns just after t, once however often it is asked.
func (w *windowTimers) at(ns string, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timers == nil {
		w.timers = map[string]map[time.Time]*time.Timer{}
	}
	t = t.UTC()
	if w.timers[ns][t] != nil {
		return
	}
	if w.timers[ns] == nil {
		w.timers[ns] = map[time.Time]*time.Timer{}
	}
	w.timers[ns][t] = time.AfterFunc(t.Sub(budgetClock())+windowSlack, func() {
		w.mu.Lock()
		delete(w.timers[ns], t)
		if len(w.timers[ns]) == 0 {
			delete(w.timers, ns)
		}
		w.mu.Unlock()
		w.touch(ns)
	})
}

// wrap has the snapshots that build compiles tell w the window ends they mark.
func (w *windowTimers) wrap(build buildFunc) buildFunc {
	return func(ctx context.Context, ns string, sel selection) (string, compileFunc, error) {
		key, compile, err := build(ctx, ns, sel)
		if err != nil || compile == nil {
			return key, compile, err
		}
		return key, func(ctx context.Context, prev *built) (*built, error) {
			return compile(context.WithValue(ctx, windowEndsKey{}, w.at), prev)
		}, nil
	}
}

// windowEndsKey carries, in a compile's context, where to tell the end of each budget
// window a snapshot marks a provider exhausted until.
type windowEndsKey struct{}

// windowEndsFrom returns the function of ctx's windowEndsKey, or one that does nothing.
func windowEndsFrom(ctx context.Context) func(ns string, until time.Time) {
	if f, ok := ctx.Value(windowEndsKey{}).(func(string, time.Time)); ok {
		return f
	}
	return func(string, time.Time) {}
}

// budgetOffset shifts the clock of budget windows (tests set it).
var budgetOffset atomic.Int64

// budgetClock is the clock of budget windows in snapshots.
func budgetClock() time.Time { return time.Now().Add(time.Duration(budgetOffset.Load())) }
