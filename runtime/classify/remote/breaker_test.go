package remote_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/remote"
)

// clock is a settable clock for the breaker.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestAnOutageIsNotMultipliedByRetries: clients retry a fail-closed 5xx, and a classifier
// that is down would get every retry. After five calls in a row fail, calls fail at once
// without a request until a cool-down ends; one probe then goes, and an answer closes the
// breaker.
func TestAnOutageIsNotMultipliedByRetries(t *testing.T) {
	var down atomic.Bool
	var hits atomic.Int64
	down.Store(true)
	url := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"scores":{"violence":0}}`))
	}))
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	k := newClassifier(t, webhookSpec(url, categories("violence"), retries(1)), remote.WithBreakerClock(c.now))

	for i := range 5 {
		_, err := classifyText(k, "x")
		wantCode(t, err, classify.CodeClassifierFailed)
		if want := int64(2 * (i + 1)); hits.Load() != want {
			t.Fatalf("call %d: %d requests, want %d (one call and its retry each)", i+1, hits.Load(), want)
		}
	}
	for range 100 {
		_, err := classifyText(k, "x")
		wantCode(t, err, classify.CodeClassifierFailed)
		if !strings.Contains(err.Error(), "circuit open") {
			t.Fatalf("an open breaker's error says %q", err)
		}
	}
	if hits.Load() != 10 {
		t.Fatalf("100 calls with the breaker open made %d requests", hits.Load()-10)
	}

	c.add(time.Second)
	if _, err := classifyText(k, "x"); err == nil || hits.Load() != 12 {
		t.Fatalf("the probe after the cool-down: err %v, %d requests", err, hits.Load())
	}
	c.add(time.Second) // the failed probe doubled the cool-down: 2 s
	if _, err := classifyText(k, "x"); err == nil || !strings.Contains(err.Error(), "circuit open") || hits.Load() != 12 {
		t.Fatalf("1 s into a 2 s cool-down: err %v, %d requests", err, hits.Load())
	}

	down.Store(false)
	c.add(time.Second)
	if _, err := classifyText(k, "x"); err != nil {
		t.Fatalf("the probe after recovery: %v", err)
	}
	for range 3 {
		if _, err := classifyText(k, "x"); err != nil {
			t.Fatalf("after recovery: %v", err)
		}
	}
	if hits.Load() != 16 {
		t.Errorf("%d requests, want 16: the breaker closed on the probe's answer", hits.Load())
	}
}

// TestTheBreakerIgnoresAnswers: a classifier that answers, even with a 4xx or an invalid
// answer, is up: no number of such calls opens the breaker.
func TestTheBreakerIgnoresAnswers(t *testing.T) {
	var hits atomic.Int64
	url := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1)%2 == 0 {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"scores":{"violence":7}}`))
	}))
	k := newClassifier(t, webhookSpec(url, categories("violence")))
	for range 20 {
		if _, err := classifyText(k, "x"); err == nil || strings.Contains(err.Error(), "circuit open") {
			t.Fatalf("err %v", err)
		}
	}
	if hits.Load() != 20 {
		t.Errorf("20 calls made %d requests", hits.Load())
	}
}
