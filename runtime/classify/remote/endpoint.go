package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

const (
	// maxReplyBytes bounds a reply body; a longer reply is an invalid answer.
	maxReplyBytes = 1 << 20
	// maxDrainBytes is how much of an error body is read (and discarded) so that the
	// connection can be reused.
	maxDrainBytes = 64 << 10
	// maxRetries is the API's upper bound on Classifier.spec.retries.
	maxRetries = 3
	// maxBackoff caps one backoff delay.
	maxBackoff = 5 * time.Second
	// maxRetryAfter is the longest Retry-After honoured when the call has no deadline; a
	// longer one ends the call with the last error.
	maxRetryAfter = 10 * time.Second
)

// endpoint posts JSON to one backend URL: bearer authentication, a concurrency limit,
// bounded retries with backoff inside the caller's deadline, and bounded reply reads.
// Its errors are *classify.Error values that carry the HTTP status or a short reason,
// never the URL, the token or the request body.
type endpoint struct {
	name    string
	url     string
	token   Secret
	client  *http.Client
	retries int
	backoff time.Duration
	// sem holds one token per call in flight; nil when unlimited.
	sem chan struct{}
	// breaker fails calls at once while the backend is down; nil never does.
	breaker *breaker
}

// failure is the outcome of a failed attempt.
type failure struct {
	code   classify.Code
	reason string
	// retry is set for transport errors, 429 and 5xx.
	retry bool
	// after is the server's Retry-After (0 when absent).
	after time.Duration
	// cause is wrapped for errors.Is (a transport error); nil for HTTP statuses.
	cause error
}

// post sends body and returns the reply body of the first successful attempt. It waits
// for a concurrency slot (respecting ctx), retries transport errors, 429 and 5xx at most
// e.retries times with exponential backoff and jitter (or the server's Retry-After when
// longer), and never sleeps past ctx's deadline: when the next attempt could not start
// before it, post returns the last error at once. While the endpoint's breaker is open
// (breaker.go), post fails at once without a request.
func (e *endpoint) post(ctx context.Context, body []byte) ([]byte, error) {
	probe, err := e.breaker.allow(e.name)
	if err != nil {
		return nil, err
	}
	reply, f, err := e.call(ctx, body)
	// A failure that is not retried is the classifier's answer (a 4xx it chose): it is up.
	e.breaker.done(probe, err, err == nil || f != nil && !f.retry)
	return reply, err
}

// call is post's work under the breaker; it also returns the failure of the last attempt
// when the call failed with one.
func (e *endpoint) call(ctx context.Context, body []byte) ([]byte, *failure, error) {
	if e.sem != nil {
		select {
		case e.sem <- struct{}{}:
			defer func() { <-e.sem }()
		case <-ctx.Done():
			return nil, nil, e.ended(ctx, 0)
		}
	}
	for attempt := 1; ; attempt++ {
		reply, f := e.attempt(ctx, body)
		if f == nil {
			return reply, nil, nil
		}
		if ctx.Err() != nil {
			return nil, nil, e.ended(ctx, attempt)
		}
		if !f.retry || attempt > e.retries {
			return nil, f, e.failed(f, attempt)
		}
		delay := max(e.delay(attempt), f.after)
		dl, bounded := ctx.Deadline()
		if bounded && time.Until(dl) <= delay || !bounded && f.after > maxRetryAfter {
			return nil, f, e.failed(f, attempt)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil, e.ended(ctx, attempt)
		}
	}
}

// attempt makes one request.
func (e *endpoint) attempt(ctx context.Context, body []byte) ([]byte, *failure) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, &failure{code: classify.CodeClassifierFailed, reason: "cannot build the request"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "guardrail-guard")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+string(e.token))
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// A *url.Error names the URL, which may carry credentials in its query: keep
		// only the underlying cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &failure{code: classify.CodeClassifierFailed, reason: "transport error", retry: true, cause: err}
	}
	defer func() { _ = resp.Body.Close() }()
	status := resp.StatusCode
	if status < 200 || status > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
		f := &failure{code: classify.CodeClassifierFailed, reason: "HTTP " + strconv.Itoa(status)}
		if status == http.StatusTooManyRequests || status >= 500 {
			f.retry = true
			f.after = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return nil, f
	}
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return nil, &failure{code: classify.CodeClassifierFailed, reason: "reading the reply failed", retry: true, cause: err}
	}
	if len(reply) > maxReplyBytes {
		return nil, &failure{code: classify.CodeInvalidAnswer, reason: "reply is larger than 1 MiB"}
	}
	return reply, nil
}

// delay is the backoff before retry number attempt (1-based): the base doubled per retry,
// capped, with "equal jitter" (half fixed, half random) so that callers spread out.
func (e *endpoint) delay(attempt int) time.Duration {
	d := min(e.backoff<<(attempt-1), maxBackoff)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1) //nolint:gosec // jitter spreads retries; it needs no cryptographic randomness
}

// failed is the error of a call whose last attempt failed with f.
func (e *endpoint) failed(f *failure, attempts int) error {
	msg := e.name + ": " + f.reason
	if attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", attempts)
	}
	if f.cause != nil {
		return &classify.Error{Code: f.code, Err: fmt.Errorf("%s: %w", msg, f.cause)}
	}
	return &classify.Error{Code: f.code, Err: errors.New(msg)}
}

// ended is the error of a call whose context ended: TIMEOUT on a deadline, otherwise
// CLASSIFIER_FAILED wrapping context.Canceled.
func (e *endpoint) ended(ctx context.Context, attempts int) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if attempts == 0 {
			return &classify.Error{Code: classify.CodeTimeout,
				Err: fmt.Errorf("%s: deadline exceeded waiting for a concurrency slot: %w", e.name, context.DeadlineExceeded)}
		}
		return &classify.Error{Code: classify.CodeTimeout,
			Err: fmt.Errorf("%s: deadline exceeded in attempt %d: %w", e.name, attempts, context.DeadlineExceeded)}
	}
	return &classify.Error{Code: classify.CodeClassifierFailed, Err: fmt.Errorf("%s: call canceled: %w", e.name, context.Canceled)}
}

// retryAfter parses a Retry-After header (delay-seconds or an HTTP date); 0 when absent
// or invalid.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
