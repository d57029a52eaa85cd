package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom/promtest"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// stalledClient sends a request over a raw connection with a small receive buffer and
// reads nothing until told to.
type stalledClient struct {
	conn net.Conn
}

func newStalledClient(t *testing.T, h *harness, path, body string) *stalledClient {
	t.Helper()
	d := net.Dialer{Control: nil}
	conn, err := d.DialContext(t.Context(), "tcp", h.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: guard\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	if err != nil {
		t.Fatal(err)
	}
	return &stalledClient{conn: conn}
}

// providerProgress returns how many bytes the provider has written so far.
func providerProgress(p *fakeprovider.Provider) int {
	n := 0
	for _, r := range p.Responses() {
		n += len(r.Body)
	}
	return n
}

// waitStalled waits until the provider's progress stops moving (unchanged over 20
// polls), and returns it. A guard that buffers without bound would let the provider
// write everything instead.
func waitStalled(t *testing.T, p *fakeprovider.Provider) int {
	t.Helper()
	last, same := -1, 0
	eventually(t, "the provider to be held back", func() bool {
		n := providerProgress(p)
		if n == last && n > 0 {
			same++
		} else {
			last, same = n, 0
		}
		time.Sleep(15 * time.Millisecond)
		return same >= 20
	})
	return last
}

func TestSlowClientHoldsTheProviderBack(t *testing.T) {
	const delta = 16 << 10
	const deltas = 4096 // 64 MiB of answer
	text := strings.Repeat("a", delta-1) + " "
	script := fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Chunks(strings.Repeat(text, deltas), delta)}}}
	total := deltas * delta

	for _, tc := range []struct {
		name, policy string
		// resume: the client reads the rest and must get all of it; otherwise it leaves.
		resume bool
	}{
		{"with nothing to judge in the stream", inputPolicy, true},
		{"with a streaming guardrail holding text back", strings.Replace(streamPolicy, "reason:", "maxInputChars: 4096\n  streaming: {evaluateEveryChars: 1024, holdBackChars: 2048}\n  reason:", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy)
			h.p.Enqueue(script)
			c := newStalledClient(t, h, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)

			written := waitStalled(t, h.p)
			t.Logf("the provider wrote %d of %d bytes while the client read nothing", written, total)
			if written > total/4 {
				t.Fatalf("the provider wrote %d of %d bytes to a client that reads nothing: the guard buffers", written, total)
			}

			if !tc.resume {
				_ = c.conn.Close()
				if _, err := h.p.WaitDisconnect(t.Context()); err != nil {
					t.Fatal(err)
				}
				return
			}
			// The client reads again: the whole stream arrives.
			resp, err := http.ReadResponse(bufio.NewReaderSize(c.conn, 64<<10), nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			sent := len(h.p.Responses()[0].Body)
			if sent < total || n < int64(total) {
				t.Errorf("the client received %d bytes, the provider sent %d of a %d byte answer", n, sent, total)
			}
		})
	}
}

func TestStalledClientIsDroppedAfterTheWriteIdleTimeout(t *testing.T) {
	big := fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Chunks(strings.Repeat("b", 16<<20), 16<<10)}}}
	for _, tc := range []struct{ name, body string }{
		{"a stream", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"a whole response", chatBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.WriteIdleTimeout = 200 * time.Millisecond }))
			h.p.Enqueue(big)
			newStalledClient(t, h, "/v1/chat/completions", tc.body)
			eventually(t, "the guard to drop the client", func() bool { return h.clientConns.closedCount() == 1 })
		})
	}
}

func TestClientDisconnectCancelsTheUpstreamRequest(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"chat completions", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, streamPolicy)
			// One event every 10ms for about 10s: the client leaves long before the end.
			h.p.Enqueue(fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Chunks(strings.Repeat("word ", 1000), 5)}},
				Delay: 10 * time.Millisecond})
			ctx, cancel := context.WithCancel(t.Context())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.srv.URL+tc.path, strings.NewReader(tc.body))
			resp, err := h.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			cancel()
			_ = resp.Body.Close()

			wait, stop := context.WithTimeout(t.Context(), 30*time.Second)
			defer stop()
			d, err := h.p.WaitDisconnect(wait)
			if err != nil {
				t.Fatal("the upstream request was not cancelled:", err)
			}
			if d.Path != tc.path || d.EventsSent >= 1000 {
				t.Errorf("disconnect %+v", d)
			}
			eventually(t, "the stream to be recorded as client_gone", func() bool {
				return h.counter(t, "guard_streams_aborted_total", "reason", "client_gone") == 1
			})
		})
	}
}

func TestMalformedUpstreamStreamIsARecordedFailure(t *testing.T) {
	good := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n"
	for _, tc := range []struct {
		name, path, body, raw string
		want                  string
	}{
		{name: "a chat event that is not JSON", path: "/v1/chat/completions", raw: good + "data: {not json\n\n",
			want: `data: {"error":{"message":"policy evaluation failed","type":"server_error","param":null,"code":"policy_evaluation_failed"}}`},
		{name: "a chat stream cut inside an event", path: "/v1/chat/completions", raw: good + `data: {"id":"c","cho`,
			want: `"code":"policy_evaluation_failed"`},
		{name: "a messages event that is not JSON", path: "/v1/messages", raw: "event: message_start\ndata: {nope\n\n",
			want: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"policy evaluation failed\",\"details\":{\"error_code\":\"policy_evaluation_failed\"}}}"},
		{name: "a responses event that is not JSON", path: "/v1/responses", raw: "event: response.created\ndata: [1,2\n\n",
			want: `"code":"policy_evaluation_failed"`},
		{name: "an event larger than the guard reads", path: "/v1/chat/completions", raw: "data: " + strings.Repeat("x", 32<<20) + "\n\n",
			want: `"code":"policy_evaluation_failed"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, streamPolicy)
			h.p.Enqueue(fakeprovider.Script{Raw: []byte(tc.raw), RawChunks: 3})
			body := map[string]string{
				"/v1/chat/completions": `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
				"/v1/messages":         `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
				"/v1/responses":        `{"model":"m","stream":true,"input":"hi"}`,
			}[tc.path]
			resp, b := h.post(t, tc.path, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			events := sseEvents(b)
			if len(events) == 0 || !strings.Contains(string(events[len(events)-1]), tc.want) {
				t.Errorf("stream ends %q, want an error event with %s", lastOf(events), tc.want)
			}
			if v := h.counter(t, "guard_streams_aborted_total", "reason", "upstream_malformed"); v != 1 {
				t.Errorf(`guard_streams_aborted_total{reason="upstream_malformed"} = %v, want 1`, v)
			}
			if v := h.counter(t, "guard_requests_total", "outcome", "failed"); v != 1 {
				t.Errorf(`guard_requests_total{outcome="failed"} = %v, want 1`, v)
			}
			// And the proxy still serves.
			if resp, _ := h.post(t, "/v1/chat/completions", chatBody); resp.StatusCode != http.StatusOK {
				t.Errorf("next request: %d", resp.StatusCode)
			}
		})
	}
}

func lastOf(events [][]byte) string {
	if len(events) == 0 {
		return ""
	}
	e := string(events[len(events)-1])
	if len(e) > 300 {
		e = e[:300] + "…"
	}
	return e
}

// TestCompletedStreamsAreCounted: a stream that ends with its terminator is counted as
// an allowed request, once, in every family.
func TestCompletedStreamsAreCounted(t *testing.T) {
	for _, tc := range []struct{ family, path, body string }{
		{"chat/completions", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.family, func(t *testing.T) {
			h := newHarness(t, streamPolicy)
			h.p.Enqueue(fakeprovider.Reply("all ", "good"))
			h.post(t, tc.path, tc.body)
			if v := h.counter(t, "guard_requests_total", "family", tc.family, "outcome", "allowed"); v != 1 {
				t.Errorf(`guard_requests_total{family=%q,outcome="allowed"} = %v, want 1`, tc.family, v)
			}
		})
	}
}

// TestBlockedStreamSendsTheReasonBeforeWaitingForUsage: after a block, the reason and
// the finish reach the client at once; the usage chunk and [DONE] follow when the
// provider's usage arrives, and not later than usageWait when it does not.
func TestBlockedStreamSendsTheReasonBeforeWaitingForUsage(t *testing.T) {
	const gap = 300 * time.Millisecond
	chunk := func(body string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":` + body + "}\n\n"
	}
	for _, tc := range []struct {
		name      string
		sendUsage bool
		// minEnd and maxEnd bound the time from the reason to the end of the stream.
		minEnd, maxEnd time.Duration
		wantUsage      bool
	}{
		{"the provider's usage comes after a pause", true, gap - 50*time.Millisecond, usageWait, true},
		{"the provider never sends its usage", false, usageWait - 50*time.Millisecond, usageWait + time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				rc := http.NewResponseController(w)
				_, _ = io.WriteString(w, chunk(`[{"index":0,"delta":{"role":"assistant","content":"Say "},"finish_reason":null}],"usage":null`))
				_, _ = io.WriteString(w, chunk(`[{"index":0,"delta":{"content":"bluebird"},"finish_reason":null}],"usage":null`))
				_, _ = io.WriteString(w, chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null`))
				_ = rc.Flush()
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
				if tc.sendUsage {
					_, _ = io.WriteString(w, chunk(`[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}`))
					_, _ = io.WriteString(w, "data: [DONE]\n\n")
					return
				}
				<-r.Context().Done()
			})
			up := startUpstream(t, upstream)
			h := newHarness(t, streamPolicy, withConfig(func(c *Config) { c.OpenAIUpstream = up }))
			resp := h.open(t, http.MethodPost, "/v1/chat/completions",
				`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
			var reasonAt, endAt time.Time
			var usage bool
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.Contains(line, `"finish_reason":"content_filter"`):
					reasonAt = time.Now()
				case strings.Contains(line, `"usage":{`):
					usage = true
				case line == "data: [DONE]":
					endAt = time.Now()
				}
			}
			if reasonAt.IsZero() || endAt.IsZero() {
				t.Fatalf("the stream has no content_filter finish or no [DONE]")
			}
			if d := endAt.Sub(reasonAt); d < tc.minEnd || d > tc.maxEnd {
				t.Errorf("[DONE] came %v after the finish, want between %v and %v", d, tc.minEnd, tc.maxEnd)
			}
			if usage != tc.wantUsage {
				t.Errorf("usage chunk sent: %v, want %v", usage, tc.wantUsage)
			}
		})
	}
}

// startUpstream serves h as a provider for the test and returns its URL.
func startUpstream(t *testing.T, h http.Handler) *url.URL {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestStreamsAfterCutAndGrownStreamsStartClean: streams share their buffers through a pool.
// A stream cut inside an event (bytes left in the reader), one whose 40 KiB event grew the
// reader past what the pool keeps, and a blocked one must leave nothing behind: each later
// stream's client reads exactly its own answer. The answers end in "blue", which could
// begin "bluebird" and is held back until the end of the stream: a streamer that carried a
// finished stream's state into the next would never release it.
func TestStreamsAfterCutAndGrownStreamsStartClean(t *testing.T) {
	h := newHarness(t, streamPolicy)
	const streamBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	long := strings.Repeat("0123456789abcdef", 40<<10/16)
	answers := []struct {
		name   string
		script fakeprovider.Script
		// want is the client's content; when the stream fails or is blocked, never is what
		// must not reach the client instead.
		want, never string
	}{
		{"cut inside an event", fakeprovider.Script{Raw: []byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"left`), RawChunks: 2}, "", "left"},
		{"ordinary", fakeprovider.Reply("all ", "good ", "blue"), "all good blue", ""},
		{"a 40 KiB delta", fakeprovider.Reply("start ", long, " end"), "start " + long + " end", ""},
		{"blocked", fakeprovider.Reply("about ", "blue", "bird"), "", "blue"},
		{"ordinary again", fakeprovider.Reply("still ", "good ", "blue"), "still good blue", ""},
		{"one more", fakeprovider.Reply("x ", "blue"), "x blue", ""},
	}
	// Rounds: a pool keeps a buffer per processor, so a handler on another one may not
	// get the last stream's; over rounds each kind of stream follows the others.
	for round := range 10 {
		for _, a := range answers {
			h.p.Enqueue(a.script)
			resp, b := h.post(t, "/v1/chat/completions", streamBody)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("round %d, %s: status %d", round, a.name, resp.StatusCode)
			}
			got, done, err := fakeprovider.ChatStreamText(b)
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, a.name, err)
			}
			if a.never != "" {
				if strings.Contains(got, a.never) {
					t.Fatalf("round %d, %s: the client got %q", round, a.name, got)
				}
				continue
			}
			if got != a.want || !done {
				t.Fatalf("round %d, %s: the client got %d bytes ending %q (terminated: %v), want exactly the %d of the answer",
					round, a.name, len(got), got[max(0, len(got)-20):], done, len(a.want))
			}
		}
	}
	// Every answer that reached its end was judged whole (Output), and nothing is counted
	// as held back once all streams are over.
	if n := h.counter(t, "guard_decisions_total", "phase", "Output", "outcome", "allowed"); n != 40 {
		t.Errorf("Output decisions: %v, want one per answer that ended, 40", n)
	}
	var text bytes.Buffer
	if err := h.tel.Registry.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if held := promtest.Parse(t, text.String())["guard_held_back_bytes"].GetMetric()[0].GetGauge().GetValue(); held != 0 {
		t.Errorf("guard_held_back_bytes = %v after every stream ended, want 0", held)
	}
}

// TestTerminatorIsNotHeldForTheUpstreamsEnd: the client's stream is complete when its
// terminator arrives (the SDKs stop reading at [DONE], message_stop, response.completed),
// so the guard flushes it before reading the rest of the upstream's body. The provider here
// sends a whole answer (the fake provider's, per family) and then keeps its body open until
// the test's client has read the terminator; a guard that held the terminator back until
// the upstream's body ended would only send it when its drain gave up on the provider
// (drainTimeout) and cancelled it.
func TestTerminatorIsNotHeldForTheUpstreamsEnd(t *testing.T) {
	for _, tc := range []struct{ family, path, body, terminator string }{
		{"chat/completions", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"data: [DONE]\n\n"},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`, "event: response.completed\n"},
	} {
		t.Run(tc.family, func(t *testing.T) {
			answer, err := fakeprovider.Record(t.Context(), fakeprovider.Reply("all ", "good"), tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			clientDone := make(chan struct{})
			flushed := make(chan time.Time, 1)
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(answer)
				_ = http.NewResponseController(w).Flush()
				flushed <- time.Now()
				select {
				case <-clientDone:
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			})
			up := startUpstream(t, upstream)
			h := newHarness(t, streamPolicy, withConfig(func(c *Config) { c.OpenAIUpstream, c.AnthropicUpstream = up, up }))
			resp := h.open(t, http.MethodPost, tc.path, tc.body)
			got, err := readThrough(resp.Body, tc.terminator)
			if err != nil {
				t.Fatalf("the stream ended without its terminator (%v): %q", err, got)
			}
			close(clientDone)
			if d := time.Since(<-flushed); d >= drainTimeout/2 {
				t.Errorf("the client got the terminator %v after the provider sent it, with the provider's body still open (the drain gives up after %v)", d, drainTimeout)
			}
			if !strings.Contains(string(got), "good") {
				t.Errorf("the answer did not reach the client: %q", got)
			}
		})
	}
}

// TestClientsBodyEndsWhileTheProviderHoldsItsBody: the SDKs that read a stream to the end
// of its body (the Anthropic Go SDK, the Node SDKs) finish their loop only when the guard
// ends the client's body. When the provider keeps its body open after the terminator, the
// guard waits for it at most drainWait and drains the rest in the background: the client
// is done at once, the upstream connection is reused when the provider ends its body
// within drainTimeout, also after a client that closed its own connection at the
// terminator, and it is closed when the provider never ends its body.
func TestClientsBodyEndsWhileTheProviderHoldsItsBody(t *testing.T) {
	const streamBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name string
		hold time.Duration
		// toEOF: the client reads its body to the end; otherwise it stops at [DONE] and
		// closes the body, as openai-go does.
		toEOF     bool
		wantConns int
	}{
		{"the provider ends its body 300 ms after the terminator", 300 * time.Millisecond, true, 1},
		{"the client closes at the terminator", 300 * time.Millisecond, false, 1},
		{"the provider never ends its body", time.Minute, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type held struct {
				sent  time.Time
				ended chan struct{}
			}
			requests := make(chan held, 1)
			h := newHarness(t, streamPolicy, upstreamVia(func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					next.ServeHTTP(w, r)
					_ = http.NewResponseController(w).Flush()
					hd := held{sent: time.Now(), ended: make(chan struct{})}
					defer close(hd.ended)
					requests <- hd
					select {
					case <-time.After(tc.hold):
					case <-r.Context().Done():
					}
				})
			}))
			for round := range 3 {
				h.p.Enqueue(fakeprovider.Reply("all ", "good"))
				resp := h.open(t, http.MethodPost, "/v1/chat/completions", streamBody)
				var b []byte
				var err error
				if tc.toEOF {
					b, err = io.ReadAll(resp.Body)
				} else {
					b, err = readThrough(resp.Body, "data: [DONE]\n\n")
					_ = resp.Body.Close()
				}
				done := time.Now()
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				hd := <-requests
				if got, terminated, err := fakeprovider.ChatStreamText(b); err != nil || got != "all good" || !terminated {
					t.Fatalf("round %d: the client got %q (terminated: %v, %v)", round, got, terminated, err)
				}
				if d := done.Sub(hd.sent); d >= drainWait+100*time.Millisecond {
					t.Errorf("round %d: the client's body ended %v after the provider's terminator (the guard waits for the provider at most %v)", round, d, drainWait)
				}
				// The drain ends the upstream call in the background: with the provider's
				// end, or by closing the connection after drainTimeout.
				select {
				case <-hd.ended:
				case <-time.After(drainTimeout + 5*time.Second):
					t.Fatalf("round %d: the upstream call was still open %v after the terminator", round, drainTimeout+5*time.Second)
				}
				// The drained connection is back in the pool a moment after the provider's end.
				time.Sleep(100 * time.Millisecond)
			}
			if n := h.upstreamConns.count(); n != tc.wantConns {
				t.Errorf("3 sequential streams opened %d upstream connections, want %d", n, tc.wantConns)
			}
		})
	}
}

// readThrough reads a stream until the event that begins with marker has ended (its blank
// line), and returns what it read.
func readThrough(r io.Reader, marker string) ([]byte, error) {
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if i := bytes.Index(got, []byte(marker)); i >= 0 && bytes.Contains(got[i:], []byte("\n\n")) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}
