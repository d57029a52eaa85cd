package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// A classifier that is down fails every evaluation, and each failure can come back as
// several calls: a fail-closed answer is a 5xx, which clients that ignore x-should-retry
// retry (the AI SDK three times, LangChain up to seven), and each retry would call the
// classifier again, with the guard's own retries on top. The breaker stops that: after
// breakerThreshold calls in a row have failed for want of an answer (transport errors,
// 429 and 5xx after the retries, deadlines), calls fail at once, without a request,
// for a cool-down that starts at breakerCooldown and doubles, up to breakerMaxCooldown,
// each time the one call let through after it (the probe) fails too. A call that gets
// an answer closes it. So a classifier outage costs the classifier one probe per
// cool-down however many clients retry, a fail-open guardrail passes traffic without
// waiting for timeouts, and a fail-closed one refuses it at once.
const (
	breakerThreshold   = 5
	breakerCooldown    = time.Second
	breakerMaxCooldown = 30 * time.Second
)

// breaker is a circuit breaker over the calls of one endpoint. Its zero value is closed.
type breaker struct {
	threshold         int
	cooldown, longest time.Duration
	now               func() time.Time

	mu sync.Mutex
	// failures counts the calls that failed in a row; open is set from the threshold on.
	failures int
	open     bool
	// until is when the next probe may go; probing is set while it is out; wait is the
	// cool-down that follows a failed probe.
	until   time.Time
	probing bool
	wait    time.Duration
}

func newBreaker(now func() time.Time) *breaker {
	return &breaker{threshold: breakerThreshold, cooldown: breakerCooldown, longest: breakerMaxCooldown, now: now}
}

// errOpen is what a call refused by the breaker fails with.
var errOpen = errors.New("circuit open")

// allow says whether a call may go, and whether it is the probe. A refused call's error
// says when the next probe goes, never more.
func (b *breaker) allow(name string) (probe bool, err error) {
	if b == nil {
		return false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return false, nil
	}
	now := b.now()
	if b.probing || now.Before(b.until) {
		left := max(b.until.Sub(now), 0).Round(100 * time.Millisecond)
		return false, &classify.Error{Code: classify.CodeClassifierFailed, Err: fmt.Errorf(
			"%s: %w: %d calls in a row failed; the next call goes in %s", name, errOpen, b.failures, left)}
	}
	b.probing = true
	return true, nil
}

// done records a call's outcome: answered (the classifier replied, even with an error
// status it chose), or not; a call canceled by its caller says nothing and only ends a
// probe.
func (b *breaker) done(probe bool, err error, answered bool) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch {
	case answered:
		b.failures, b.open, b.wait = 0, false, 0
	case errors.Is(err, context.Canceled):
	default:
		b.failures++
		switch {
		case probe:
			b.wait = min(max(b.wait*2, b.cooldown), b.longest)
			b.until = b.now().Add(b.wait)
		case !b.open && b.failures >= b.threshold:
			b.open, b.wait = true, b.cooldown
			b.until = b.now().Add(b.wait)
		}
	}
}
