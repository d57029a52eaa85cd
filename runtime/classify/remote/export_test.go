package remote

import "time"

// WithBackoff sets the first retry's delay before jitter, so that tests can make backoff
// visible or negligible.
func WithBackoff(d time.Duration) Option {
	return func(o *options) { o.backoff = d }
}
