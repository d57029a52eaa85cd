package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// maxClaimAttempts bounds the re-reads after a conflicting write of a guard's claim.
const maxClaimAttempts = 8

// decisions is the intake of a guard's batch: authenticate and bind to the pod like a
// subscription (the pod must carry the guard), refuse counts for Guardrails of another
// namespace, claim on the guard's Lease what was not counted yet, and buffer it for the
// next status write.
func (s *Server) decisions(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	ctx := r.Context()
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	id, err := s.auth.authenticate(ctx, strings.TrimSpace(token))
	if err != nil {
		s.refuseBatch(w, err)
		return
	}
	pod, err := s.pod(ctx, id)
	if err != nil {
		s.refuseBatch(w, err)
		return
	}
	var req cp.DecisionsRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, cp.MaxDecisionsBytes+1))
	switch {
	case err != nil:
		return // the guard went away; it resends
	case len(body) > cp.MaxDecisionsBytes:
		s.refuseBatch(w, &refusal{413, "too_large", "the batch is larger than " + fmt.Sprint(cp.MaxDecisionsBytes) + " bytes"})
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.refuseBatch(w, &refusal{400, "bad_request", "the body is not a decisions batch"})
		return
	}
	if err := validateBatch(&req, id.namespace); err != nil {
		s.refuseBatch(w, err)
		return
	}
	bodyRead(w, handlerSlack)
	lease, err := s.claimLease(ctx, pod)
	if err != nil {
		s.refuseBatch(w, fmt.Errorf("reading the guard's Lease: %w", err))
		return
	}
	for attempt := 1; ; attempt++ {
		prev, perr := parseClaim(lease.Annotations[cp.AnnotationDecisions])
		if perr != nil {
			// Not ours (the Lease was edited by hand): counting starts again from this batch.
			s.log.Info("Ignoring an unreadable decisions claim on a guard's Lease", "pod", pod.Namespace+"/"+pod.Name)
		}
		deltas, next, err := claim(prev, &req, time.Now())
		if errors.Is(err, errStaleIncarnation) {
			s.refuseBatch(w, &refusal{409, "stale_incarnation", err.Error()})
			return
		}
		if errors.Is(err, errImplausible) {
			s.refuseBatch(w, &refusal{422, "implausible", err.Error()})
			return
		}
		if deltas.empty() {
			batches.WithLabelValues("unchanged").Inc()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		err = s.writeClaim(ctx, lease, next)
		if (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) && attempt < maxClaimAttempts {
			// Another replica (or an ack) wrote the Lease since it was read, or the
			// collector deleted it: read it again and claim only what is left.
			batches.WithLabelValues("conflict").Inc()
			if lease, err = s.freshLease(ctx, pod); err != nil {
				s.refuseBatch(w, fmt.Errorf("reading the guard's Lease: %w", err))
				return
			}
			continue
		}
		if err != nil {
			s.refuseBatch(w, fmt.Errorf("recording counted decisions on the guard's Lease: %w", err))
			return
		}
		s.intake.add(pod.Namespace, pod.Name, deltas, req.Samples)
		batches.WithLabelValues("counted").Inc()
		w.WriteHeader(http.StatusNoContent)
		return
	}
}

// freshLease reads the guard's Lease from the apiserver, creating it if it is gone.
func (s *Server) freshLease(ctx context.Context, pod *metav1.PartialObjectMetadata) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	err := s.api.Get(ctx, types.NamespacedName{Namespace: s.opts.LeaseNamespace, Name: LeaseName(pod.UID)}, lease)
	if apierrors.IsNotFound(err) {
		return s.claimLease(ctx, pod)
	}
	return lease, err
}

// writeClaim records next on the guard's Lease, on the condition that the Lease is still
// at the resourceVersion it was read at.
func (s *Server) writeClaim(ctx context.Context, lease *coordinationv1.Lease, next claimed) error {
	raw, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if len(raw) > maxClaimBytes {
		return &refusal{413, "too_large", "the batch's counts do not fit on the guard's Lease"}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": lease.ResourceVersion,
		"annotations":     map[string]string{cp.AnnotationDecisions: string(raw)},
	}})
	if err != nil {
		return err
	}
	target := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: lease.Namespace, Name: lease.Name}}
	return s.writer.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
}

func (s *Server) refuseBatch(w http.ResponseWriter, err error) {
	if r, ok := asRefusal(err); ok {
		batches.WithLabelValues("refused").Inc()
		batchesRefused.WithLabelValues(r.reason).Inc()
		http.Error(w, r.msg, r.status)
		return
	}
	batches.WithLabelValues("error").Inc()
	s.log.Error(err, "Taking a decisions batch")
	http.Error(w, "the control plane cannot take decisions now; retry", http.StatusServiceUnavailable)
}

// Metrics of the decisions intake; label sets are bounded by the Guardrails that exist
// (a deleted Guardrail's series go) and fixed results and reasons.
var (
	decisionsCounted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_decisions_total",
		Help: "Requests counted into Guardrail status by this replica, by guardrail (namespace/name) and outcome.",
	}, []string{"guardrail", "outcome"})
	batches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_controlplane_decision_batches_total",
		Help: "Decision batches from guards, by result (counted, unchanged: nothing new, conflict: claimed by " +
			"another writer first and re-read, refused, error).",
	}, []string{"result"})
	batchesRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_controlplane_decision_batches_refused_total",
		Help: "Decision batches refused, by reason (other_namespace, stale_incarnation, bad_request, too_large, " +
			"and the subscription's authentication reasons, not_a_guard included).",
	}, []string{"reason"})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_decisions_status_writes_total",
		Help: "Writes of decision counters into Guardrail status and of call figures into Classifier status, by result (written, conflict: retried after " +
			"another writer, error: kept for the next interval, gone: the Guardrail was deleted).",
	}, []string{"result"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(decisionsCounted, batches, batchesRefused, statusWrites)
}
