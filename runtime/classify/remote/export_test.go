package remote

import "time"

// WithBackoff sets the first retry's delay before jitter, so that tests can make backoff
// visible or negligible.
func WithBackoff(d time.Duration) Option {
	return func(o *options) { o.backoff = d }
}

// WithBreakerClock sets the clock of the circuit breaker, so that tests can end its
// cool-down without waiting.
func WithBreakerClock(now func() time.Time) Option {
	return func(o *options) { o.breakerNow = now }
}
