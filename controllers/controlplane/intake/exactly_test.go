package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Exactly once across the failures of a replica: a write that lands but answers an error,
// a claim that lands but answers an error, a replica killed between its claim and its
// status write, and one killed after its status write, before it cleaned its Lease.

const leaseNS = "guardrail-system"

// flaky is a replica's client: it writes through to the shared apiserver (fake), and when
// asked, lets the next status write or Lease patch land and then answers an error, as a
// timeout or a connection cut by SIGTERM does.
type flaky struct {
	client.Client
	failStatusAfterWrite, failLeaseAfterWrite atomic.Int32
}

var errCut = errors.New("http2: client connection lost")

func (f *flaky) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := f.Client.Patch(ctx, obj, patch, opts...)
	if _, ok := obj.(*coordinationv1.Lease); ok && err == nil && strings.HasPrefix(obj.GetName(), "guard-") &&
		f.failLeaseAfterWrite.Add(-1) >= 0 {
		return errCut
	}
	return err
}

func (f *flaky) Status() client.SubResourceWriter { return flakyStatus{f.Client.Status(), f} }

type flakyStatus struct {
	client.SubResourceWriter
	f *flaky
}

func (s flakyStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	if err == nil && s.f.failStatusAfterWrite.Add(-1) >= 0 {
		return errCut
	}
	return err
}

// exactWorld is one apiserver (a fake client), a guard's pod, its Lease and a Report-mode
// Guardrail, and the replicas started on it.
type exactWorld struct {
	api client.Client
	pod *metav1.PartialObjectMetadata
}

func newExactWorld(t *testing.T) *exactWorld {
	t.Helper()
	scheme := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(scheme))
	must(t, v1alpha1.AddToScheme(scheme))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: "guard-uid-1",
		Labels:      map[string]string{guardv1.LabelLeasePodNamespace: "shop"},
		Annotations: map[string]string{guardv1.AnnotationLeasePod: "web-1", guardv1.AnnotationLeasePodUID: "uid-1"}}}
	g := &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	api := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.Guardrail{}).
		WithObjects(lease, g, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}).Build()
	return &exactWorld{api: api, pod: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "uid-1"}}}
}

type replica struct {
	in *Intake
	c  *flaky
	h  http.HandlerFunc
}

func (w *exactWorld) replica(name string) *replica {
	c := &flaky{Client: w.api}
	in := New(Options{Cache: c, API: c, Writer: c, LeaseNamespace: leaseNS, Identity: name, Interval: time.Second,
		Lease: func(ctx context.Context, _ *metav1.PartialObjectMetadata, _ bool) (*coordinationv1.Lease, error) {
			l := &coordinationv1.Lease{}
			return l, c.Get(ctx, types.NamespacedName{Namespace: leaseNS, Name: "guard-uid-1"}, l)
		}})
	return &replica{in: in, c: c, h: in.Handler(func(*http.Request) (*metav1.PartialObjectMetadata, error) { return w.pod, nil })}
}

// post sends the guard's cumulative batch (wouldBlock requests since it started) to r.
func (r *replica) post(t *testing.T, wouldBlock int64) int {
	t.Helper()
	body, err := json.Marshal(guardv1.DecisionsRequest{Incarnation: "inc-1", Started: time.Now().Add(-time.Minute).UnixMilli(),
		Guardrails: []guardv1.GuardrailDecisions{{Guardrail: "shop/web", Last: time.Now().UnixMilli(),
			Counts: []guardv1.DecisionCount{{Generation: 1, Phase: "Input", Outcome: "wouldBlock", Category: "pii", Requests: wouldBlock}}}}})
	must(t, err)
	rec := httptest.NewRecorder()
	r.h(rec, httptest.NewRequest(http.MethodPost, guardv1.DecisionsPath, bytes.NewReader(body)))
	return rec.Code
}

func (w *exactWorld) wouldBlock(t *testing.T) int64 {
	t.Helper()
	g := &v1alpha1.Guardrail{}
	must(t, w.api.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, g))
	if g.Status.Decisions == nil {
		return 0
	}
	return g.Status.Decisions.WouldBlock
}

func (w *exactWorld) owed(t *testing.T) []owedEntry {
	t.Helper()
	l := &coordinationv1.Lease{}
	must(t, w.api.Get(context.Background(), types.NamespacedName{Namespace: leaseNS, Name: "guard-uid-1"}, l))
	es, err := parseOwed(l.Annotations[guardv1.AnnotationDecisionsOwed])
	must(t, err)
	return es
}

// expire makes r's heartbeat Lease read as expired, as it does once a killed replica has
// not renewed it for its duration.
func (w *exactWorld) expire(t *testing.T, r *replica) {
	t.Helper()
	l := &coordinationv1.Lease{}
	must(t, w.api.Get(context.Background(), types.NamespacedName{Namespace: leaseNS, Name: heartbeatName(r.in.writer)}, l))
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}
	must(t, w.api.Update(context.Background(), l))
}

// A status write that reached the apiserver but answered an error (the replica's
// connection cut by its SIGTERM, a timeout) is retried under the same mark and found:
// counted once. Before, the retry added the counts a second time.
func TestAStatusWriteOfUnknownOutcomeCountsOnce(t *testing.T) {
	w := newExactWorld(t)
	a := w.replica("a")
	ctx := context.Background()
	if code := a.post(t, 5); code != http.StatusNoContent {
		t.Fatalf("batch answered %d", code)
	}
	a.c.failStatusAfterWrite.Store(1)
	a.in.flush(ctx) // lands, answers an error: kept for the next flush
	a.in.flush(ctx)
	a.in.Shutdown()
	if got := w.wouldBlock(t); got != 5 {
		t.Errorf("wouldBlock %d after a write that landed and answered an error, retried: want 5", got)
	}
	if es := w.owed(t); len(es) != 0 {
		// The claim's own later write, or a sweep, drops what landed; a stopped replica's
		// entries are dropped by the others (TestAStoppedReplicasWrittenCountsAreDroppedNotRecounted).
		t.Logf("owed after the writes: %+v", es)
	}
}

// A claim that reached the guard's Lease but answered an error is found on the Lease and
// counted; the guard's resend of the same batch then adds nothing.
func TestAClaimOfUnknownOutcomeCountsOnce(t *testing.T) {
	w := newExactWorld(t)
	a := w.replica("a")
	a.c.failLeaseAfterWrite.Store(1)
	if code := a.post(t, 7); code != http.StatusNoContent {
		t.Fatalf("a claim that landed and was found answered %d, want 204", code)
	}
	if code := a.post(t, 7); code != http.StatusNoContent { // the guard resends
		t.Fatalf("resend answered %d", code)
	}
	a.in.flush(context.Background())
	if got := w.wouldBlock(t); got != 7 {
		t.Errorf("wouldBlock %d, want 7", got)
	}
}

// The same batch through two replicas, the first killed (SIGKILL: no flush, no
// Shutdown) after its claim: the second finds nothing left to claim, and once the first's
// heartbeat expired takes its owed counts over and writes them. Exactly once; before,
// the killed replica's counts were lost.
func TestAKilledReplicasClaimsAreTakenOver(t *testing.T) {
	w := newExactWorld(t)
	a, b := w.replica("a"), w.replica("b")
	ctx := context.Background()
	if code := a.post(t, 4); code != http.StatusNoContent {
		t.Fatalf("batch answered %d", code)
	}
	if code := b.post(t, 4); code != http.StatusNoContent { // the guard resent it to b
		t.Fatalf("resend answered %d", code)
	}
	// a is killed here. b keeps flushing and sweeping; while a's heartbeat lives, b takes
	// nothing of it.
	b.in.flush(ctx)
	b.in.sweep(ctx)
	b.in.flush(ctx)
	if got := w.wouldBlock(t); got != 0 {
		t.Fatalf("wouldBlock %d while the claiming replica's heartbeat lives: want 0 (it may still write them)", got)
	}
	w.expire(t, a)
	b.in.sweep(ctx)
	b.in.flush(ctx)
	if got := w.wouldBlock(t); got != 4 {
		t.Errorf("wouldBlock %d after the killed replica's counts were taken over: want 4", got)
	}
	// More traffic, and sweeps again: nothing counted twice.
	if code := b.post(t, 6); code != http.StatusNoContent {
		t.Fatalf("batch answered %d", code)
	}
	for range 3 {
		b.in.flush(ctx)
		b.in.sweep(ctx)
	}
	if got := w.wouldBlock(t); got != 6 {
		t.Errorf("wouldBlock %d, want 6", got)
	}
	if es := w.owed(t); len(es) != 0 {
		t.Errorf("owed entries left after everything was written: %+v", es)
	}
}

// A replica killed after its status write and before anything dropped its entry from
// the Lease: whoever takes the entry over reads the object's mark and does not count it
// again.
func TestAStoppedReplicasWrittenCountsAreDroppedNotRecounted(t *testing.T) {
	w := newExactWorld(t)
	a, b := w.replica("a"), w.replica("b")
	ctx := context.Background()
	if code := a.post(t, 3); code != http.StatusNoContent {
		t.Fatalf("batch answered %d", code)
	}
	a.in.flush(ctx) // written; a is killed before its next claim or sweep
	if es := w.owed(t); len(es) != 1 {
		t.Fatalf("owed %+v: want a's entry still on the Lease", es)
	}
	w.expire(t, a)
	b.in.sweep(ctx)
	b.in.flush(ctx)
	if got := w.wouldBlock(t); got != 3 {
		t.Errorf("wouldBlock %d, want 3", got)
	}
	if es := w.owed(t); len(es) != 0 {
		t.Errorf("owed entries left: %+v", es)
	}
}

// A replica whose heartbeat could not be renewed for its duration may have been taken
// over: it writes nothing more of what it buffered.
func TestAFencedReplicaWritesNothingItBuffered(t *testing.T) {
	w := newExactWorld(t)
	a := w.replica("a")
	ctx := context.Background()
	if code := a.post(t, 2); code != http.StatusNoContent {
		t.Fatalf("batch answered %d", code)
	}
	a.in.mu.Lock()
	a.in.renewed = time.Now().Add(-time.Minute)
	a.in.mu.Unlock()
	a.in.flush(ctx)
	if got := w.wouldBlock(t); got != 0 {
		t.Errorf("wouldBlock %d written by a replica whose heartbeat is about to expire", got)
	}
}

// A tenant with namespace admin copies a killed replica's heartbeat Lease, renewed, into
// its own namespace to keep the replica looking alive and its claimed counts unwritten:
// only heartbeats in the operator's namespace count, so they are taken over anyway.
func TestAHeartbeatOutsideTheOperatorsNamespaceKeepsNoReplicaAlive(t *testing.T) {
	w := newExactWorld(t)
	a, b := w.replica("a"), w.replica("b")
	ctx := context.Background()
	if code := a.post(t, 5); code != http.StatusNoContent {
		t.Fatalf("batch answered %d", code)
	}
	w.expire(t, a)
	holder, secs := a.in.writer, int32(3600)
	forged := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: heartbeatName(a.in.writer),
		Labels: map[string]string{LabelWriter: "true"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	must(t, w.api.Create(ctx, forged))
	must(t, b.in.heartbeat(ctx)) // b runs, as the surviving replica does
	b.in.sweep(ctx)
	b.in.flush(ctx)
	if got := w.wouldBlock(t); got != 5 {
		t.Errorf("wouldBlock %d with a forged heartbeat in a tenant namespace: want 5 (taken over)", got)
	}
}
