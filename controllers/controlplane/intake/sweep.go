package intake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Replicas that die. Each replica holds a heartbeat Lease in the operator's namespace
// ("guardrail-intake-…", label LabelWriter, holderIdentity its writer id; read from the
// apiserver, not cached), renewed every
// third of its duration (three intervals, between 5s and 30s), created before its first
// claim and deleted when it stops normally. A writer whose heartbeat is gone or expired is
// dead: every interval, each replica looks at the guards' Leases that carry owed entries
// (sweep) and takes over the dead writers' parts that did not reach status (their objects'
// marks say which did) into its own entry of its current epoch, by a write conditioned on
// the Lease's resourceVersion, then buffers them: they are written at its next flush. It
// also drops its own parts that reached status from Leases it no longer claims on (a
// claim drops them otherwise), so that the collector can delete a Lease whose pod is gone.
//
// A replica whose heartbeat could not be renewed for its duration may have been taken
// over: it stops writing status once its heartbeat is two thirds of the way to expiring
// (mayWrite), and when it expires forgets what it buffered and starts again under a new
// writer id (fence). This relies on the replicas' clocks agreeing within a fraction of the
// duration, as leader election does.

// LabelWriter marks the replicas' heartbeat Leases.
const LabelWriter = "guardrail.dev/intake-writer"

// newWriterID is a writer id for a process of the replica identity: the identity
// (letters, digits, '-' and '.') and a random suffix.
func newWriterID(identity string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(identity) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			b.WriteRune(r)
		}
		if b.Len() >= 63 {
			break
		}
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	if b.Len() == 0 {
		b.WriteString("replica")
	}
	return b.String() + "." + hex.EncodeToString(suffix[:])
}

// heartbeatName is the name of writer's heartbeat Lease.
func heartbeatName(writer string) string {
	sum := sha256.Sum256([]byte(writer))
	return "guardrail-intake-" + hex.EncodeToString(sum[:8])
}

// ensureHeartbeat makes sure this replica's heartbeat exists before it claims: a claim
// recorded under a writer without one would be taken over at once.
func (in *Intake) ensureHeartbeat(ctx context.Context) error {
	in.mu.Lock()
	ok := in.beat
	in.mu.Unlock()
	if ok {
		return nil
	}
	return in.heartbeat(ctx)
}

// heartbeat renews (or creates) this replica's heartbeat Lease, and fences the replica
// when it could not for the Lease's whole duration.
func (in *Intake) heartbeat(ctx context.Context) error {
	in.mu.Lock()
	writer := in.writer
	in.mu.Unlock()
	now := time.Now()
	secs := int32(in.window / time.Second)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: in.opts.LeaseNamespace, Name: heartbeatName(writer),
		Labels: map[string]string{LabelWriter: "true"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &writer, LeaseDurationSeconds: &secs, RenewTime: &metav1.MicroTime{Time: now}}}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": lease.Labels}, "spec": lease.Spec})
	if err == nil {
		target := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: lease.Namespace, Name: lease.Name}}
		err = in.opts.Writer.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
		if apierrors.IsNotFound(err) {
			err = in.opts.Writer.Create(ctx, lease)
		}
	}
	in.mu.Lock()
	if err == nil && in.writer == writer {
		in.renewed, in.beat = now, true
	}
	expired := in.beat && time.Since(in.renewed) > in.window
	in.mu.Unlock()
	if err != nil {
		in.opts.Log.Error(err, "Renewing this replica's decisions heartbeat")
	}
	if expired {
		in.fence()
	}
	return err
}

// fence forgets what this replica buffered, which other replicas may have taken over
// since its heartbeat expired, and starts again under a new writer id.
func (in *Intake) fence() {
	in.cut.Lock()
	defer in.cut.Unlock()
	in.mu.Lock()
	defer in.mu.Unlock()
	in.opts.Log.Error(nil, "This replica's decisions heartbeat expired: what it claimed and did not write is left to the other replicas", "writer", in.writer)
	in.cur, in.unwritten = newBuffers(), nil
	in.writer, in.beat = newWriterID(in.opts.Identity), false
	fenced.Inc()
}

// endHeartbeat deletes this replica's heartbeat: what it could not write is taken over at
// once.
func (in *Intake) endHeartbeat(ctx context.Context) {
	in.mu.Lock()
	writer := in.writer
	in.beat = false
	in.mu.Unlock()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: in.opts.LeaseNamespace, Name: heartbeatName(writer)}}
	if err := client.IgnoreNotFound(in.opts.Writer.Delete(ctx, lease)); err != nil {
		in.opts.Log.Error(err, "Deleting this replica's decisions heartbeat; it expires by itself")
	}
}

// mayWrite reports whether this replica may write b now: b is of its current writer id and
// its heartbeat is far enough from expiring that no other replica takes b over meanwhile.
func (in *Intake) mayWrite(b *epochBatch) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return b.writer == in.writer && in.beat && time.Since(in.renewed) < in.window*2/3
}

// sweep takes over the parts of owed entries of dead writers that did not reach status,
// and drops this replica's parts that did from Leases it no longer claims on.
func (in *Intake) sweep(ctx context.Context) {
	var list coordinationv1.LeaseList
	if err := in.opts.Cache.List(ctx, &list, client.InNamespace(in.opts.LeaseNamespace)); err != nil {
		in.opts.Log.Error(err, "Listing Leases for counts left by stopped replicas")
		return
	}
	// The heartbeats are read after the guards' Leases, from the apiserver (the cache
	// holds guards' Leases only): a claim seen in the list was made after its writer's
	// heartbeat was created, so that heartbeat is in this read.
	var beats coordinationv1.LeaseList
	if err := in.opts.API.List(ctx, &beats, client.InNamespace(in.opts.LeaseNamespace), client.HasLabels{LabelWriter}); err != nil {
		in.opts.Log.Error(err, "Listing the replicas' decisions heartbeats")
		return
	}
	now := time.Now()
	live := map[string]bool{}
	heartbeats := map[string]*coordinationv1.Lease{}
	for i := range beats.Items {
		l := &beats.Items[i]
		if l.Spec.HolderIdentity == nil {
			continue
		}
		heartbeats[*l.Spec.HolderIdentity] = l
		if alive(l, now) {
			live[*l.Spec.HolderIdentity] = true
		}
	}
	in.mu.Lock()
	me, epoch := in.writer, in.epoch
	live[me] = true
	in.mu.Unlock()
	seen := map[string]bool{}
	reads := map[itemID]objectMarks{}
	for i := range list.Items {
		l := &list.Items[i]
		raw := l.Annotations[guardv1.AnnotationDecisionsOwed]
		if raw == "" {
			continue
		}
		owed, err := parseOwed(raw)
		if err != nil {
			continue
		}
		settle := false
		for _, e := range owed {
			seen[e.Writer] = true
			// A replica drops its own landed parts when it claims; here, only from Leases
			// it has not claimed on since the last cut.
			if !live[e.Writer] || e.Writer == me && e.Epoch < epoch-1 {
				settle = true
			}
		}
		if settle {
			in.settle(ctx, client.ObjectKeyFromObject(l), live, reads)
		}
	}
	for w, hb := range heartbeats {
		if !live[w] && !seen[w] {
			// Nothing of the dead writer is left anywhere: its heartbeat goes.
			err := in.opts.Writer.Delete(ctx, hb, client.Preconditions{ResourceVersion: &hb.ResourceVersion})
			if err = client.IgnoreNotFound(err); err != nil && !apierrors.IsConflict(err) {
				in.opts.Log.Error(err, "Deleting the heartbeat of a stopped replica")
			}
		}
	}
}

// alive reports whether a heartbeat Lease has not expired at now.
func alive(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// objectMarks is an object's write marks as read by a sweep; gone when it does not exist.
type objectMarks struct {
	marks []string
	gone  bool
}

// settle rewrites the owed entries of the guard's Lease at key: this replica's parts that
// reached status go; dead writers' parts that reached status go, the others move into this
// replica's entry of its current epoch and are buffered; everything else stays.
func (in *Intake) settle(ctx context.Context, key types.NamespacedName, live map[string]bool, reads map[itemID]objectMarks) {
	in.cut.RLock()
	defer in.cut.RUnlock()
	lease := &coordinationv1.Lease{}
	if err := in.opts.API.Get(ctx, key, lease); err != nil {
		return
	}
	owed, err := parseOwed(lease.Annotations[guardv1.AnnotationDecisionsOwed])
	if err != nil || len(owed) == 0 {
		return
	}
	ns := lease.Labels[guardv1.LabelLeasePodNamespace]
	pod := lease.Annotations[guardv1.AnnotationLeasePod]
	in.mu.Lock()
	me, epoch := in.writer, in.epoch
	in.mu.Unlock()
	var out []owedEntry
	adopted := batchDelta{}
	changed := false
	for _, e := range owed {
		switch {
		case e.Writer == me:
			before := e.size()
			in.mu.Lock()
			e.keep(func(kind itemKind, name string) bool {
				return !in.landed(e.Writer, e.Epoch, kind, itemKey(kind, ns, name))
			})
			in.mu.Unlock()
			changed = changed || e.size() != before
		case !live[e.Writer]:
			take := owedEntry{Writer: e.Writer, Epoch: e.Epoch, Claims: e.Claims, Guardrails: slices.Clone(e.Guardrails),
				Classifiers: slices.Clone(e.Classifiers), Providers: slices.Clone(e.Providers)}
			ok := true
			e.keep(func(kind itemKind, name string) bool {
				m, err := in.marksOf(ctx, kind, itemKey(kind, ns, name), reads)
				if err != nil {
					ok = false
					return true
				}
				return !m.gone && !landedIn(m.marks, e.Writer, e.Epoch)
			})
			if !ok {
				out = append(out, take) // an object could not be read: next sweep
				continue
			}
			adopted.merge(e.delta())
			changed = true
			continue // its parts move into this replica's entry
		}
		if !e.empty() {
			out = append(out, e)
		}
	}
	if !changed {
		return
	}
	if !adopted.empty() {
		found := false
		for i := range out {
			if out[i].Writer == me && out[i].Epoch == epoch {
				out[i].add(adopted)
				found = true
			}
		}
		if !found {
			e := owedEntry{Writer: me, Epoch: epoch}
			e.set(adopted)
			out = append(out, e)
		}
	}
	raw, err := encodeOwed(out)
	if err != nil {
		return
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": lease.ResourceVersion,
		"annotations":     map[string]any{guardv1.AnnotationDecisionsOwed: nullIfEmpty(raw)},
	}})
	if err != nil {
		return
	}
	if err := in.opts.Writer.Patch(ctx, lease, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			in.opts.Log.Error(err, "Settling the counts owed on a guard's Lease; retried next interval", "lease", key.Name)
		}
		return // nothing taken over; the next sweep reads the Lease again
	}
	if !adopted.empty() {
		in.mu.Lock()
		in.add(ns, pod, adopted, nil)
		in.mu.Unlock()
		takenOver.Add(float64(len(adopted.guardrails) + len(adopted.classifiers) + len(adopted.providers)))
	}
}

// size is how many parts the entry holds.
func (e *owedEntry) size() int { return len(e.Guardrails) + len(e.Classifiers) + len(e.Providers) }

// marksOf reads the write marks of the object kind/key from the apiserver, once per sweep.
func (in *Intake) marksOf(ctx context.Context, kind itemKind, key types.NamespacedName, reads map[itemID]objectMarks) (objectMarks, error) {
	id := itemID{kind, key}
	if m, ok := reads[id]; ok {
		return m, nil
	}
	var obj client.Object
	var m marks
	switch {
	case kind == kindDecisions && key.Namespace == "":
		obj, m = &v1alpha1.ClusterGuardrail{}, decisionMarks
	case kind == kindDecisions:
		obj, m = &v1alpha1.Guardrail{}, decisionMarks
	case kind == kindCalls && key.Namespace == "":
		obj, m = &v1alpha1.ClusterClassifier{}, callMarks
	case kind == kindCalls:
		obj, m = &v1alpha1.Classifier{}, callMarks
	default:
		obj, m = &v1alpha1.ModelProvider{}, usageMarks
	}
	err := in.opts.API.Get(ctx, key, obj)
	var out objectMarks
	switch {
	case apierrors.IsNotFound(err):
		out.gone = true
	case err != nil:
		return out, err
	default:
		out.marks = m.get(obj)
	}
	reads[id] = out
	return out, nil
}
