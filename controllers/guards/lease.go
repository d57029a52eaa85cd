package guards

import (
	"context"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// A guard's state lives in one coordination.k8s.io/v1 Lease per guard pod, in the
// operator's own namespace — the heartbeat pattern of kube-node-lease. Tenants write their
// pods, never the operator's namespace: an acknowledgement, a heartbeat or a decisions
// claim is only ever written by the control-plane server, after TokenReview bound the
// request to the pod and the pod's spec proved it carries the guard (VerifyGuard).
//
//   - name: LeaseName(pod UID), so that a pod re-created under the same name starts afresh;
//   - label LabelLeasePodNamespace: the pod's namespace, so that the Guardrail reconciler
//     lists a namespace's Leases from its cache;
//   - annotations AnnotationLeasePod and AnnotationLeasePodUID: which pod it is, for the
//     collector; guardv1.AnnotationPolicyVersion, guardv1.AnnotationEnforced and guardv1.AnnotationRefused:
//     the acknowledgement; guardv1.AnnotationDecisions: the decisions claim, and
//     AnnotationDecisionsOwed: what was claimed and is not yet in status (package intake);
//   - spec.holderIdentity "<namespace>/<pod>", spec.leaseDurationSeconds (Options.
//     LeaseDuration) and spec.renewTime: renewed by a poll when renewTime is older than a
//     third of the duration or the acknowledgement changed. A live guard polls at least
//     every Options.Wait, so it renews about once per poll (twice a minute by default); a
//     guard counts as answering while renewTime + leaseDurationSeconds has not passed.
//
// Leases of pods that no longer exist are deleted by LeaseCollector (a Lease cannot be
// owned by a pod of another namespace).

const (
	// DefaultLeaseDuration is how long a guard counts as answering after its last renewal:
	// two long polls (Options.Wait).
	DefaultLeaseDuration = 60 * time.Second
	// MaxRefusalChars bounds a guard's refusal once it is in a Lease, a condition or an Event.
	MaxRefusalChars = guardv1.MaxRefusalChars
)

// LeaseName is the name of the Lease of the guard of the pod with uid.
func LeaseName(uid types.UID) string { return guardv1.LeaseName(string(uid)) }

// Ack is what a guard's Lease says at a given time (guardv1.Ack, with the pod's uid typed).
type Ack struct {
	guardv1.Ack
	UID types.UID
}

// ReadAck reads a guard's Lease as of now.
func ReadAck(l *coordinationv1.Lease, now time.Time) Ack {
	var renewed *time.Time
	var d time.Duration
	if l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil {
		renewed, d = &l.Spec.RenewTime.Time, time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
	}
	a := guardv1.ReadAck(l.Annotations, renewed, d, now)
	return Ack{Ack: a, UID: types.UID(a.UID)}
}

// ListAcks reads the Leases of the guards of pods of namespace ns, kept in leaseNS, as of
// now: from a cache that holds the Leases of leaseNS (controllers.Options.Cache).
func ListAcks(ctx context.Context, r client.Reader, leaseNS, ns string, now time.Time) ([]Ack, error) {
	var leases coordinationv1.LeaseList
	if err := r.List(ctx, &leases, client.InNamespace(leaseNS), client.MatchingLabels{guardv1.LabelLeasePodNamespace: ns}); err != nil {
		return nil, err
	}
	acks := make([]Ack, len(leases.Items))
	for i := range leases.Items {
		acks[i] = ReadAck(&leases.Items[i], now)
	}
	return acks, nil
}

// Printable is guardv1.Printable.
func Printable(s string, limit int) string { return guardv1.Printable(s, limit) }

// RenewDue reports whether a poll at now renews l: its last renewal is a third of its
// duration old (or it has none), or it was written with another duration or holder.
func RenewDue(l *coordinationv1.Lease, holder string, now time.Time, d time.Duration) bool {
	s := l.Spec
	return s.RenewTime == nil || s.LeaseDurationSeconds == nil || *s.LeaseDurationSeconds != LeaseSeconds(d) ||
		s.HolderIdentity == nil || *s.HolderIdentity != holder || now.Sub(s.RenewTime.Time) >= d/3
}

// LeaseSeconds is d in whole seconds, rounded up (a Lease's duration is in seconds).
func LeaseSeconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

// FormatEnforced is the value of guardv1.AnnotationEnforced naming the Guardrails of a snapshot.
func FormatEnforced(gs []policy.GuardrailObject) string {
	m := make(map[string]int64, len(gs))
	for i := range gs {
		m[gs[i].Name] = gs[i].Generation
	}
	return guardv1.FormatEnforced(m)
}

// ParseEnforced is guardv1.ParseEnforced.
func ParseEnforced(v string) map[string]int64 { return guardv1.ParseEnforced(v) }
