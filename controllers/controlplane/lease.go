package controlplane

import (
	"context"
	"encoding/json"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/controllers/guards"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

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
	set(guardv1.AnnotationPolicyVersion, req.Running)
	switch {
	case req.Running == "":
		set(guardv1.AnnotationEnforced, "")
	case known:
		set(guardv1.AnnotationEnforced, enforced)
	case cur[guardv1.AnnotationPolicyVersion] != req.Running:
		// A version this replica never compiled: what it holds is unknown until the guard
		// applies the current one.
		set(guardv1.AnnotationEnforced, "")
	}
	refused := ""
	if req.Refused != nil {
		refused = guards.Printable(req.Refused.Version+": "+req.Refused.Error, guards.MaxRefusalChars)
	}
	set(guardv1.AnnotationRefused, refused)
	return want
}

// guardLease is the Lease of a guard pod as it is first created.
func (s *Server) guardLease(pod *metav1.PartialObjectMetadata, now time.Time) *coordinationv1.Lease {
	t := metav1.NewMicroTime(now)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.opts.LeaseNamespace, Name: guards.LeaseName(pod.UID),
			Labels:      map[string]string{guardv1.LabelLeasePodNamespace: pod.Namespace},
			Annotations: map[string]string{guardv1.AnnotationLeasePod: pod.Name, guardv1.AnnotationLeasePodUID: string(pod.UID)},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(pod.Namespace + "/" + pod.Name),
			LeaseDurationSeconds: ptr.To(guards.LeaseSeconds(s.opts.LeaseDuration)),
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
	key := types.NamespacedName{Namespace: s.opts.LeaseNamespace, Name: guards.LeaseName(pod.UID)}
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
	enforced, known := s.hub.enforcedOf(pod.Namespace, req.Running)
	want := ackAnnotations(cur, req, enforced, known)
	holder := pod.Namespace + "/" + pod.Name
	if lease != nil && len(want) == 0 && !guards.RenewDue(lease, holder, now, s.opts.LeaseDuration) {
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

// guardLeaseFor returns the guard's Lease for the decisions claim (intake.Options.Lease):
// from the cache unless fresh, else the apiserver, else created (a guard may report before
// its first poll reached a replica).
func (s *Server) guardLeaseFor(ctx context.Context, pod *metav1.PartialObjectMetadata, fresh bool) (*coordinationv1.Lease, error) {
	if fresh {
		lease := &coordinationv1.Lease{}
		err := s.api.Get(ctx, types.NamespacedName{Namespace: s.opts.LeaseNamespace, Name: guards.LeaseName(pod.UID)}, lease)
		if !apierrors.IsNotFound(err) {
			return lease, err
		}
	}
	return s.claimLease(ctx, pod)
}

// claimLease returns the guard's Lease: from the cache, else the apiserver, else created.
func (s *Server) claimLease(ctx context.Context, pod *metav1.PartialObjectMetadata) (*coordinationv1.Lease, error) {
	key := types.NamespacedName{Namespace: s.opts.LeaseNamespace, Name: guards.LeaseName(pod.UID)}
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
