package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/remote"
	fake "github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
)

// slack is the scheduling allowance of timing assertions on a busy two-core machine.
const slack = 250 * time.Millisecond

var okScores = fake.WebhookScores(fake.Scores{"violence": 0.5, "hate": 0})

func TestDeadlinesEndCallsWithTimeout(t *testing.T) {
	cases := []struct {
		name  string
		reply fake.Reply
	}{
		{"a reply slower than the timeout is a timeout", okScores.After(5 * time.Second)},
		{"a server that hangs past the deadline is a timeout", fake.Hang()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fake.NewWebhook().Enqueue(tc.reply)
			srv := f.Start(t)
			k := newClassifier(t, webhookSpec(srv.URL, timeout(200*time.Millisecond), retries(3), token(secretToken)))
			start := time.Now()
			_, err := classifyText(k, "slow words")
			elapsed := time.Since(start)
			wantCode(t, err, classify.CodeTimeout, "slow words", srv.URL)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
			}
			if elapsed < 200*time.Millisecond || elapsed > 200*time.Millisecond+slack {
				t.Errorf("call took %v, want about the 200ms timeout", elapsed)
			}
			eventually(t, "the server seeing the request end", func() bool { return f.InFlight() == 0 })
			if f.Count() != 1 {
				t.Errorf("%d requests, want 1: a deadline is not retried", f.Count())
			}
		})
	}
}

func TestRetries(t *testing.T) {
	cases := []struct {
		name     string
		retries  int
		script   []fake.Reply
		wantCode classify.Code // "" for success
		attempts int
		atLeast  time.Duration
	}{
		{"a 503 twice then success is answered within the budget", 2,
			append(fake.Repeat(2, fake.Status(503)), okScores), "", 3, 0},
		{"a 500 beyond the retries fails after retries+1 attempts", 2,
			fake.Repeat(4, fake.Status(500)), classify.CodeClassifierFailed, 3, 0},
		{"a 429 without retries fails at once", 0,
			[]fake.Reply{fake.RateLimited(""), okScores}, classify.CodeClassifierFailed, 1, 0},
		{"a 429 is retried after its Retry-After", 1,
			[]fake.Reply{fake.RateLimited("1"), okScores}, "", 2, time.Second},
		{"a 400 is not retried", 3,
			[]fake.Reply{fake.Status(400), okScores}, classify.CodeClassifierFailed, 1, 0},
		{"a 401 is not retried", 3,
			[]fake.Reply{fake.Status(401), okScores}, classify.CodeClassifierFailed, 1, 0},
		{"a Retry-After beyond the deadline is not waited for", 3,
			[]fake.Reply{fake.RateLimited("30"), okScores}, classify.CodeClassifierFailed, 1, 0},
		{"an invalid answer is not retried", 3,
			[]fake.Reply{fake.Raw("{"), okScores}, classify.CodeInvalidAnswer, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fake.NewWebhook().Enqueue(tc.script...)
			srv := f.Start(t)
			k := newClassifier(t, webhookSpec(srv.URL, retries(tc.retries), timeout(3*time.Second), token(secretToken)))
			start := time.Now()
			res, err := classifyText(k, "judged words")
			elapsed := time.Since(start)
			if tc.wantCode == "" {
				if err != nil || res.Scores[0] != 0.5 {
					t.Fatalf("Classify = %v, %v; want the scores", res.Scores, err)
				}
			} else {
				wantCode(t, err, tc.wantCode, "judged words", srv.URL)
			}
			if f.Count() != tc.attempts {
				t.Errorf("%d attempts, want %d", f.Count(), tc.attempts)
			}
			if elapsed < tc.atLeast || elapsed > tc.atLeast+slack {
				t.Errorf("call took %v, want %v plus scheduling", elapsed, tc.atLeast)
			}
		})
	}
}

func TestTransportErrorsAreRetried(t *testing.T) {
	f := fake.NewWebhook().Enqueue(okScores)
	var dropped atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dropped.Add(1) <= 2 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close() // the client sees the connection end without a reply
			}
			return
		}
		f.ServeHTTP(w, r)
	})
	srv := startServer(t, h)
	res, err := classifyText(newClassifier(t, webhookSpec(srv, retries(2), timeout(2*time.Second))), "x")
	if err != nil || res.Scores[0] != 0.5 {
		t.Fatalf("Classify = %v, %v; want success on the third attempt", res.Scores, err)
	}
	if dropped.Load() != 3 {
		t.Errorf("%d attempts, want 3", dropped.Load())
	}

	// Nothing listens on a closed server's port: every attempt is a transport error.
	closed := httptest.NewServer(h)
	closed.Close()
	_, err = classifyText(newClassifier(t, webhookSpec(closed.URL, retries(1), token(secretToken))), "x")
	wantCode(t, err, classify.CodeClassifierFailed)
}

func TestRetriesNeverExceedTheTimeoutBudget(t *testing.T) {
	cases := []struct {
		name    string
		reply   fake.Reply
		budget  time.Duration
		backoff time.Duration
	}{
		{"slow 503s with backoff stop before the deadline", fake.Status(503).After(80 * time.Millisecond), 400 * time.Millisecond, 100 * time.Millisecond},
		{"fast 503s with a long backoff stop before the deadline", fake.Status(503), 300 * time.Millisecond, 200 * time.Millisecond},
		{"429s asking for more than the budget stop at once", fake.RateLimited("2"), 500 * time.Millisecond, time.Millisecond},
		{"hanging attempts spend the budget once", fake.Hang(), 300 * time.Millisecond, time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fake.NewWebhook().Respond(func(fake.Request) fake.Reply { return tc.reply })
			srv := f.Start(t)
			k := newClassifier(t, webhookSpec(srv.URL, retries(3), timeout(tc.budget)), remote.WithBackoff(tc.backoff))
			start := time.Now()
			_, err := classifyText(k, "x")
			elapsed := time.Since(start)
			if code := classify.CodeOf(err); code != classify.CodeTimeout && code != classify.CodeClassifierFailed {
				t.Fatalf("error = %v, want TIMEOUT or the last CLASSIFIER_FAILED", err)
			}
			if elapsed > tc.budget+slack {
				t.Errorf("call took %v, beyond its %v budget", elapsed, tc.budget)
			}
			if n := f.Count(); n < 1 || n > 4 {
				t.Errorf("%d attempts, want 1 to 4", n)
			}
		})
	}
}

func TestCache(t *testing.T) {
	f := fake.NewWebhook().Respond(func(r fake.Request) fake.Reply {
		if r.Text() == "broken" {
			return fake.Status(500)
		}
		return fake.WebhookScores(fake.Scores{"violence": float64(len(r.Text())) / 100, "hate": 0})
	})
	srv := f.Start(t)
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	k := newClassifier(t, webhookSpec(srv.URL, cached(time.Minute, 2)), remote.WithClock(clock))
	call := func(text string) classify.Result {
		t.Helper()
		res, _ := classifyText(k, text)
		return res
	}
	steps := []struct {
		name     string
		do       func()
		text     string
		requests int
	}{
		{"a first call asks the backend", nil, "alpha", 1},
		{"the same input is answered from the cache", nil, "alpha", 1},
		{"a changed result slice does not change the cache", func() { call("alpha").Scores[0] = 0.99 }, "alpha", 1},
		{"another input asks the backend", nil, "beta", 2},
		{"an entry expires after its ttl", func() { now = now.Add(time.Minute) }, "alpha", 3},
		{"a third input evicts the least recently used entry", func() { call("gamma") }, "beta", 5},
		{"errors are not cached", func() { call("broken") }, "broken", 7},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		res := call(s.text)
		if got := f.Count(); got != s.requests {
			t.Errorf("%s: %d requests, want %d", s.name, got, s.requests)
		}
		if s.text != "broken" && (res.Scores == nil || res.Scores[0] != float64(len(s.text))/100) {
			t.Errorf("%s: scores = %v", s.name, res.Scores)
		}
	}
}

func TestCacheKeysOnPartsToo(t *testing.T) {
	f := fake.NewWebhook().Respond(func(fake.Request) fake.Reply { return okScores })
	srv := f.Start(t)
	k := newClassifier(t, webhookSpec(srv.URL, cached(time.Minute, 10), modalities(classify.Text, classify.Image)))
	for _, url := range []string{"https://a.example/1.png", "https://a.example/2.png", "https://a.example/1.png"} {
		in := classify.Input{Text: "same", Parts: []classify.Part{{Modality: classify.Image, URL: url}}}
		if _, err := k.Classify(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	if f.Count() != 2 {
		t.Errorf("%d requests, want 2: inputs differing only in a part's URL are different", f.Count())
	}
}

func TestConcurrencyLimitHoldsUnder200ParallelCalls(t *testing.T) {
	f := fake.NewWebhook().Respond(func(fake.Request) fake.Reply { return okScores.After(5 * time.Millisecond) })
	srv := f.Start(t)
	k := newClassifier(t, webhookSpec(srv.URL, concurrency(4), timeout(30*time.Second)))
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 200 {
		wg.Go(func() {
			if _, err := classifyText(k, "x"); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() != 0 || f.Count() != 200 {
		t.Fatalf("%d failures, %d requests; want 200 successful requests", failed.Load(), f.Count())
	}
	if got := f.MaxInFlight(); got > 4 || got < 2 {
		t.Errorf("max in flight = %d, want at most the limit of 4 (and some parallelism)", got)
	}
}

func TestWaitingForASlotEndsWithTheContext(t *testing.T) {
	f := fake.NewWebhook().Enqueue(fake.Hang())
	srv := f.Start(t)
	k := newClassifier(t, webhookSpec(srv.URL, concurrency(1)))
	go func() { _, _ = classifyText(k, "first") }()
	eventually(t, "the first call reaching the server", func() bool { return f.InFlight() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := k.Classify(ctx, classify.Input{Text: "second"})
	wantCode(t, err, classify.CodeTimeout)
	if f.Count() != 1 {
		t.Errorf("%d requests, want 1: the second call never got a slot", f.Count())
	}
}

func TestCancellingTheContextEndsAnInFlightCall(t *testing.T) {
	f := fake.NewJudge().Enqueue(fake.Hang())
	srv := f.Start(t)
	k := newClassifier(t, judgeSpec(srv.URL, remote.JudgeScores, retries(3)))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := k.Classify(ctx, classify.Input{Text: "x"})
	if elapsed := time.Since(start); elapsed > 50*time.Millisecond+slack {
		t.Errorf("call took %v after a cancellation at 50ms", elapsed)
	}
	if !errors.Is(err, context.Canceled) || classify.CodeOf(err) != classify.CodeClassifierFailed {
		t.Errorf("error = %v, want CLASSIFIER_FAILED wrapping context.Canceled", err)
	}
	eventually(t, "the server seeing the request end", func() bool { return f.InFlight() == 0 })
	if f.Count() != 1 {
		t.Errorf("%d requests, want 1: a cancelled call is not retried", f.Count())
	}
}

func TestTheTokenIsABearerHeaderAndInNoError(t *testing.T) {
	f := fake.NewModeration().Enqueue(fake.Status(401), fake.Status(503), fake.Raw("nope"), fake.Hang(),
		fake.ModerationScores(fake.Scores{"violence": 0, "hate": 0}))
	srv := f.Start(t)
	k := newClassifier(t, moderationSpec(srv.URL+"/v1/moderations?key=query-secret", token(secretToken), timeout(200*time.Millisecond)))
	for i := range 4 {
		_, err := classifyText(k, "private words")
		if err == nil {
			t.Fatalf("call %d succeeded, want a failure", i)
		}
		wantCode(t, err, classify.CodeOf(err), "private words", "query-secret", "/v1/moderations")
	}
	if _, err := classifyText(k, "fine"); err != nil {
		t.Fatal(err)
	}
	for i, r := range f.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer "+secretToken {
			t.Errorf("request %d Authorization = %q, want the bearer token", i, got)
		}
	}

	g := fake.NewModeration().Enqueue(fake.ModerationScores(fake.Scores{"violence": 0, "hate": 0}))
	anon := g.Start(t)
	if _, err := classifyText(newClassifier(t, moderationSpec(anon.URL)), "x"); err != nil {
		t.Fatal(err)
	}
	if h, ok := g.Requests()[0].Header["Authorization"]; ok {
		t.Errorf("Authorization = %q sent by a classifier without a token", h)
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	target := fake.NewWebhook().Respond(func(fake.Request) fake.Reply { return okScores })
	to := target.Start(t)
	from := startServer(t, http.RedirectHandler(to.URL, http.StatusTemporaryRedirect))
	_, err := classifyText(newClassifier(t, webhookSpec(from, token(secretToken))), "x")
	wantCode(t, err, classify.CodeClassifierFailed)
	if !strings.Contains(err.Error(), "HTTP 307") {
		t.Errorf("error = %v, want it to name the status", err)
	}
	if target.Count() != 0 {
		t.Error("the redirect was followed, with the token")
	}
}

func TestMaxInputCharsKeepsTheFirstCharacters(t *testing.T) {
	f := fake.NewWebhook().Respond(func(fake.Request) fake.Reply { return okScores })
	srv := f.Start(t)
	k := newClassifier(t, webhookSpec(srv.URL, maxChars(5)))
	for text, want := range map[string]string{"héllo wörld": "héllo", "short": "short", "日本語のテキスト": "日本語のテ"} {
		if _, err := classifyText(k, text); err != nil {
			t.Fatal(err)
		}
		if got := f.Requests()[f.Count()-1].Text(); got != want {
			t.Errorf("sent %q for %q, want %q", got, text, want)
		}
	}
}
