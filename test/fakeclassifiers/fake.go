// Package fakeclassifiers holds test doubles of the classifier backends the guard calls,
// speaking their real wire formats: an OpenAI /v1/moderations endpoint (NewModeration),
// an OpenAI-compatible /v1/chat/completions judge (NewJudge) and a guardrail.dev webhook
// (NewWebhook). Unit tests, envtest suites and end-to-end suites share them.
//
// A Fake is an http.Handler. Each request is answered by the next queued Reply (Enqueue),
// or, when the queue is empty, by the Respond function; with neither, it gets a 400 that
// says no reply was scripted. A Reply is a status and a body — built for the format by
// the helpers (ModerationScores, JudgeJSON, JudgeText, JudgeRefusal, WebhookScores,
// WebhookAnswers) or verbatim (Raw) for malformed bodies — plus an optional delay or a
// hang that lasts until the client cancels. Every request is recorded with its headers,
// body and the judged text and parts decoded from the format, and the Fake tracks how many
// requests it serves at once.
//
//	f := fakeclassifiers.NewModeration().Enqueue(
//		fakeclassifiers.Repeat(2, fakeclassifiers.Status(503))...,
//	).Respond(func(r fakeclassifiers.Request) fakeclassifiers.Reply {
//		return fakeclassifiers.ModerationScores(fakeclassifiers.Scores{"violence": 0.9})
//	})
//	srv := f.Start(t) // loopback, closed when the test ends
package fakeclassifiers

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// maxBody bounds a request body the fakes read.
const maxBody = 8 << 20

// Reply is a fake's answer to one request.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Body is sent verbatim.
	Body string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Delay holds the reply back; a cancelled request ends the wait.
	Delay time.Duration
	// Hang holds the reply until the request is cancelled (or the Fake is closed).
	Hang bool
}

// After returns r delayed by d.
func (r Reply) After(d time.Duration) Reply {
	r.Delay = d
	return r
}

// Raw returns a 200 reply with body sent verbatim: malformed JSON, a wrong envelope.
func Raw(body string) Reply { return Reply{Body: body} }

// Status returns a reply with the given status and an OpenAI-shaped error body.
func Status(code int) Reply {
	return Reply{Status: code, Body: `{"error":{"message":"fake failure","type":"server_error","code":"` + strconv.Itoa(code) + `"}}`}
}

// RateLimited returns a 429 reply with the given Retry-After ("" for none).
func RateLimited(retryAfter string) Reply {
	r := Status(http.StatusTooManyRequests)
	r.RetryAfter = retryAfter
	return r
}

// Hang returns a reply that never comes: the request is held until the client cancels it.
func Hang() Reply { return Reply{Hang: true} }

// Repeat returns n copies of r, for "fail n times, then succeed" scripts.
func Repeat(n int, r Reply) []Reply {
	out := make([]Reply, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// Part is a media part of a request, as the fakes decode it.
type Part struct {
	// Type is image, audio or file.
	Type string
	// URL is the part's URL, data or file id as sent.
	URL string
}

// Request is a request a Fake received.
type Request struct {
	Header http.Header
	Body   []byte
	// Texts are the judged texts: one per input of a moderation request, otherwise one
	// (the user message of a judge — for llamaGuard, the whole task prompt — or the text
	// of a webhook).
	Texts []string
	// Parts are the media parts, in order.
	Parts []Part
	// System is a judge request's system message.
	System string
}

// Text returns the first judged text, or "".
func (r Request) Text() string {
	if len(r.Texts) == 0 {
		return ""
	}
	return r.Texts[0]
}

// Decode decodes the body into v.
func (r Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// Fake is a scriptable classifier endpoint. It is safe for concurrent use.
type Fake struct {
	// decode extracts texts, parts and the system prompt of the fake's format.
	decode func(body []byte, r *Request) error

	closeOnce sync.Once
	closed    chan struct{}

	mu          sync.Mutex
	queue       []Reply
	respond     func(Request) Reply
	requests    []Request
	inFlight    int
	maxInFlight int
}

func newFake(decode func([]byte, *Request) error) *Fake {
	return &Fake{decode: decode, closed: make(chan struct{})}
}

// Enqueue adds replies for the next requests, in order.
func (f *Fake) Enqueue(rs ...Reply) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, rs...)
	return f
}

// Respond sets the function answering requests once the queue is empty.
func (f *Fake) Respond(fn func(Request) Reply) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.respond = fn
	return f
}

// Requests returns the requests received so far, in arrival order.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Count returns how many requests were received.
func (f *Fake) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// InFlight returns how many requests are being served now.
func (f *Fake) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

// MaxInFlight returns the most requests served at once.
func (f *Fake) MaxInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInFlight
}

// Close releases every hanging or delayed request, which then gets a 503; later requests
// are answered as scripted. Start calls it when the test ends.
func (f *Fake) Close() { f.closeOnce.Do(func() { close(f.closed) }) }

// Start serves f on a loopback httptest server that is closed when tb ends, and returns
// it; its URL is the endpoint URL to configure.
func (f *Fake) Start(tb testing.TB) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	tb.Cleanup(f.Close) // runs first: releases hanging handlers so that Close returns
	return srv
}

// ServeHTTP records the request and answers it as scripted.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "fakeclassifiers: POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "fakeclassifiers: cannot read the body", http.StatusBadRequest)
		return
	}
	req := Request{Header: r.Header.Clone(), Body: body}
	decodeErr := f.decode(body, &req)

	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	var reply Reply
	var queued bool
	respond := f.respond
	if decodeErr == nil && len(f.queue) > 0 {
		reply, f.queue, queued = f.queue[0], f.queue[1:], true
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()

	switch {
	case decodeErr != nil:
		http.Error(w, "fakeclassifiers: request is not of the format: "+decodeErr.Error(), http.StatusBadRequest)
		return
	case queued:
	case respond != nil:
		reply = respond(req)
	default:
		http.Error(w, "fakeclassifiers: no reply scripted", http.StatusBadRequest)
		return
	}
	if !f.wait(r, reply) {
		if r.Context().Err() == nil {
			http.Error(w, "fakeclassifiers: closed", http.StatusServiceUnavailable)
		}
		return
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(cmp.Or(reply.Status, http.StatusOK))
	_, _ = io.WriteString(w, reply.Body)
}

// wait applies the reply's delay or hang; false when the request or the Fake ended first.
func (f *Fake) wait(r *http.Request, reply Reply) bool {
	var timer <-chan time.Time
	switch {
	case reply.Hang:
	case reply.Delay > 0:
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		timer = t.C
	default:
		return true
	}
	select {
	case <-timer:
		return true
	case <-r.Context().Done():
	case <-f.closed:
	}
	return false
}
