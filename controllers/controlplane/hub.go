package controlplane

import (
	"context"
	"crypto/sha256"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
)

// hub caches compiled snapshots and wakes the subscribers of a namespace when something
// their snapshots are made of changes.
//
// A snapshot is kept per policy set, not per label set: the Guardrails and
// ClusterGuardrails a pod's labels select and the ModelProviders its guard was injected
// for (buildFunc's key). Pods whose labels select the same policies share one snapshot, so
// a thousand replicas of a Deployment cost one compile, and so does a pod relabelled a
// thousand times without changing what selects it.
//
// Changes are debounced: a flush waits until no change came for the debounce window (at
// most maxDelay after the first), so a burst of applies is one flush. A flush compiles
// nothing: it marks the namespace's snapshots stale and wakes its subscribers. A stale
// snapshot is compiled again when a subscriber next asks for it, once however many ask,
// so a snapshot no pod asks for any more costs nothing after a change.
//
// Bounds, per namespace: at most maxEntries snapshots and maxSelections remembered label
// sets, the least recently used evicted beyond them; either is dropped once no subscriber
// asked for it for idleEntry. A relabel therefore costs at most one compile of each policy
// set the namespace's subscribers ask for (fewer when relabels come faster than the
// debounce), whatever the number of label sets its pods had before.
type hub struct {
	build    buildFunc
	debounce time.Duration
	maxDelay time.Duration
	log      logr.Logger
	metrics  *metrics
	// slots bounds the compiles that run at once (they are CPU-bound).
	slots chan struct{}

	mu sync.Mutex
	// entries by namespace, then by policy set (buildFunc's key).
	entries map[string]map[string]*entry
	// selections by namespace, then by selection (selection.key): the policy set a label
	// set resolved to, and when.
	selections map[string]map[string]*resolution
	// gen is each namespace's generation: a snapshot or a resolution of an older one is
	// stale. A flush moves it to the next seq.
	gen map[string]uint64
	seq uint64
	// changed is closed (and replaced) when the namespace's generation moves.
	changed map[string]chan struct{}
	// dirty namespaces wait for the debounce timer.
	dirty map[string]bool
	timer *time.Timer
	// first is when the pending burst began.
	first time.Time
	// history remembers the Guardrails of recent versions by namespace and version, for
	// acks of a version that is no longer current (a guard restarted on its persisted
	// snapshot). An ack counts only for a version compiled for the guard's own namespace.
	history map[string]string
	order   []string
}

// entry is the snapshot of one (namespace, policy set).
type entry struct {
	snap *built
	// gen is the generation of the namespace snap was compiled in.
	gen      uint64
	lastUsed time.Time
	// compiling is the compile in progress, if any; whoever else asks waits for it.
	compiling *flight
}

// resolution is the policy set one selection of a namespace resolved to.
type resolution struct {
	key      string
	gen      uint64
	lastUsed time.Time
	// resolving is the resolution in progress, if any.
	resolving *flight
}

// flight is a resolution or a compile that others wait for: gen is the generation it
// serves, err how it failed.
type flight struct {
	done chan struct{}
	gen  uint64
	err  error
}

// maxHistory bounds hub.history.
const maxHistory = 4096

// Bounds of the hub, per namespace: snapshots (each holds its compiled policy and
// credentials) and remembered label sets (a hash and a policy-set key each).
const (
	maxEntries    = 64
	maxSelections = 1024
)

// idleEntry is how long a snapshot or a label set no subscriber asked for is kept. A
// live guard asks at least once per long poll (Options.Wait), so its snapshot stays, with
// the last good form of a Guardrail that stopped compiling (keepLastGood).
const idleEntry = 10 * time.Minute

// compileTimeout bounds one resolution or compile, which its waiters share.
const compileTimeout = 30 * time.Second

// selection is what, beside its namespace, decides a pod's snapshot: its labels (which
// Guardrails select it) and the ModelProviders its verified guard was injected for (whose
// credentials it gets).
type selection struct {
	labels    labels.Set
	providers []string
	// tracing is the OTLP endpoint the pod's guard was injected to export to, empty when
	// it does not trace (guards.GuardTracing): only a guard tracing to the endpoint the
	// collector's credentials are for gets them.
	tracing string
}

// key identifies a selection among a namespace's: a hash, so that what the hub remembers
// of a label set is small however long a tenant makes its labels.
func (s selection) key() string {
	h := sha256.New()
	h.Write([]byte(s.labels.String()))
	if len(s.providers) > 0 {
		h.Write([]byte("\x00" + strings.Join(s.providers, ",")))
	}
	if s.tracing != "" {
		h.Write([]byte("\x00tracing\x00" + s.tracing))
	}
	return string(h.Sum(nil))
}

// buildFunc resolves what a pod of ns with sel gets: key names its policy set (two
// selections with the same key get the same snapshot) and compile compiles it.
type buildFunc func(ctx context.Context, ns string, sel selection) (key string, compile compileFunc, err error)

// compileFunc compiles a resolved policy set; prev is its last snapshot (or the one the
// selection had before), whose last good Guardrails a failing one keeps.
type compileFunc func(ctx context.Context, prev *built) (*built, error)

func newHub(build buildFunc, debounce time.Duration, log logr.Logger, m *metrics) *hub {
	return &hub{build: build, debounce: debounce, maxDelay: 10 * debounce, log: log, metrics: m,
		slots:   make(chan struct{}, max(2, runtime.GOMAXPROCS(0))),
		entries: map[string]map[string]*entry{}, selections: map[string]map[string]*resolution{},
		gen: map[string]uint64{}, changed: map[string]chan struct{}{},
		dirty: map[string]bool{}, history: map[string]string{}}
}

// get returns the snapshot of a pod's namespace and selection, and the channel closed
// when the namespace's snapshots change next.
func (h *hub) get(ctx context.Context, ns string, sel selection) (*built, <-chan struct{}, error) {
	sk := sel.key()
	h.mu.Lock()
	defer h.mu.Unlock()
	// The snapshot returned is at least as new as generation g, and ch is closed once g
	// is no longer current: a change that lands meanwhile wakes the caller.
	g, ch := h.genLocked(ns), h.changedLocked(ns)
	key, compile, prevKey, err := h.resolveLocked(ctx, ns, sk, sel, g)
	if err != nil {
		return nil, ch, err
	}
	for {
		now := time.Now()
		e := h.entryLocked(ns, key, now)
		e.lastUsed = now
		if e.snap != nil && e.gen >= g {
			return e.snap, ch, nil
		}
		if f := e.compiling; f != nil {
			if err := h.waitLocked(ctx, f); err != nil {
				return nil, ch, err
			}
			if f.err != nil && f.gen >= g && (e.snap == nil || e.gen < g) {
				return nil, ch, f.err
			}
			continue
		}
		if compile == nil {
			// Another caller resolved this selection and its compile is gone (it failed,
			// or the snapshot was evicted): resolve again, for a compile of our own.
			h.mu.Unlock()
			key, compile, err = h.buildDetached(ctx, ns, sel)
			h.mu.Lock()
			if err != nil {
				return nil, ch, err
			}
			continue
		}
		snap, err := h.compileLocked(ns, key, prevKey, e, compile, g)
		return snap, ch, err
	}
}

// resolveLocked returns the policy set of selection sk in generation g or later,
// resolving it — once, however many ask — when it has none. compile is nil when another
// caller resolved it; prevKey is the policy set the selection had before. It unlocks h.mu
// while it waits or resolves.
func (h *hub) resolveLocked(ctx context.Context, ns, sk string, sel selection, g uint64) (key string, compile compileFunc, prevKey string, err error) {
	for {
		r := h.selectionLocked(ns, sk, time.Now())
		if r.resolving == nil && r.key != "" && r.gen >= g {
			return r.key, nil, "", nil
		}
		if f := r.resolving; f != nil {
			if err := h.waitLocked(ctx, f); err != nil {
				return "", nil, "", err
			}
			if f.err != nil && f.gen >= g {
				return "", nil, "", f.err
			}
			continue
		}
		f := &flight{done: make(chan struct{}), gen: g}
		r.resolving = f
		h.mu.Unlock()
		key, compile, err = h.buildDetached(ctx, ns, sel)
		h.mu.Lock()
		r.resolving, f.err = nil, err
		close(f.done)
		if err != nil {
			return "", nil, "", err
		}
		prevKey = r.key
		r.key, r.gen = key, g
		return key, compile, prevKey, nil
	}
}

// buildDetached resolves sel: its result may serve other callers, so it does not end
// with the caller's request.
func (h *hub) buildDetached(ctx context.Context, ns string, sel selection) (string, compileFunc, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), compileTimeout)
	defer cancel()
	return h.build(ctx, ns, sel)
}

// compileLocked compiles policy set key into e for generation g; whoever asks for it
// meanwhile waits. It unlocks h.mu while compiling.
func (h *hub) compileLocked(ns, key, prevKey string, e *entry, compile compileFunc, g uint64) (*built, error) {
	prev := e.snap
	if prev == nil && prevKey != "" && prevKey != key {
		// The selection's policy set changed (a Guardrail's selector, or the pod's labels):
		// the new set keeps the last good form of a Guardrail both hold.
		if old := h.entries[ns][prevKey]; old != nil {
			prev = old.snap
		}
	}
	f := &flight{done: make(chan struct{}), gen: g}
	e.compiling = f
	h.mu.Unlock()
	h.slots <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	snap, err := compile(ctx, prev)
	cancel()
	<-h.slots
	h.mu.Lock()
	e.compiling, f.err = nil, err
	close(f.done)
	if err != nil {
		if e.snap == nil {
			h.dropEntryLocked(ns, key, e)
			return nil, err
		}
		// Keep serving the last good snapshot; the next change retries.
		h.log.Error(err, "Compiling a policy snapshot; subscribers keep the previous one", "namespace", ns)
		e.gen = max(e.gen, g)
		return e.snap, nil
	}
	if snap == prev {
		h.metrics.unchanged.Inc()
	} else {
		h.metrics.compiles.Inc()
	}
	e.snap, e.gen = snap, max(e.gen, g)
	h.rememberLocked(ns, snap)
	return snap, nil
}

// waitLocked waits, with h.mu unlocked, until f is done or ctx ends.
func (h *hub) waitLocked(ctx context.Context, f *flight) error {
	h.mu.Unlock()
	defer h.mu.Lock()
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// genLocked is ns's generation. A namespace the hub holds nothing of starts at the
// current seq, so that nothing compiled before it dropped out counts as current.
func (h *hub) genLocked(ns string) uint64 {
	g, ok := h.gen[ns]
	if !ok {
		g = h.seq
		h.gen[ns] = g
	}
	return g
}

func (h *hub) changedLocked(ns string) chan struct{} {
	ch := h.changed[ns]
	if ch == nil {
		ch = make(chan struct{})
		h.changed[ns] = ch
	}
	return ch
}

// entryLocked returns the entry of policy set key, adding it (and evicting the least
// recently used beyond maxEntries) when there is none.
func (h *hub) entryLocked(ns, key string, now time.Time) *entry {
	m := h.entries[ns]
	if e := m[key]; e != nil {
		return e
	}
	if m == nil {
		m = map[string]*entry{}
		h.entries[ns] = m
	}
	h.sweepEntriesLocked(ns, now)
	for len(m) >= maxEntries {
		lru := ""
		for k, e := range m {
			if e.compiling == nil && (lru == "" || e.lastUsed.Before(m[lru].lastUsed)) {
				lru = k
			}
		}
		if lru == "" {
			break // all compiling: over the bound until they finish
		}
		h.dropEntryLocked(ns, lru, m[lru])
		h.metrics.evictions.WithLabelValues(ns).Inc()
	}
	e := &entry{lastUsed: now}
	m[key] = e
	h.metrics.snapshots.Inc()
	return e
}

func (h *hub) dropEntryLocked(ns, key string, e *entry) {
	if h.entries[ns][key] == e {
		delete(h.entries[ns], key)
		h.metrics.snapshots.Dec()
	}
}

// sweepEntriesLocked drops the snapshots of ns no one asked for within idleEntry.
func (h *hub) sweepEntriesLocked(ns string, now time.Time) {
	for k, e := range h.entries[ns] {
		if e.compiling == nil && now.Sub(e.lastUsed) > idleEntry {
			h.dropEntryLocked(ns, k, e)
		}
	}
}

// selectionLocked returns the resolution of selection sk, marked used, adding it (and
// evicting the least recently used beyond maxSelections) when there is none.
func (h *hub) selectionLocked(ns, sk string, now time.Time) *resolution {
	m := h.selections[ns]
	if r := m[sk]; r != nil {
		r.lastUsed = now
		return r
	}
	if m == nil {
		m = map[string]*resolution{}
		h.selections[ns] = m
	}
	h.sweepSelectionsLocked(ns, now)
	for len(m) >= maxSelections {
		lru := ""
		for k, r := range m {
			if r.resolving == nil && (lru == "" || r.lastUsed.Before(m[lru].lastUsed)) {
				lru = k
			}
		}
		if lru == "" {
			break
		}
		delete(m, lru)
	}
	r := &resolution{lastUsed: now}
	m[sk] = r
	return r
}

func (h *hub) sweepSelectionsLocked(ns string, now time.Time) {
	for k, r := range h.selections[ns] {
		if r.resolving == nil && now.Sub(r.lastUsed) > idleEntry {
			delete(h.selections[ns], k)
		}
	}
}

// enforcedOf returns the Guardrails a version holds, if this replica compiled it for
// namespace ns: a version of another namespace's policy names Guardrails of that
// namespace, which the guard of a pod in ns does not enforce, whatever their names.
func (h *hub) enforcedOf(ns, version string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.history[historyKey(ns, version)]
	return v, ok
}

func historyKey(ns, version string) string { return ns + "/" + version }

func (h *hub) rememberLocked(ns string, b *built) {
	k := historyKey(ns, b.version)
	if _, ok := h.history[k]; ok {
		return
	}
	h.history[k] = b.enforced
	h.order = append(h.order, k)
	if len(h.order) > maxHistory {
		delete(h.history, h.order[0])
		h.order = h.order[1:]
	}
}

// touch marks a namespace's snapshots stale; its subscribers are woken after the
// debounce. Namespaces the hub holds nothing of cost nothing.
func (h *hub) touch(ns string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries[ns] == nil && h.selections[ns] == nil && h.changed[ns] == nil {
		return
	}
	h.touchLocked(ns)
}

// touchAll marks the snapshots of every namespace the hub holds stale: a cluster
// baseline changed.
func (h *hub) touchAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ns := range h.entries {
		h.touchLocked(ns)
	}
	for ns := range h.selections {
		h.touchLocked(ns)
	}
	for ns := range h.changed {
		h.touchLocked(ns)
	}
}

func (h *hub) touchLocked(ns string) {
	h.dirty[ns] = true
	now := time.Now()
	switch {
	case h.timer == nil:
		h.first = now
		h.timer = time.AfterFunc(h.debounce, h.flush)
	case now.Sub(h.first)+h.debounce <= h.maxDelay:
		// Still in the burst: wait for it to end. Stop fails once the flush has begun;
		// then this change waits for the next round.
		if h.timer.Stop() {
			h.timer.Reset(h.debounce)
		}
	}
}

// flush moves the generation of the dirty namespaces, which makes their snapshots stale,
// wakes their subscribers and drops what no one asked for within idleEntry. It compiles
// nothing: each stale snapshot is compiled when it is next asked for.
func (h *hub) flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	dirty := h.dirty
	h.dirty = map[string]bool{}
	h.timer = nil
	now := time.Now()
	for ns := range dirty {
		h.seq++
		h.gen[ns] = h.seq
		if ch := h.changed[ns]; ch != nil {
			close(ch)
			delete(h.changed, ns)
		}
		h.sweepEntriesLocked(ns, now)
		h.sweepSelectionsLocked(ns, now)
		if len(h.entries[ns]) == 0 {
			delete(h.entries, ns)
		}
		if len(h.selections[ns]) == 0 {
			delete(h.selections, ns)
		}
		if h.entries[ns] == nil && h.selections[ns] == nil {
			delete(h.gen, ns)
		}
	}
}

// stop cancels a pending flush.
func (h *hub) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer != nil {
		h.timer.Stop()
	}
}
