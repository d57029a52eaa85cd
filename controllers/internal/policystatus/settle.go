package policystatus

import (
	"context"
	"time"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// Settle ends a reconcile of obj from its deferred call: the one status patch (Finalize),
// the patch's error folded into the reconcile's, a prompt retry when the patch met a newer
// object (Stale) and, once the generation is handled without error, the next recount:
// recount (nil for none) returns how soon status.enforcement may change on its own (a
// guard's Lease expiring), 0 when nothing is to recount.
func Settle(ctx context.Context, p *status.Patcher, obj status.Object, result *ctrl.Result, retErr *error, recount func() time.Duration) {
	patchErr := p.Finalize(ctx, obj, *result, *retErr)
	*retErr = kerrors.NewAggregate([]error{status.Outcome(ctx, *retErr), patchErr})
	if p.Stale() && *retErr == nil {
		*result = ctrl.Result{RequeueAfter: status.StaleRetry}
		return
	}
	if *retErr == nil && result.IsZero() && recount != nil {
		if d := recount(); d > 0 {
			result.RequeueAfter = d
		}
	}
}

// EnforcementResync is how often status.enforcement is recounted on top of the watches
// of injected pods and guards' Leases: pods without a guard are not watched.
const EnforcementResync = time.Minute

// NextRecount is when a compiled guardrail's enforcement is recounted: at the first live
// guard's Lease expiry (expiry, 0 when none is live), and at least every
// EnforcementResync; 0 when it did not compile (nothing is distributed to count).
func NextRecount(compiled bool, expiry time.Duration) time.Duration {
	if !compiled {
		return 0
	}
	if expiry > 0 {
		return min(EnforcementResync, expiry)
	}
	return EnforcementResync
}
