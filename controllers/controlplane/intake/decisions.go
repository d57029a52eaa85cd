package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// maxClaimAttempts bounds the re-reads after a conflicting write of a guard's claim.
const maxClaimAttempts = 8

// Authorize binds a batch to the pod of the guard that sent it: it authenticates the
// request as a subscription is authenticated and returns the pod, whose spec must carry
// the guard. An error that is a Refusal answers with its status; any other is a 503.
type Authorize func(*http.Request) (*metav1.PartialObjectMetadata, error)

// A Refusal is an error that refuses a batch: the HTTP status, and the reason counted in
// guardrail_controlplane_decision_batches_refused_total.
type Refusal interface {
	error
	HTTPStatus() int
	MetricReason() string
}

// refusal is the intake's own Refusal.
type refusal struct {
	status int
	reason string
	msg    string
}

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) HTTPStatus() int      { return r.status }
func (r *refusal) MetricReason() string { return r.reason }

// Handler returns the handler of POST /v1/decisions (guardv1.DecisionsPath): authorize the
// request, refuse counts for Guardrails of another namespace, claim on the guard's Lease
// what was not counted yet, and buffer it for the next status write.
func (in *Intake) Handler(authorize Authorize) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in.inflight.Add(1)
		defer in.inflight.Done()
		pod, err := authorize(r)
		if err != nil {
			in.refuse(w, err)
			return
		}
		in.take(w, r, pod)
	}
}

// take is the intake of one authorized batch.
func (in *Intake) take(w http.ResponseWriter, r *http.Request, pod *metav1.PartialObjectMetadata) {
	ctx := r.Context()
	var req guardv1.DecisionsRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, guardv1.MaxDecisionsBytes+1))
	switch {
	case err != nil:
		return // the guard went away; it resends
	case len(body) > guardv1.MaxDecisionsBytes:
		in.refuse(w, &refusal{413, "too_large", "the batch is larger than " + fmt.Sprint(guardv1.MaxDecisionsBytes) + " bytes"})
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		in.refuse(w, &refusal{400, "bad_request", "the body is not a decisions batch"})
		return
	}
	if err := validateBatch(&req, pod.Namespace); err != nil {
		in.refuse(w, err)
		return
	}
	dropped, err := in.keepSelectedBaselines(ctx, &req, pod.Namespace)
	if err != nil {
		in.refuse(w, fmt.Errorf("reading the cluster baselines: %w", err))
		return
	}
	if dropped > 0 {
		baselinesDropped.Add(float64(dropped))
	}
	if dropped, err = in.keepUsedProviders(ctx, &req, pod); err != nil {
		in.refuse(w, fmt.Errorf("reading the pod's providers: %w", err))
		return
	}
	if dropped > 0 {
		usageDropped.Add(float64(dropped))
	}
	// The body is read: the handler may take its slack to claim and answer (a deadline
	// passing on HTTP/1.1 would cancel ctx).
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(in.opts.HandlerSlack))
	if err := in.ensureHeartbeat(ctx); err != nil {
		in.refuse(w, fmt.Errorf("starting this replica's heartbeat: %w", err))
		return
	}
	status, err := in.claimBatch(ctx, pod, &req)
	if err != nil {
		in.refuse(w, err)
		return
	}
	w.WriteHeader(status)
}

// claimBatch claims on the guard's Lease what req adds to what was counted, records it
// there as owed by this replica's current epoch, and buffers it; it returns the status to
// answer, or the error to refuse the batch with.
func (in *Intake) claimBatch(ctx context.Context, pod *metav1.PartialObjectMetadata, req *guardv1.DecisionsRequest) (int, error) {
	// The epoch cannot be cut while the claim is written: the flush of the epoch recorded
	// on the Lease is the one that writes what the claim buffers.
	in.cut.RLock()
	defer in.cut.RUnlock()
	in.mu.Lock()
	writer, epoch := in.writer, in.epoch
	in.mu.Unlock()
	lease, err := in.opts.Lease(ctx, pod, false)
	if err != nil {
		return 0, fmt.Errorf("reading the guard's Lease: %w", err)
	}
	claimID := newClaimID()
	for attempt := 1; ; attempt++ {
		prev, perr := parseClaim(lease.Annotations[guardv1.AnnotationDecisions])
		if perr != nil {
			// Not ours (the Lease was edited by hand): counting starts again from this batch.
			in.opts.Log.Info("Ignoring an unreadable decisions claim on a guard's Lease", "pod", pod.Namespace+"/"+pod.Name)
		}
		deltas, next, err := claim(prev, req, time.Now())
		if errors.Is(err, errStaleIncarnation) {
			return 0, &refusal{409, "stale_incarnation", err.Error()}
		}
		if errors.Is(err, errImplausible) {
			return 0, &refusal{422, "implausible", err.Error()}
		}
		if deltas.empty() {
			batches.WithLabelValues("unchanged").Inc()
			return http.StatusNoContent, nil
		}
		owed, oerr := parseOwed(lease.Annotations[guardv1.AnnotationDecisionsOwed])
		if oerr != nil {
			// Written only by the operator's replicas; an unreadable value is not theirs.
			in.opts.Log.Info("Ignoring unreadable owed counts on a guard's Lease", "pod", pod.Namespace+"/"+pod.Name)
			owed = nil
		}
		owed = in.owe(owed, pod.Namespace, writer, epoch, claimID, deltas)
		err = in.writeClaim(ctx, lease, next, owed)
		if (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) && attempt < maxClaimAttempts {
			// Another replica (or an ack) wrote the Lease since it was read, or the
			// collector deleted it: read it again and claim only what is left.
			batches.WithLabelValues("conflict").Inc()
			if lease, err = in.opts.Lease(ctx, pod, true); err != nil {
				return 0, fmt.Errorf("reading the guard's Lease: %w", err)
			}
			continue
		}
		if _, ok := asRefusal(err); err != nil && !ok && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			// The write's outcome is unknown (a timeout, a cut connection): it may have
			// reached the Lease. Find out; what cannot be found out now is settled by the
			// epoch's flush (doubt.go).
			switch in.confirmClaim(ctx, lease, writer, epoch, claimID) {
			case claimLanded:
				err = nil
			case claimUnknown:
				in.mu.Lock()
				in.cur.doubts = append(in.cur.doubts, &doubt{lease: client.ObjectKeyFromObject(lease), claimID: claimID,
					ns: pod.Namespace, pod: pod.Name, deltas: deltas, samples: req.Samples})
				in.mu.Unlock()
			}
		}
		if err != nil {
			return 0, fmt.Errorf("recording counted decisions on the guard's Lease: %w", err)
		}
		in.mu.Lock()
		in.add(pod.Namespace, pod.Name, deltas, req.Samples)
		in.mu.Unlock()
		in.auditBatch(pod, req.Incarnation, deltas)
		batches.WithLabelValues("counted").Inc()
		return http.StatusNoContent, nil
	}
}

// owe returns the owed entries of a guard's Lease (of a pod of namespace ns) with deltas
// added to writer's entry for epoch, under claimID, and without this replica's parts that
// have reached status.
func (in *Intake) owe(owed []owedEntry, ns, writer string, epoch int64, claimID string, deltas batchDelta) []owedEntry {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := owed[:0:0]
	found := false
	for _, e := range owed {
		if e.Writer == writer && e.Epoch == epoch {
			e.add(deltas)
			e.addClaim(claimID)
			found = true
		} else if e.Writer == in.writer {
			e.keep(func(kind itemKind, name string) bool {
				return !in.landed(e.Writer, e.Epoch, kind, itemKey(kind, ns, name))
			})
		}
		if !e.empty() || e.Writer == writer && e.Epoch == epoch {
			out = append(out, e)
		}
	}
	if !found {
		e := owedEntry{Writer: writer, Epoch: epoch}
		e.set(deltas)
		e.addClaim(claimID)
		out = append(out, e)
	}
	return out
}

// itemKey is the object a part of an owed entry of a guard of namespace ns is written to.
func itemKey(kind itemKind, ns, name string) types.NamespacedName {
	if kind == kindUsage {
		return types.NamespacedName{Name: name}
	}
	return objectKey(ns, name)
}

// nullIfEmpty is an annotation's value in a merge patch: null removes it.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// writeClaim records next, and what is owed to status, on the guard's Lease, on the condition that the Lease is still
// at the resourceVersion it was read at.
func (in *Intake) writeClaim(ctx context.Context, lease *coordinationv1.Lease, next claimed, owed []owedEntry) error {
	raw, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if len(raw) > maxClaimBytes {
		return &refusal{413, "too_large", "the batch's counts do not fit on the guard's Lease"}
	}
	owedRaw, err := encodeOwed(owed)
	if err != nil {
		return err
	}
	if len(owedRaw) > maxOwedBytes {
		return &refusal{503, "owed_full", "the counts not yet in status fill the guard's Lease; retry after the next status write"}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": lease.ResourceVersion,
		"annotations":     map[string]any{guardv1.AnnotationDecisions: string(raw), guardv1.AnnotationDecisionsOwed: nullIfEmpty(owedRaw)},
	}})
	if err != nil {
		return err
	}
	target := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: lease.Namespace, Name: lease.Name}}
	return in.opts.Writer.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
}

func (in *Intake) refuse(w http.ResponseWriter, err error) {
	var r Refusal
	if errors.As(err, &r) {
		batches.WithLabelValues("refused").Inc()
		batchesRefused.WithLabelValues(r.MetricReason()).Inc()
		http.Error(w, r.Error(), r.HTTPStatus())
		return
	}
	batches.WithLabelValues("error").Inc()
	in.opts.Log.Error(err, "Taking a decisions batch")
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
	baselinesDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_decisions_not_selected_total",
		Help: "Entries of decision batches dropped because they name a ClusterGuardrail or ClusterClassifier " +
			"that does not apply to the reporting guard's namespace (or does not exist).",
	})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_decisions_status_writes_total",
		Help: "Writes of decision counters into Guardrail status, of call figures into Classifier status and of usage into ModelProvider status, " +
			"by result (written, conflict: retried after another writer, error: kept for the next interval, gone: the object was deleted).",
	}, []string{"result"})
	usageDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_usage_not_selected_total",
		Help: "Provider usage entries of decision batches dropped because the reporting guard does not use that ModelProvider " +
			"(its pod's verified guard was not injected for it, or its namespaceSelector does not select the pod's namespace, or it does not exist).",
	})
	fenced = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_decisions_fenced_total",
		Help: "Times this replica's decisions heartbeat expired before it could renew it: it dropped what it had " +
			"buffered, which the other replicas take over from the guards' Leases.",
	})
	takenOver = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardrail_controlplane_decisions_taken_over_total",
		Help: "Parts of counts (one object's, from one guard) that a stopped replica claimed and did not write, " +
			"taken over by this replica and written at its next flush.",
	})
	// The provider metrics' series are bounded by the ModelProviders that exist (a deleted
	// one's go) and the namespaces each selects.
	providerRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_provider_requests_total",
		Help: "Requests guards sent to a ModelProvider, counted by this replica, by provider and the guards' namespace.",
	}, []string{"provider", "namespace"})
	providerTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardrail_provider_tokens_total",
		Help: "Tokens of a ModelProvider's usage fields (streamed answers included), counted by this replica, by provider, " +
			"the guards' namespace and direction (input, output).",
	}, []string{"provider", "namespace", "direction"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(decisionsCounted, batches, batchesRefused, baselinesDropped, statusWrites,
		usageDropped, providerRequests, providerTokens, fenced, takenOver)
}

// asRefusal unwraps a *refusal of the intake.
func asRefusal(err error) (*refusal, bool) {
	var r *refusal
	ok := errors.As(err, &r)
	return r, ok
}
