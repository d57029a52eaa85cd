package guards

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
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
//     collector; cp.AnnotationPolicyVersion, cp.AnnotationEnforced and cp.AnnotationRefused:
//     the acknowledgement; cp.AnnotationDecisions: the decisions claim, and
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
	// LabelLeasePodNamespace is the namespace of a guard Lease's pod.
	LabelLeasePodNamespace = "guardrail.dev/pod-namespace"
	// AnnotationLeasePod is the name of a guard Lease's pod.
	AnnotationLeasePod = "guardrail.dev/pod"
	// AnnotationLeasePodUID is the uid of a guard Lease's pod.
	AnnotationLeasePodUID = "guardrail.dev/pod-uid"
	// AnnotationDecisionsOwed holds, on a guard's Lease, the counts claimed from the guard
	// that a manager replica has not yet written into status (package intake): a Lease
	// carrying it is not collected until another replica has taken them over.
	AnnotationDecisionsOwed = "guardrail.dev/decisions-owed"
	// DefaultLeaseDuration is how long a guard counts as answering after its last renewal:
	// two long polls (Options.Wait).
	DefaultLeaseDuration = 60 * time.Second
	// leasePrefix tells guards' Leases from the leader election's in the namespace.
	leasePrefix = "guard-"
	// MaxRefusalChars bounds a guard's refusal once it is in a Lease, a condition or an Event.
	MaxRefusalChars = 256
)

// LeaseName is the name of the Lease of the guard of the pod with uid.
func LeaseName(uid types.UID) string { return leasePrefix + string(uid) }

// Ack is what a guard's Lease says at a given time.
type Ack struct {
	// Pod and UID are the guard's pod, in the namespace LabelLeasePodNamespace names.
	Pod string
	UID types.UID
	// Live is true while the guard answers: its last renewal is within the Lease's duration.
	Live bool
	// Expires is when Live turns (or turned) false; zero for a Lease never renewed.
	Expires time.Time
	// Enforced maps each Guardrail of the policy the guard runs to its generation.
	Enforced map[string]int64
	// Refused is the version the guard refused and why, printable and bounded: free text
	// of the guard, safe for a condition message.
	Refused string
}

// ReadAck reads a guard's Lease as of now.
func ReadAck(l *coordinationv1.Lease, now time.Time) Ack {
	a := Ack{
		Pod:      l.Annotations[AnnotationLeasePod],
		UID:      types.UID(l.Annotations[AnnotationLeasePodUID]),
		Enforced: ParseEnforced(l.Annotations[cp.AnnotationEnforced]),
		Refused:  Printable(l.Annotations[cp.AnnotationRefused], MaxRefusalChars),
	}
	if l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil {
		a.Expires = l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		a.Live = now.Before(a.Expires)
	}
	return a
}

// ListAcks reads the Leases of the guards of pods of namespace ns, kept in leaseNS, as of
// now: from a cache that holds the Leases of leaseNS (controllers.Options.Cache).
func ListAcks(ctx context.Context, r client.Reader, leaseNS, ns string, now time.Time) ([]Ack, error) {
	var leases coordinationv1.LeaseList
	if err := r.List(ctx, &leases, client.InNamespace(leaseNS), client.MatchingLabels{LabelLeasePodNamespace: ns}); err != nil {
		return nil, err
	}
	acks := make([]Ack, len(leases.Items))
	for i := range leases.Items {
		acks[i] = ReadAck(&leases.Items[i], now)
	}
	return acks, nil
}

// Printable returns s with every rune that is not printable (controls, format characters,
// invalid UTF-8) dropped, spaces for line breaks and tabs, cut to at most limit bytes on a
// rune boundary: free text a guard sends, made fit for a condition message or an Event.
func Printable(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case r == utf8.RuneError || !unicode.IsPrint(r):
			continue
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

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

// FormatEnforced is the value of cp.AnnotationEnforced naming the Guardrails of a snapshot.
func FormatEnforced(gs []policy.GuardrailObject) string {
	parts := make([]string, len(gs))
	for i := range gs {
		parts[i] = gs[i].Name + "=" + strconv.FormatInt(gs[i].Generation, 10)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// ParseEnforced reads the annotation written by FormatEnforced: Guardrail name → generation.
func ParseEnforced(v string) map[string]int64 {
	out := map[string]int64{}
	for _, p := range strings.Split(v, ",") {
		name, gen, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(gen, 10, 64); err == nil {
			out[name] = n
		}
	}
	return out
}
