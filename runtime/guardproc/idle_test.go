package guardproc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom"
)

// garbage is what a request of the tests leaves on the heap.
var garbage [][]byte

func TestAnIdleGuardReleasesOncePerIdleSpell(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &IdleRelease{Period: 10 * time.Millisecond, MinAllocated: 1}
	release := make(chan struct{})
	srv := httptest.NewServer(r.Wrap(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		garbage = append(garbage[:0], make([]byte, 64<<10))
		if req.URL.Path == "/stream" {
			<-release // a stream that lasts
		}
		_, _ = io.WriteString(w, "ok")
	})))
	defer srv.Close()
	var released bool // the stream's end, once
	end := func() {
		if !released {
			released = true
			close(release)
		}
	}
	defer end() // before srv.Close, which waits for the stream
	go r.Run(ctx)

	get := func(path string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Error(err)
			return
		}
		_ = resp.Body.Close()
	}
	// Nothing served yet: nothing to release.
	time.Sleep(100 * time.Millisecond)
	if n := r.Releases(); n != 0 {
		t.Fatalf("released %d times before any request", n)
	}

	// A stream is in flight: nothing is released under it, however long it lasts.
	done := make(chan struct{})
	go func() { get("/stream"); close(done) }()
	time.Sleep(200 * time.Millisecond)
	if n := r.Releases(); n != 0 {
		t.Fatalf("released %d times while a request was in flight", n)
	}
	end()
	<-done
	waitReleases(t, r, 1)

	// Idle on: one release per idle spell, not one per period.
	time.Sleep(200 * time.Millisecond)
	if n := r.Releases(); n != 1 {
		t.Fatalf("released %d times in one idle spell, want 1", n)
	}
	get("/")
	waitReleases(t, r, 2)
}

func TestAFewRequestsDoNotPayForACollection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &IdleRelease{Period: 10 * time.Millisecond, MinAllocated: 1 << 40}
	h := r.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	go r.Run(ctx)
	for range 3 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	time.Sleep(200 * time.Millisecond)
	if n := r.Releases(); n != 0 {
		t.Fatalf("released %d times with less allocated than MinAllocated", n)
	}
}

func TestIdleReleasesAreExported(t *testing.T) {
	reg := prom.NewRegistry()
	r := &IdleRelease{}
	r.RegisterMetrics(reg)
	r.releases.Add(3)
	rec := httptest.NewRecorder()
	reg.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "guard_idle_memory_releases_total 3\n") {
		t.Fatalf("metrics lack guard_idle_memory_releases_total 3:\n%s", rec.Body.String())
	}
}

func waitReleases(t *testing.T, r *IdleRelease, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.Releases() < want {
		if time.Now().After(deadline) {
			t.Fatalf("released %d times, want %d", r.Releases(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := r.Releases(); n != want {
		t.Fatalf("released %d times, want %d", n, want)
	}
}
