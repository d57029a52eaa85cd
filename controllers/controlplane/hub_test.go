package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/labels"
)

// value reads a counter's or a gauge's value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// stubBuilder resolves a selection to the policy set named by its label "set" (its other
// labels do not matter, as labels that select the same policies do not), or to what
// route maps that name to, and counts resolutions and compiles.
type stubBuilder struct {
	resolves, compiles atomic.Int64
	// delay holds each compile, so that concurrent askers overlap.
	delay time.Duration
	mu    sync.Mutex
	// route maps a label "set" to another policy set (a Guardrail's selector changed).
	route map[string]string
	// fail makes the compiles of a policy set fail.
	fail map[string]bool
	// prevs records the prev each compile of a policy set was given.
	prevs map[string][]*built
}

func (s *stubBuilder) set(m *map[string]string, k, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}

func (s *stubBuilder) failing(key string, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == nil {
		s.fail = map[string]bool{}
	}
	s.fail[key] = fail
}

// hub returns a hub over s.
func (s *stubBuilder) hub(debounce time.Duration) *hub {
	return newHub(func(_ context.Context, _ string, sel selection) (string, compileFunc, error) {
		s.resolves.Add(1)
		s.mu.Lock()
		key := sel.labels["set"]
		if to, ok := s.route[key]; ok {
			key = to
		}
		s.mu.Unlock()
		return key, func(_ context.Context, prev *built) (*built, error) {
			time.Sleep(s.delay)
			n := s.compiles.Add(1)
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.prevs == nil {
				s.prevs = map[string][]*built{}
			}
			s.prevs[key] = append(s.prevs[key], prev)
			if s.fail[key] {
				return nil, errors.New("does not compile")
			}
			return &built{version: fmt.Sprintf("%s-%d", key, n), enforced: key}, nil
		}, nil
	}, debounce, logr.Discard(), serverMetrics)
}

func sel(set string, extra ...string) selection {
	l := labels.Set{"set": set}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return selection{labels: l}
}

// TestBurstIsOneRecompile: changes closer together than the debounce are one wake-up of
// the subscribers and one recompile, whatever their number, and the recompile waits until
// a subscriber asks.
func TestBurstIsOneRecompile(t *testing.T) {
	s := &stubBuilder{}
	h := s.hub(200 * time.Millisecond)
	defer h.stop()
	_, changed, err := h.get(context.Background(), "shop", sel("web"))
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		h.touch("shop")
	}
	h.touch("elsewhere") // nothing held there: costs nothing
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscribers were never woken")
	}
	time.Sleep(400 * time.Millisecond) // room for a second, wrong, wake-up or compile
	if n := s.compiles.Load(); n != 1 {
		t.Errorf("%d compiles before anyone asked again, want 1 (the first subscription's)", n)
	}
	for range 10 {
		if _, _, err := h.get(context.Background(), "shop", sel("web")); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.compiles.Load(); n != 2 {
		t.Errorf("%d compiles for a first subscription and a burst of 50 changes, want 2", n)
	}
}

// TestBurstIsCappedByMaxDelay: an endless stream of changes still reaches subscribers.
func TestBurstIsCappedByMaxDelay(t *testing.T) {
	s := &stubBuilder{}
	h := s.hub(50 * time.Millisecond)
	defer h.stop()
	_, changed, err := h.get(context.Background(), "shop", sel("web"))
	if err != nil {
		t.Fatal(err)
	}
	stop := time.After(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond) // always inside the debounce window
	defer tick.Stop()
	for {
		select {
		case <-changed:
			return
		case <-tick.C:
			h.touch("shop")
		case <-stop:
			t.Fatal("a steady stream of changes held the push back for 5s; maxDelay is 500ms")
		}
	}
}

// TestConcurrentAsksCompileOnce: after a change, the subscribers of a namespace all ask at
// once; pods whose labels differ but select the same policies share one compile, and
// pods of one label set share one resolution.
func TestConcurrentAsksCompileOnce(t *testing.T) {
	s := &stubBuilder{delay: 50 * time.Millisecond}
	h := s.hub(time.Millisecond)
	defer h.stop()
	ctx := context.Background()
	_, changed, err := h.get(ctx, "shop", sel("web", "pod", "0"))
	if err != nil {
		t.Fatal(err)
	}
	h.touch("shop")
	<-changed
	resolves := s.resolves.Load()
	var wg sync.WaitGroup
	snaps, errs := make([]*built, 100), make([]error, 100)
	for i := range snaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 100 pods over 10 label sets, all selecting policy set web.
			snaps[i], _, errs[i] = h.get(ctx, "shop", sel("web", "pod", fmt.Sprint(i%10)))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, snap := range snaps {
		if snap != snaps[0] {
			t.Fatalf("pods selecting the same policies got different snapshots: %s and %s", snap.version, snaps[0].version)
		}
	}
	if n := s.compiles.Load(); n != 2 {
		t.Errorf("%d compiles for a first subscription and 100 askers after a change, want 2", n)
	}
	if n := s.resolves.Load() - resolves; n > 10 {
		t.Errorf("100 askers over 10 label sets resolved %d times, want at most 10", n)
	}
}

// TestOnlyWhatIsAskedForIsRecompiled: after a change, a snapshot no subscriber asks for
// is not compiled again.
func TestOnlyWhatIsAskedForIsRecompiled(t *testing.T) {
	s := &stubBuilder{}
	h := s.hub(time.Millisecond)
	defer h.stop()
	ctx := context.Background()
	for _, set := range []string{"web", "api", "batch"} {
		if _, _, err := h.get(ctx, "shop", sel(set)); err != nil {
			t.Fatal(err)
		}
	}
	_, changed, _ := h.get(ctx, "shop", sel("web"))
	for range 20 {
		h.touch("shop")
		<-changed
		if _, changed, _ = h.get(ctx, "shop", sel("web")); changed == nil {
			t.Fatal("no change channel")
		}
	}
	if n := s.compiles.Load(); n != 3+20 {
		t.Errorf("%d compiles, want 23: three first subscriptions, then web's alone after each of 20 changes", n)
	}
}

// TestSnapshotsPerNamespaceAreBounded: a namespace whose pods select ever new sets of
// policies holds at most maxEntries snapshots, the least recently used evicted and
// counted, and at most maxSelections label sets; another namespace is not affected.
func TestSnapshotsPerNamespaceAreBounded(t *testing.T) {
	s := &stubBuilder{}
	h := s.hub(time.Millisecond)
	defer h.stop()
	ctx := context.Background()
	if _, _, err := h.get(ctx, "quiet", sel("web")); err != nil {
		t.Fatal(err)
	}
	evicted := value(t, serverMetrics.evictions.WithLabelValues("noisy"))
	held := value(t, serverMetrics.snapshots)
	for i := range 3 * maxSelections {
		// Every label set is new; every tenth selects a new set of policies.
		if _, _, err := h.get(ctx, "noisy", sel(fmt.Sprint(i/10), "rev", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		// One pod keeps asking for its snapshot: it stays.
		if _, _, err := h.get(ctx, "noisy", sel("live")); err != nil {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	entries, selections := len(h.entries["noisy"]), len(h.selections["noisy"])
	_, live := h.entries["noisy"]["live"]
	quiet := len(h.entries["quiet"])
	h.mu.Unlock()
	if entries > maxEntries || selections > maxSelections {
		t.Errorf("the namespace holds %d snapshots and %d label sets, want at most %d and %d", entries, selections, maxEntries, maxSelections)
	}
	if !live {
		t.Error("the snapshot a pod keeps asking for was evicted")
	}
	if quiet != 1 {
		t.Errorf("another namespace holds %d snapshots, want its 1", quiet)
	}
	sets := 3*maxSelections/10 + 1 + 1 // and "live"
	if got := value(t, serverMetrics.evictions.WithLabelValues("noisy")) - evicted; got != float64(sets-maxEntries) {
		t.Errorf("%v evictions counted, want %d", got, sets-maxEntries)
	}
	if got := value(t, serverMetrics.snapshots) - held; got != float64(maxEntries) {
		t.Errorf("the snapshots gauge grew by %v, want %d", got, maxEntries)
	}
}

// TestFailedCompiles: a first compile that fails is an error, retried on the next ask; a
// recompile that fails keeps the last good snapshot until the next change; a policy set
// new to a label set starts from the label set's previous one, so that a Guardrail both
// hold keeps its last good form.
func TestFailedCompiles(t *testing.T) {
	s := &stubBuilder{}
	s.failing("web", true)
	h := s.hub(time.Millisecond)
	defer h.stop()
	ctx := context.Background()
	if _, _, err := h.get(ctx, "shop", sel("web")); err == nil {
		t.Fatal("a failed first compile gave no error")
	}
	s.failing("web", false)
	good, changed, err := h.get(ctx, "shop", sel("web"))
	if err != nil {
		t.Fatalf("the next ask did not retry: %v", err)
	}
	s.failing("web", true)
	h.touch("shop")
	<-changed
	for range 3 {
		var snap *built
		snap, changed, err = h.get(ctx, "shop", sel("web"))
		if err != nil || snap != good {
			t.Fatalf("after a failed recompile: %v, %v; want the last good snapshot", snap, err)
		}
	}
	if n := s.compiles.Load(); n != 3 {
		t.Errorf("%d compiles, want 3: a failed recompile is retried on the next change, not on every ask", n)
	}

	// The pod's label set now selects another policy set: its first compile starts from
	// the label set's previous snapshot.
	s.set(&s.route, "web", "web-and-more")
	h.touch("shop")
	<-changed
	snap, _, err := h.get(ctx, "shop", sel("web"))
	if err != nil || snap.enforced != "web-and-more" {
		t.Fatalf("after the change the label set got %v, %v; want policy set web-and-more", snap, err)
	}
	s.mu.Lock()
	prevs := s.prevs["web-and-more"]
	s.mu.Unlock()
	if len(prevs) != 1 || prevs[0] != good {
		t.Errorf("the new policy set of a label set compiled from %v, want the label set's previous snapshot %v", prevs, good)
	}
}
