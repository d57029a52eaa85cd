package intake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// A claim whose Lease write failed without saying whether it landed (a timeout, a
// connection cut) is a doubt: counting it could count it twice (the guard resends, and
// the resend finds it claimed), not counting it could lose it. The claim carries an id,
// kept in the writer's owed entry for the epoch; reading the Lease again settles it. A
// doubt that cannot be settled at once is answered 503 and settled by the epoch's flush,
// which writes nothing of that epoch or later ones before it is.

// doubt is a claim of unknown outcome.
type doubt struct {
	lease   types.NamespacedName
	claimID string
	ns, pod string
	deltas  batchDelta
	samples []guardv1.Sample
}

type claimOutcome int

const (
	claimUnknown claimOutcome = iota
	claimLanded
	claimLost
)

// newClaimID is a claim's id in an owed entry.
func newClaimID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// confirmClaim reads the guard's Lease from the apiserver, a few times within a second or
// two, to find whether writer's claim claimID of epoch reached it.
func (in *Intake) confirmClaim(ctx context.Context, lease *coordinationv1.Lease, writer string, epoch int64, claimID string) claimOutcome {
	for i, wait := range []time.Duration{0, 200 * time.Millisecond, time.Second} {
		if i > 0 {
			select {
			case <-ctx.Done():
				return claimUnknown
			case <-time.After(wait):
			}
		}
		if o := in.findClaim(ctx, types.NamespacedName{Namespace: lease.Namespace, Name: lease.Name}, writer, epoch, claimID); o != claimUnknown {
			return o
		}
	}
	return claimUnknown
}

// findClaim reads the Lease at key from the apiserver and looks for the claim. An entry
// is dropped by its own writer only once it reached status, which cannot have happened
// to an epoch with a doubt: an entry without the claim means the claim did not land.
func (in *Intake) findClaim(ctx context.Context, key types.NamespacedName, writer string, epoch int64, claimID string) claimOutcome {
	lease := &coordinationv1.Lease{}
	err := in.opts.API.Get(ctx, key, lease)
	switch {
	case apierrors.IsNotFound(err):
		return claimLost
	case err != nil:
		return claimUnknown
	}
	owed, err := parseOwed(lease.Annotations[guardv1.AnnotationDecisionsOwed])
	if err != nil {
		return claimLost
	}
	for _, e := range owed {
		if e.Writer == writer && e.Epoch == epoch && slices.Contains(e.Claims, claimID) {
			return claimLanded
		}
	}
	return claimLost
}

// resolveDoubts settles b's doubts: a claim that landed joins the batch, one that did not
// is dropped. It reports false when one cannot be settled now.
func (in *Intake) resolveDoubts(ctx context.Context, b *epochBatch) bool {
	for len(b.doubts) > 0 {
		d := b.doubts[0]
		switch in.findClaim(ctx, d.lease, b.writer, b.epoch, d.claimID) {
		case claimUnknown:
			return false
		case claimLanded:
			in.mu.Lock()
			b.add(d.ns, d.pod, d.deltas, d.samples)
			b.doubts = b.doubts[1:]
			in.mu.Unlock()
		default:
			in.mu.Lock()
			b.doubts = b.doubts[1:]
			in.mu.Unlock()
		}
	}
	return true
}
