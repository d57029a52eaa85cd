package controlplane

import (
	"context"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
)

// hub caches one compiled snapshot per distinct (namespace, selection) — a thousand
// replicas of one Deployment cost one compile — and wakes the subscribers of a namespace
// when something their snapshots are made of changes. Changes are debounced: the
// recompile waits until no change came for the debounce window (at most maxDelay after
// the first), so a burst of applies is one recompile and one push.
type hub struct {
	build    buildFunc
	debounce time.Duration
	maxDelay time.Duration
	log      logr.Logger
	metrics  *metrics

	mu sync.Mutex
	// entries by namespace, then by selection (selection.key).
	entries map[string]map[string]*entry
	// changed is closed (and replaced) when the namespace's snapshots were recompiled.
	changed map[string]chan struct{}
	// dirty namespaces wait for the debounce timer.
	dirty map[string]bool
	timer *time.Timer
	// first is when the pending burst began.
	first time.Time
	// history remembers the Guardrails of recent versions, for acks of a version that is
	// no longer current (a guard restarted on its persisted snapshot).
	history map[string]string
	order   []string
}

// entry is the snapshot of one (namespace, selection).
type entry struct {
	sel      selection
	snap     *built
	err      error
	lastUsed time.Time
}

// maxHistory bounds hub.history.
const maxHistory = 4096

// idleEntry is how long a snapshot no subscriber asked for is kept.
const idleEntry = 10 * time.Minute

// selection is what, beside its namespace, decides a pod's snapshot: its labels (which
// Guardrails select it) and the ModelProviders its verified guard was injected for (whose
// credentials it gets).
type selection struct {
	labels    labels.Set
	providers []string
}

// key identifies a selection among a namespace's entries.
func (s selection) key() string {
	if len(s.providers) == 0 {
		return s.labels.String()
	}
	return s.labels.String() + "\x00" + strings.Join(s.providers, ",")
}

// buildFunc compiles the snapshot of a (namespace, selection); prev is its last one.
type buildFunc func(ctx context.Context, ns string, sel selection, prev *built) (*built, error)

func newHub(build buildFunc, debounce time.Duration, log logr.Logger, m *metrics) *hub {
	return &hub{build: build, debounce: debounce, maxDelay: 10 * debounce, log: log, metrics: m,
		entries: map[string]map[string]*entry{}, changed: map[string]chan struct{}{},
		dirty: map[string]bool{}, history: map[string]string{}}
}

// get returns the snapshot of a pod's namespace and selection, and the channel closed
// when the namespace's snapshots change next.
func (h *hub) get(ctx context.Context, ns string, sel selection) (*built, <-chan struct{}, error) {
	key := sel.key()
	h.mu.Lock()
	e := h.entries[ns][key]
	ch := h.changedLocked(ns)
	if e != nil {
		e.lastUsed = time.Now()
		snap, err := e.snap, e.err
		h.mu.Unlock()
		return snap, ch, err
	}
	h.mu.Unlock()

	// Compiled outside the lock; two first subscribers of a label set may both compile,
	// and the result is the same.
	snap, err := h.build(ctx, ns, sel, nil)
	h.metrics.compiles.Inc()
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur := h.entries[ns][key]; cur != nil {
		return cur.snap, h.changedLocked(ns), cur.err
	}
	if err != nil {
		return nil, ch, err
	}
	if h.entries[ns] == nil {
		h.entries[ns] = map[string]*entry{}
	}
	h.entries[ns][key] = &entry{sel: sel, snap: snap, lastUsed: time.Now()}
	h.rememberLocked(snap)
	if h.changed[ns] != ch {
		// The namespace changed while this compiled, so the snapshot may be stale: it is
		// kept (the next compile keeps its last good Guardrails) and compiled again after
		// the debounce, which wakes the caller.
		h.touchLocked(ns)
		return snap, h.changedLocked(ns), nil
	}
	return snap, ch, nil
}

func (h *hub) changedLocked(ns string) chan struct{} {
	ch := h.changed[ns]
	if ch == nil {
		ch = make(chan struct{})
		h.changed[ns] = ch
	}
	return ch
}

// enforcedOf returns the Guardrails a version holds, if this replica compiled it.
func (h *hub) enforcedOf(version string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.history[version]
	return v, ok
}

func (h *hub) rememberLocked(b *built) {
	if _, ok := h.history[b.version]; ok {
		return
	}
	h.history[b.version] = b.enforced
	h.order = append(h.order, b.version)
	if len(h.order) > maxHistory {
		delete(h.history, h.order[0])
		h.order = h.order[1:]
	}
}

// touch marks a namespace's snapshots stale; they are recompiled after the debounce.
// Namespaces without subscribers cost nothing.
func (h *hub) touch(ns string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries[ns] == nil && h.changed[ns] == nil {
		return
	}
	h.touchLocked(ns)
}

// touchAll marks the snapshots of every namespace with subscribers stale: a cluster
// baseline changed.
func (h *hub) touchAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ns := range h.entries {
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

// flush recompiles the dirty namespaces and wakes their subscribers.
func (h *hub) flush() {
	h.mu.Lock()
	dirty := h.dirty
	h.dirty = map[string]bool{}
	h.timer = nil
	work := map[string]map[string]*entry{}
	for ns := range dirty {
		work[ns] = h.entries[ns]
	}
	h.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ns, entries := range work {
		fresh := map[string]*entry{}
		for key, e := range entries {
			if time.Since(e.lastUsed) > idleEntry {
				continue
			}
			snap, err := h.build(ctx, ns, e.sel, e.snap)
			h.metrics.compiles.Inc()
			if err != nil {
				// Keep serving the last good snapshot; the next change retries.
				h.log.Error(err, "Compiling a policy snapshot; subscribers keep the previous one", "namespace", ns)
				fresh[key] = e
				continue
			}
			fresh[key] = &entry{sel: e.sel, snap: snap, lastUsed: e.lastUsed}
		}
		h.mu.Lock()
		// Entries a first subscriber added meanwhile stay; idle ones go.
		cur := h.entries[ns]
		if cur == nil {
			cur = map[string]*entry{}
		}
		for key := range entries {
			if _, kept := fresh[key]; !kept {
				delete(cur, key)
			}
		}
		maps.Copy(cur, fresh)
		if len(cur) == 0 {
			delete(h.entries, ns)
		} else {
			h.entries[ns] = cur
		}
		for _, e := range fresh {
			h.rememberLocked(e.snap)
		}
		if ch := h.changed[ns]; ch != nil {
			close(ch)
			delete(h.changed, ns)
		}
		h.mu.Unlock()
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
