package guardproc

import (
	"context"
	"net/http"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom"
)

// IdleRelease returns the heap a guard freed to the operating system once it has been
// idle for a while. At GOGC=400 (Start) the collector first runs when the heap reaches
// 16 MiB, and the runtime keeps what it collected for the next burst: a guard that served
// a few requests and then waits, as most sidecars do most of the time, would hold every
// byte those requests allocated. IdleRelease counts the requests its handler serves; when
// no request is in flight and none has started for a whole period (Period, at least one
// and less than two periods after the last one ended), and the process has allocated at
// least MinAllocated since the last release, it collects and returns the freed pages
// (debug.FreeOSMemory), once per idle spell. A long stream is a request in flight:
// nothing is released under it. The threshold keeps a guard that served a few requests
// from paying for its first collection, whose bookkeeping (mark bits, work buffers, the
// workers' stacks: about 0.45 MiB, measured) outweighs what a few requests leave.
type IdleRelease struct {
	// Period is how long the guard must have been idle; 0 means DefaultIdlePeriod.
	Period time.Duration
	// MinAllocated is how many bytes the process must have allocated since the last
	// release (or its start); 0 means DefaultMinAllocated.
	MinAllocated uint64

	started  atomic.Int64 // requests begun
	inFlight atomic.Int64
	releases atomic.Int64
}

// DefaultIdlePeriod is IdleRelease's period unless set. A collection of an idle guard's
// heap of a few MiB takes a few hundred microseconds of one core.
const DefaultIdlePeriod = time.Second

// DefaultMinAllocated is IdleRelease's threshold unless set: a release then frees several
// times what the collection's bookkeeping costs (about a hundred chat requests).
const DefaultMinAllocated = 4 << 20

// Wrap counts h's requests.
func (r *IdleRelease) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.started.Add(1)
		r.inFlight.Add(1)
		defer r.inFlight.Add(-1)
		h.ServeHTTP(w, req)
	})
}

// Releases is how many times the freed heap was returned.
func (r *IdleRelease) Releases() int64 { return r.releases.Load() }

// RegisterMetrics exports the releases as guard_idle_memory_releases_total.
func (r *IdleRelease) RegisterMetrics(reg *prom.Registry) {
	reg.NewCounterFunc(prom.Opts{Name: "guard_idle_memory_releases_total",
		Help: "Times the guard, idle, returned the heap it had freed to the operating system."},
		func() float64 { return float64(r.releases.Load()) })
}

// Run checks once a period, until ctx ends, whether the guard has been idle since the
// last check with requests served since the last release, and releases then.
func (r *IdleRelease) Run(ctx context.Context) {
	period, minAlloc := r.Period, r.MinAllocated
	if period <= 0 {
		period = DefaultIdlePeriod
	}
	if minAlloc == 0 {
		minAlloc = DefaultMinAllocated
	}
	t := time.NewTicker(period)
	defer t.Stop()
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	var seen, released int64 // requests started at the last check, and at the last release
	var allocatedAtRelease uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := r.started.Load()
		if now == seen && now != released && r.inFlight.Load() == 0 {
			metrics.Read(allocs)
			if a := allocs[0].Value.Uint64(); a-allocatedAtRelease >= minAlloc {
				debug.FreeOSMemory()
				released, allocatedAtRelease = now, a
				r.releases.Add(1)
			}
		}
		seen = now
	}
}
