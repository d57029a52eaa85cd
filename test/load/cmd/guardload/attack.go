package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// target is one way to reach the provider: directly, through the plain proxy, or through
// the guard. Each has its own clients (and so its own keep-alive connections), kept for
// the whole run so that every slice finds warm connections.
type target struct {
	name string
	url  string // base URL, no /v1
	// proc is the proxy's process; nil for direct.
	proc *child

	chat, stream *http.Client
	clock        *eventClock
}

func newTarget(name, url string, proc *child) *target {
	t := &target{name: name, url: url, proc: proc, clock: &eventClock{next: newTransport()}}
	t.chat = &http.Client{Transport: newTransport(), Timeout: 30 * time.Second}
	t.stream = &http.Client{Transport: t.clock, Timeout: 30 * time.Second}
	return t
}

// newTransport is a client transport for loopback HTTP/1.1 with keep-alive, as SDKs use.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// sliceResult is what one slice of an attack on one target measured.
type sliceResult struct {
	ok      int
	errors  map[string]int
	latency []time.Duration
	streams []streamTiming
	cpu     cpuTimes // the target process's CPU time during the slice
}

// check validates a response; it returns "" when the response is as expected.
type check func(*vegeta.Result) string

// attack runs one slice at a constant rate for d and collects its results.
func attack(ctx context.Context, t *target, streamed bool, body []byte, rate int, d time.Duration, ok check) (sliceResult, error) {
	client := t.chat
	if streamed {
		client = t.stream
		t.clock.take() // drop what a previous slice left
	}
	// An Attacker serves one attack (it stops itself at the end); the client, and so the
	// connections, are the target's.
	atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(16))
	tgt := vegeta.Target{Method: http.MethodPost, URL: t.url + "/v1/chat/completions", Body: body,
		Header: http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer load-test"}}}
	res := sliceResult{errors: map[string]int{}}
	var cpu0 cpuTimes
	if t.proc != nil {
		var err error
		if cpu0, err = cpuTime(t.proc.pid()); err != nil {
			return res, err
		}
	}
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	pacer := vegeta.ConstantPacer{Freq: rate, Per: time.Second}
	for r := range atk.Attack(vegeta.NewStaticTargeter(tgt), pacer, d, t.name) {
		switch {
		case r.Error != "":
			res.errors[r.Error]++
		case r.Code != http.StatusOK:
			res.errors[fmt.Sprintf("status %d", r.Code)]++
		default:
			if msg := ok(r); msg != "" {
				res.errors[msg]++
				continue
			}
			res.ok++
			res.latency = append(res.latency, r.Latency)
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if t.proc != nil {
		cpu1, err := cpuTime(t.proc.pid())
		if err != nil {
			return res, err
		}
		res.cpu = cpu1.sub(cpu0)
	}
	if streamed {
		res.streams = t.clock.take()
	}
	return res, nil
}

// streamTiming is when each event of one stream arrived, from the start of the request.
type streamTiming struct {
	arrivals []time.Duration
}

func (s streamTiming) last() time.Duration { return s.arrivals[len(s.arrivals)-1] }

// eventClock is a client transport that notes when each server-sent event of a response
// arrives: the client's view of a stream, as an SDK reading it would have it.
type eventClock struct {
	next http.RoundTripper
	mu   sync.Mutex
	done []streamTiming
}

func (c *eventClock) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &timedBody{rc: resp.Body, start: start, clock: c, arrivals: make([]time.Duration, 0, 256)}
	return resp, nil
}

// take returns the timings collected since the last take.
func (c *eventClock) take() []streamTiming {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.done
	c.done = nil
	return out
}

// timedBody notes the time at which each event's terminating blank line was read.
type timedBody struct {
	rc       io.ReadCloser
	start    time.Time
	clock    *eventClock
	arrivals []time.Duration
	// nl: the last byte read ended a line (CR ignored), so a '\n' now ends an event.
	nl     bool
	eof    bool
	closed bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		at := time.Since(b.start)
		for _, c := range p[:n] {
			switch c {
			case '\n':
				if b.nl {
					b.arrivals = append(b.arrivals, at)
					b.nl = false
				} else {
					b.nl = true
				}
			case '\r':
			default:
				b.nl = false
			}
		}
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close records the stream when it was read to its end.
func (b *timedBody) Close() error {
	if !b.closed {
		b.closed = true
		if b.eof && len(b.arrivals) > 0 {
			b.clock.mu.Lock()
			b.clock.done = append(b.clock.done, streamTiming{arrivals: b.arrivals})
			b.clock.mu.Unlock()
		}
	}
	return b.rc.Close()
}

// sameBody accepts a response whose body is want, byte for byte (allowed
// traffic is what the provider sent).
func sameBody(want []byte) check {
	return func(r *vegeta.Result) string {
		if !bytes.Equal(r.Body, want) {
			return "body differs from the provider's"
		}
		return ""
	}
}

// completeStream accepts a stream that ends with the chat terminator.
func completeStream(r *vegeta.Result) string {
	if !bytes.HasSuffix(r.Body, []byte("data: [DONE]\n\n")) {
		return "stream does not end with data: [DONE]"
	}
	return ""
}

// percentile returns the q-quantile (0..1) of sorted ds by the nearest-rank method.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func sortDurations(ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
}
