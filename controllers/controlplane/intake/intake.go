package intake

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// Event reasons of decisions on a Guardrail: at most one Event
// per Guardrail, reason and interval, on each replica that counted decisions for it.
const (
	ReasonBlocked          = "Blocked"
	ReasonEvaluationFailed = "EvaluationFailed"
	ReasonWouldBlock       = "WouldBlock"
	ReasonWarned           = "Warned"
	ReasonRedacted         = "Redacted"
)

// eventOf says which outcomes make an Event, of which type, reason and verb.
var eventOf = map[guardv1.Outcome]struct{ kind, reason, verb string }{
	guardv1.OutcomeBlocked:    {corev1.EventTypeWarning, ReasonBlocked, "Blocked"},
	guardv1.OutcomeFailed:     {corev1.EventTypeWarning, ReasonEvaluationFailed, "Evaluation failed for"},
	guardv1.OutcomeWouldBlock: {corev1.EventTypeNormal, ReasonWouldBlock, "Would have blocked"},
	guardv1.OutcomeWarned:     {corev1.EventTypeNormal, ReasonWarned, "Warned on"},
	guardv1.OutcomeRedacted:   {corev1.EventTypeNormal, ReasonRedacted, "Redacted"},
}

// eventOrder is the order Events of one flush are emitted in.
var eventOrder = []guardv1.Outcome{guardv1.OutcomeBlocked, guardv1.OutcomeFailed, guardv1.OutcomeWouldBlock, guardv1.OutcomeWarned, guardv1.OutcomeRedacted}

// maxPodsKept bounds the pod names a pending delta remembers for its Events.
const maxPodsKept = 64

// Options configure the intake.
type Options struct {
	// Interval is how often counted decisions are written into status (at most one write
	// per Guardrail and Classifier per interval); 0 means 10s.
	Interval time.Duration
	// Cache reads Guardrails and Classifiers (the manager's cache); API reads them from
	// the apiserver after a conflicting write.
	Cache, API client.Reader
	// Writer patches status and the guards' Leases (the claims).
	Writer client.Client
	// Recorder emits the aggregated Events on Guardrails.
	Recorder events.EventRecorder
	Log      logr.Logger
	// Lease returns the Lease of the guard of pod, created when it is missing (a guard
	// may report before its first poll reached a replica); fresh reads it from the
	// apiserver rather than the cache.
	Lease func(ctx context.Context, pod *metav1.PartialObjectMetadata, fresh bool) (*coordinationv1.Lease, error)
	// HandlerSlack is how long a batch may take once its body is read; 0 means 30s.
	HandlerSlack time.Duration
	// LeaseNamespace holds the guards' Leases and the replicas' heartbeat Leases (the
	// operator's namespace).
	LeaseNamespace string
	// Identity names this replica in its writer id (its pod's name); "" means the host
	// name.
	Identity string
	// AuditLog, when not nil, receives a JSON line per part of each claimed batch
	// (BatchLine, audit.go): the manager's --decision-audit-log.
	AuditLog io.Writer
}

// Intake takes the guards' decisions batches (Handler), buffers the claimed deltas of
// this replica per Guardrail and Classifier, and writes them into status at most once
// per object per interval, with Events (Run, flush). What it claimed and has not written
// is also recorded on the guard's Lease, so that another replica writes it if this one
// dies (owed.go, sweep.go): each decision is counted exactly once.
type Intake struct {
	opts Options
	// inflight tracks batches being taken, so that the last flush comes after them.
	inflight sync.WaitGroup
	// cut is held shared by a claim across its Lease write and exclusively by a flush
	// cutting an epoch: a claim's deltas are recorded on the Lease under the epoch whose
	// flush writes them.
	cut sync.RWMutex
	// flushing serializes flushes (Run's and Shutdown's).
	flushing sync.Mutex
	// window is how long this replica's heartbeat Lease lasts (sweep.go).
	window time.Duration

	mu sync.Mutex
	// writer is this replica's id in marks and owed entries, new for each process (and
	// after a fence, sweep.go).
	writer string
	// epoch is the flush that will write what is being claimed now.
	epoch int64
	// cur buffers the claims of the current epoch.
	cur buffers
	// unwritten are the epochs cut and not yet all written, oldest first.
	unwritten []*epochBatch
	// renewed is when this replica's heartbeat was last renewed; beat says it exists.
	renewed time.Time
	beat    bool
}

// New returns an intake; Run it, and Shutdown it when the server stops.
func New(opts Options) *Intake {
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.HandlerSlack <= 0 {
		opts.HandlerSlack = 30 * time.Second
	}
	if opts.Identity == "" {
		opts.Identity, _ = os.Hostname()
	}
	in := &Intake{opts: opts, window: min(max(3*opts.Interval, 5*time.Second), 30*time.Second), epoch: 1}
	in.writer = newWriterID(opts.Identity)
	in.cur = newBuffers()
	return in
}

// Shutdown writes what this replica counted and has not written yet, once the batches
// being taken are done (waiting for them at most 5s), and ends its heartbeat: a rolling
// restart loses nothing it had claimed, and what it could not write is taken over by
// another replica at once.
func (in *Intake) Shutdown() {
	done := make(chan struct{})
	go func() { in.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in.flush(ctx)
	in.endHeartbeat(ctx)
}

type pendingDecisions struct {
	*delta
	since   time.Time
	pods    map[string]struct{}
	podsAll int
	samples map[guardv1.Outcome]guardv1.Sample // the first per outcome
	// namespaces breaks a ClusterGuardrail's delta down by the guards' namespace.
	namespaces map[string]*delta
}

// add buffers a claimed delta of pod for Guardrails and Classifiers of namespace ns, and
// for the ModelProviders it used, in the current epoch. The caller holds in.mu.
func (in *Intake) add(ns, pod string, bd batchDelta, samples []guardv1.Sample) {
	in.cur.add(ns, pod, bd, samples)
}

// Run renews this replica's heartbeat, flushes and takes over what dead replicas left
// every interval until ctx ends; Shutdown flushes a last time.
func (in *Intake) Run(ctx context.Context) {
	_ = in.heartbeat(ctx) // logged; a claim retries it
	t := time.NewTicker(in.opts.Interval)
	defer t.Stop()
	hb := time.NewTicker(in.window / 3)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hb.C:
			_ = in.heartbeat(ctx) // logged; fenced when it keeps failing
		case <-t.C:
			in.flush(ctx)
			in.sweep(ctx)
		}
	}
}

// write adds p to the Guardrail's status under the mark of writer's epoch (writeStatus).
// A ClusterGuardrail's is written by writeCluster.
func (in *Intake) write(ctx context.Context, key types.NamespacedName, p *pendingDecisions, writer string, epoch int64) (client.Object, bool, error) {
	return in.writeStatus(ctx, key, func() client.Object { return &v1alpha1.Guardrail{} }, decisionMarks, func(o client.Object) {
		addDecisions(&o.(*v1alpha1.Guardrail).Status, p.delta)
	}, writer, epoch)
}

// marks reads and writes an object's write marks.
type marks struct {
	get func(client.Object) []string
	set func(client.Object, []string)
}

var decisionMarks = marks{
	get: func(o client.Object) []string {
		if st := guardrailStatus(o); st != nil && st.Decisions != nil {
			return st.Decisions.Writes
		}
		return nil
	},
	set: func(o client.Object, m []string) {
		st := guardrailStatus(o)
		if st.Decisions == nil {
			st.Decisions = &v1alpha1.DecisionCounts{}
		}
		st.Decisions.Writes = m
	},
}

func guardrailStatus(o client.Object) *v1alpha1.GuardrailStatus {
	switch g := o.(type) {
	case *v1alpha1.Guardrail:
		return &g.Status
	case *v1alpha1.ClusterGuardrail:
		return &g.Status.GuardrailStatus
	}
	return nil
}

// writeStatus reads the object at key (fresh makes an empty one) and, unless its marks
// say that writer's epoch reached it already (landed), applies add to it, marks it, and
// patches its status with an optimistic lock, reading it again from the apiserver after a
// conflict. A write of unknown outcome retried this way is counted once: had it landed,
// the object read (or, from a stale cache, the conflict's re-read) carries its mark. An
// object that is gone returns nil.
func (in *Intake) writeStatus(ctx context.Context, key types.NamespacedName, fresh func() client.Object, m marks,
	add func(client.Object), writer string, epoch int64) (obj client.Object, landed bool, err error) {
	for attempt := range 8 {
		obj = fresh()
		reader := in.opts.Cache
		if attempt > 0 {
			reader = in.opts.API
		}
		if err = reader.Get(ctx, key, obj); apierrors.IsNotFound(err) {
			return nil, false, nil
		} else if err != nil {
			return nil, false, err
		}
		if landedIn(m.get(obj), writer, epoch) {
			return obj, true, nil
		}
		before := obj.DeepCopyObject().(client.Object)
		add(obj)
		m.set(obj, withMark(m.get(obj), writer, epoch))
		err = in.opts.Writer.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
			return obj, false, nil
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case apierrors.IsConflict(err):
			statusWrites.WithLabelValues("conflict").Inc()
			continue
		}
		return nil, false, err
	}
	return nil, false, err
}

// addDecisions adds d to the cumulative counters of a Guardrail's status.
func addDecisions(st *v1alpha1.GuardrailStatus, d *delta) {
	if st.Decisions == nil {
		st.Decisions = &v1alpha1.DecisionCounts{}
	}
	c := st.Decisions
	for outcome, n := range d.outcomes {
		switch outcome {
		case guardv1.OutcomeAllowed:
			c.Allowed = satAdd(c.Allowed, n)
		case guardv1.OutcomeWarned:
			c.Warned = satAdd(c.Warned, n)
		case guardv1.OutcomeStripped:
			c.Stripped = satAdd(c.Stripped, n)
		case guardv1.OutcomeRedacted:
			c.Redacted = satAdd(c.Redacted, n)
		case guardv1.OutcomeBlocked:
			c.Blocked = satAdd(c.Blocked, n)
		case guardv1.OutcomeFailed:
			c.Failed = satAdd(c.Failed, n)
		case guardv1.OutcomeNotInspected:
			c.NotInspected = satAdd(c.NotInspected, n)
		case guardv1.OutcomeWouldWarn:
			c.WouldWarn = satAdd(c.WouldWarn, n)
		case guardv1.OutcomeWouldStrip:
			c.WouldStrip = satAdd(c.WouldStrip, n)
		case guardv1.OutcomeWouldRedact:
			c.WouldRedact = satAdd(c.WouldRedact, n)
		case guardv1.OutcomeWouldBlock:
			c.WouldBlock = satAdd(c.WouldBlock, n)
		case guardv1.OutcomePseudonymized:
			c.Pseudonymized = satAdd(c.Pseudonymized, n)
		case guardv1.OutcomeWouldPseudonymize:
			c.WouldPseudonymize = satAdd(c.WouldPseudonymize, n)
		}
	}
	names := make([]string, 0, len(d.matches))
	for name := range d.matches {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		i := categoryIndex(c.Categories, name)
		if i < 0 && len(c.Categories) >= 127 {
			// The list holds 128 names: the rest count together.
			name = guardv1.OtherMatches
			i = categoryIndex(c.Categories, name)
		}
		if i < 0 {
			c.Categories = append(c.Categories, v1alpha1.CategoryCount{Name: name})
			i = len(c.Categories) - 1
		}
		c.Categories[i].Matches = satAdd(c.Categories[i].Matches, d.matches[name])
	}
	if !d.last.IsZero() && (st.LastDecisionTime == nil || d.last.After(st.LastDecisionTime.Time)) {
		st.LastDecisionTime = &metav1.Time{Time: d.last.Truncate(time.Second)}
	}
}

func categoryIndex(cs []v1alpha1.CategoryCount, name string) int {
	for i := range cs {
		if cs[i].Name == name {
			return i
		}
	}
	return -1
}

// emit sends one Event per outcome that deserves one.
func (in *Intake) emit(g client.Object, p *pendingDecisions) {
	if in.opts.Recorder == nil {
		return
	}
	for _, outcome := range eventOrder {
		n := p.outcomes[outcome]
		if n == 0 {
			continue
		}
		e := eventOf[outcome]
		in.opts.Recorder.Eventf(g, nil, e.kind, e.reason, "Decide", "%s", eventMessage(e.verb, outcome, n, p, in.opts.Interval))
	}
}

// eventMessage spells an Event, e.g. "Blocked 12 requests in the last 10s (phase Input,
// category pii-email; pods web-7f9c, +2 more; e.g. request r-1: pii-email 0.97 ≥ 0.5)".
// Names, numbers and ids only: never content.
// The window is the interval, or longer when earlier writes failed.
func eventMessage(verb string, outcome guardv1.Outcome, n int64, p *pendingDecisions, interval time.Duration) string {
	var b strings.Builder
	noun := "requests"
	if n == 1 {
		noun = "request"
	}
	window := max(time.Since(p.since), interval).Round(time.Second)
	fmt.Fprintf(&b, "%s %d %s in the last %s (", verb, n, noun, window)
	phases, cats := map[string]int64{}, map[string]int64{}
	for k, v := range p.detail {
		if k.outcome != outcome {
			continue
		}
		if k.phase != "" {
			phases[k.phase] = satAdd(phases[k.phase], v)
		}
		if k.category != "" {
			cats[k.category] = satAdd(cats[k.category], v)
		} else if k.code != "" {
			cats["code "+k.code] = satAdd(cats["code "+k.code], v)
		}
	}
	var parts []string
	if s := top(phases); s != "" {
		parts = append(parts, "phase "+s)
	}
	if s := top(cats); s != "" {
		parts = append(parts, "category "+s)
	}
	b.WriteString(strings.Join(parts, ", "))
	if len(parts) > 0 {
		b.WriteString("; ")
	}
	pods := make([]string, 0, len(p.pods))
	for pod := range p.pods {
		pods = append(pods, pod)
	}
	sort.Strings(pods)
	b.WriteString("pods ")
	b.WriteString(strings.Join(pods[:min(len(pods), 2)], ", "))
	if more := p.podsAll - min(len(pods), 2); more > 0 {
		fmt.Fprintf(&b, ", +%d more", more)
	}
	if s, ok := p.samples[outcome]; ok && s.RequestID != "" && guardv1.ValidID(s.RequestID) {
		fmt.Fprintf(&b, "; e.g. request %s", s.RequestID)
		if len(s.Findings) > 0 {
			f := s.Findings[0]
			fmt.Fprintf(&b, ": %s", f.Name)
			if f.Threshold > 0 {
				fmt.Fprintf(&b, " %.2f ≥ %.2f", f.Score, f.Threshold)
			}
		}
	}
	b.WriteString(")")
	return b.String()
}

// top names the largest entries of m, at most two, then "+N more".
func top(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	s := strings.Join(names[:min(len(names), 2)], ", ")
	if len(names) > 2 {
		s += fmt.Sprintf(", +%d more", len(names)-2)
	}
	return s
}
