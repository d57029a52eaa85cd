package controlplane

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
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
//     the acknowledgement; cp.AnnotationDecisions: the decisions claim (claim.go);
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
	// DefaultLeaseDuration is how long a guard counts as answering after its last renewal:
	// two long polls (Options.Wait).
	DefaultLeaseDuration = 60 * time.Second
	// leasePrefix tells guards' Leases from the leader election's in the namespace.
	leasePrefix = "guard-"
	// maxRefusalChars bounds a guard's refusal once it is in a Lease, a condition or an Event.
	maxRefusalChars = 256
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
		Refused:  Printable(l.Annotations[cp.AnnotationRefused], maxRefusalChars),
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

// renewDue reports whether a poll at now renews l: its last renewal is a third of its
// duration old (or it has none), or it was written with another duration or holder.
func renewDue(l *coordinationv1.Lease, holder string, now time.Time, d time.Duration) bool {
	s := l.Spec
	return s.RenewTime == nil || s.LeaseDurationSeconds == nil || *s.LeaseDurationSeconds != leaseSeconds(d) ||
		s.HolderIdentity == nil || *s.HolderIdentity != holder || now.Sub(s.RenewTime.Time) >= d/3
}

// leaseSeconds is d in whole seconds, rounded up (a Lease's duration is in seconds).
func leaseSeconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

// ackAnnotations returns what a poll changes of the acknowledgement annotations cur: a
// value to set, or nil to remove. enforced is the Guardrails of req.Running if this
// replica compiled that version.
func ackAnnotations(cur map[string]string, req *cp.SubscribeRequest, enforced string, known bool) map[string]*string {
	want := map[string]*string{}
	set := func(k, v string) {
		if v == "" {
			if _, ok := cur[k]; ok {
				want[k] = nil
			}
			return
		}
		if cur[k] != v {
			want[k] = &v
		}
	}
	set(cp.AnnotationPolicyVersion, req.Running)
	switch {
	case req.Running == "":
		set(cp.AnnotationEnforced, "")
	case known:
		set(cp.AnnotationEnforced, enforced)
	case cur[cp.AnnotationPolicyVersion] != req.Running:
		// A version this replica never compiled: what it holds is unknown until the guard
		// applies the current one.
		set(cp.AnnotationEnforced, "")
	}
	refused := ""
	if req.Refused != nil {
		refused = Printable(req.Refused.Version+": "+req.Refused.Error, maxRefusalChars)
	}
	set(cp.AnnotationRefused, refused)
	return want
}

// guardLease is the Lease of a guard pod as it is first created.
func (s *Server) guardLease(pod *metav1.PartialObjectMetadata, now time.Time) *coordinationv1.Lease {
	t := metav1.NewMicroTime(now)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.opts.LeaseNamespace, Name: LeaseName(pod.UID),
			Labels:      map[string]string{LabelLeasePodNamespace: pod.Namespace},
			Annotations: map[string]string{AnnotationLeasePod: pod.Name, AnnotationLeasePodUID: string(pod.UID)},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(pod.Namespace + "/" + pod.Name),
			LeaseDurationSeconds: ptr.To(leaseSeconds(s.opts.LeaseDuration)),
			AcquireTime:          &t,
			RenewTime:            &t,
		},
	}
}

// recordAck renews the guard's Lease with what the guard enforces, where the Guardrail
// status writer (the leader) reads it. Written when the acknowledgement changed or the
// heartbeat is due; a failure is retried on the guard's next poll.
func (s *Server) recordAck(ctx context.Context, pod *metav1.PartialObjectMetadata, req *cp.SubscribeRequest) {
	now := time.Now()
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: s.opts.LeaseNamespace, Name: LeaseName(pod.UID)}
	err := s.leases.Get(ctx, key, lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = nil
	case err != nil:
		serverMetrics.ackErrors.Inc()
		s.log.Error(err, "Reading a guard's Lease", "pod", pod.Namespace+"/"+pod.Name)
		return
	}
	var cur map[string]string
	if lease != nil {
		cur = lease.Annotations
	}
	enforced, known := s.hub.enforcedOf(req.Running)
	want := ackAnnotations(cur, req, enforced, known)
	holder := pod.Namespace + "/" + pod.Name
	if lease != nil && len(want) == 0 && !renewDue(lease, holder, now, s.opts.LeaseDuration) {
		return
	}
	write := "renewed"
	if len(want) > 0 {
		write = "acked"
	}
	if lease == nil {
		fresh := s.guardLease(pod, now)
		for k, v := range want {
			if v != nil {
				fresh.Annotations[k] = *v
			}
		}
		err = s.writer.Create(ctx, fresh)
		write = "created"
	}
	if lease != nil || apierrors.IsAlreadyExists(err) {
		// Created meanwhile (by the decisions intake, or another replica's poll of the
		// same guard), or the cache was behind: a merge patch needs no resourceVersion.
		err = s.renew(ctx, pod, want, now)
	}
	if err != nil {
		serverMetrics.ackErrors.Inc()
		s.log.Error(err, "Recording a guard's acknowledgement on its Lease", "pod", pod.Namespace+"/"+pod.Name)
		return
	}
	serverMetrics.leaseWrites.WithLabelValues(write).Inc()
	if len(want) > 0 {
		result := "applied"
		if req.Refused != nil {
			result = "refused"
		}
		serverMetrics.acks.WithLabelValues(result).Inc()
	}
}

// renew merge-patches the guard's Lease: the heartbeat, and the annotations in want.
func (s *Server) renew(ctx context.Context, pod *metav1.PartialObjectMetadata, want map[string]*string, now time.Time) error {
	base := s.guardLease(pod, now)
	annotations := map[string]*string{}
	for k, v := range base.Annotations {
		annotations[k] = &v
	}
	for k, v := range want {
		annotations[k] = v
	}
	base.Spec.AcquireTime = nil
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": base.Labels, "annotations": annotations},
		"spec":     base.Spec,
	})
	if err != nil {
		return err
	}
	target := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: base.Namespace, Name: base.Name}}
	return s.writer.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
}

// claimLease returns the guard's Lease for the decisions claim: from the cache, else the
// apiserver, else created (a guard may report before its first poll reached a replica).
func (s *Server) claimLease(ctx context.Context, pod *metav1.PartialObjectMetadata) (*coordinationv1.Lease, error) {
	key := types.NamespacedName{Namespace: s.opts.LeaseNamespace, Name: LeaseName(pod.UID)}
	lease := &coordinationv1.Lease{}
	err := s.leases.Get(ctx, key, lease)
	if apierrors.IsNotFound(err) {
		err = s.api.Get(ctx, key, lease)
	}
	if !apierrors.IsNotFound(err) {
		return lease, err
	}
	lease = s.guardLease(pod, time.Now())
	if err = s.writer.Create(ctx, lease); apierrors.IsAlreadyExists(err) {
		lease = &coordinationv1.Lease{}
		err = s.api.Get(ctx, key, lease)
	}
	return lease, err
}
