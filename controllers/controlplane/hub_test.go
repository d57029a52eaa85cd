package controlplane

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
)

// TestBurstIsOneRecompile: changes closer together than the debounce are one recompile
// and one wake-up of the subscribers, whatever their number.
func TestBurstIsOneRecompile(t *testing.T) {
	var mu sync.Mutex
	builds := 0
	h := newHub(func(context.Context, string, selection, *built) (*built, error) {
		mu.Lock()
		defer mu.Unlock()
		builds++
		return &built{version: "v"}, nil
	}, 200*time.Millisecond, logr.Discard(), serverMetrics)
	defer h.stop()
	_, changed, err := h.get(context.Background(), "shop", selection{labels: labels.Set{"app": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		h.touch("shop")
	}
	h.touch("elsewhere") // no subscriber there: costs nothing
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscribers were never woken")
	}
	time.Sleep(400 * time.Millisecond) // room for a second, wrong, recompile
	mu.Lock()
	defer mu.Unlock()
	if builds != 2 {
		t.Errorf("%d builds for a first subscription and a burst of 50 changes, want 2", builds)
	}
}

// TestBurstIsCappedByMaxDelay: an endless stream of changes still reaches subscribers.
func TestBurstIsCappedByMaxDelay(t *testing.T) {
	h := newHub(func(context.Context, string, selection, *built) (*built, error) {
		return &built{version: "v"}, nil
	}, 50*time.Millisecond, logr.Discard(), serverMetrics)
	defer h.stop()
	_, changed, err := h.get(context.Background(), "shop", selection{})
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
