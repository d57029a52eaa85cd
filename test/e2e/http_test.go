package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// HTTP behaviour of the guard binary: routes, headers, limits, broken upstreams and
// clients that go away.

// inputOnly is a policy that guards prompts only, so responses take the guard's stream
// and response paths with nothing withheld.
func inputOnly(t *testing.T) string { return bluebird(t, v1alpha1.PhaseInput) }

// bluebird is the suite's keyword policy: guardrail default/no-bluebird blocks the word
// "bluebird" in the given phases, with the reason "Project Bluebird is not discussed here.".
func bluebird(t *testing.T, ps ...v1alpha1.Phase) string {
	return policyFile(t,
		keywordClassifier("words", "secret-project", "bluebird"),
		guardrail("no-bluebird", "words", phases(ps...), reason("Project Bluebird is not discussed here.")),
	)
}

func TestRoutes(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, inputOnly(t), upstream(p.URL))

	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
		// wantBody is a substring of the answer; forwarded tells whether the provider saw it.
		wantBody  string
		forwarded bool
	}{
		{name: "an unknown OpenAI POST route is refused in OpenAI's shape", method: http.MethodPost, path: "/v1/completions",
			body: `{"model":"m","prompt":"hi"}`, status: http.StatusNotFound, wantBody: `"code":"route_not_guarded"`},
		{name: "an unknown Anthropic POST route is refused in Anthropic's shape", method: http.MethodPost, path: "/v1/messages/count_tokens",
			body: `{"model":"m","messages":[]}`, header: anthropicHeaders, status: http.StatusNotFound, wantBody: `"type":"not_found_error"`},
		{name: "a DELETE is refused", method: http.MethodDelete, path: "/v1/files/file-1", status: http.StatusNotFound, wantBody: "route_not_guarded"},
		{name: "GET /v1/models passes through", method: http.MethodGet, path: "/v1/models", status: http.StatusOK,
			wantBody: `"object":"list"`, forwarded: true},
		{name: "a malformed guarded request is refused before the provider", method: http.MethodPost, path: "/v1/chat/completions",
			body: `{"model":`, status: http.StatusBadRequest, wantBody: `"type":"invalid_request_error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(p.Requests())
			req, err := http.NewRequestWithContext(testContext(t), tc.method, g.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, b, tc.status, tc.wantBody)
			}
			if forwarded := len(p.Requests()) > before; forwarded != tc.forwarded {
				t.Errorf("forwarded to the provider: %v, want %v", forwarded, tc.forwarded)
			}
			if tc.forwarded && string(b) != string(lastResponse(t, p).Body) {
				t.Errorf("pass-through body %s differs from the provider's %s", b, lastResponse(t, p).Body)
			}
		})
	}

	t.Run("a POST route listed in --pass-through is forwarded unguarded", func(t *testing.T) {
		g := startGuard(t, inputOnly(t), upstream(p.URL), flags("--pass-through", "/v1/completions"))
		resp, b := rawPost(t, g.URL+"/v1/completions", `{"model":"m","prompt":"bluebird"}`)
		last, _ := p.LastRequest()
		if last.Path != "/v1/completions" || string(b) != string(lastResponse(t, p).Body) || resp.StatusCode != lastResponse(t, p).Status {
			t.Errorf("%d %s; provider saw %s", resp.StatusCode, b, last.Path)
		}
	})
}

func TestCredentialsAndRequestIDsReachTheProvider(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, inputOnly(t), upstream(p.URL))
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)

	t.Run("the OpenAI SDK's Authorization header arrives untouched, with a new x-request-id", func(t *testing.T) {
		c := openaiClient(g)
		if _, err := c.Chat.Completions.New(testContext(t), chatParams("hi")); err != nil {
			t.Fatal(err)
		}
		last, _ := p.LastRequest()
		if got := last.Header.Get("Authorization"); got != "Bearer "+apiKey {
			t.Errorf("Authorization %q", got)
		}
		if id := last.Header.Get("X-Request-Id"); !hexID.MatchString(id) {
			t.Errorf("x-request-id %q, want a generated id", id)
		}
	})
	t.Run("the Anthropic SDK's credentials and anthropic-version arrive untouched", func(t *testing.T) {
		// This SDK version sends its API key as a bearer token; older ones (and curl users)
		// send x-api-key: both must arrive as sent.
		c := anthropicClient(g)
		if _, err := c.Messages.New(testContext(t), messageParams("hi"), antoption.WithHeader("x-api-key", apiKey+"-x")); err != nil {
			t.Fatal(err)
		}
		last, _ := p.LastRequest()
		if last.Path != "/v1/messages" || last.Header.Get("X-Api-Key") != apiKey+"-x" || last.Header.Get("Authorization") != "Bearer "+apiKey ||
			last.Header.Get("Anthropic-Version") == "" {
			t.Errorf("%s %v", last.Path, last.Header)
		}
	})
	t.Run("a client's own x-request-id and traceparent are kept", func(t *testing.T) {
		rawPost(t, g.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			"X-Request-Id", "req-from-app", "Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Authorization", "Bearer k")
		last, _ := p.LastRequest()
		if last.Header.Get("X-Request-Id") != "req-from-app" || last.Header.Get("Traceparent") == "" {
			t.Errorf("headers %v", last.Header)
		}
	})
	t.Run("a pass-through GET carries the credentials", func(t *testing.T) {
		c := openaiClient(g)
		if _, err := c.Models.List(testContext(t)); err != nil {
			t.Fatal(err)
		}
		last, _ := p.LastRequest()
		if last.Path != "/v1/models" || last.Header.Get("Authorization") != "Bearer "+apiKey || !hexID.MatchString(last.Header.Get("X-Request-Id")) {
			t.Errorf("%s %v", last.Path, last.Header)
		}
	})
}

func TestOversizedBodiesAreRefusedWith413(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, inputOnly(t), upstream(p.URL), flags("--max-body-bytes", "4096"))
	big := strings.Repeat("lorem ipsum ", 1000)

	t.Run("through the OpenAI SDK", func(t *testing.T) {
		c := openaiClient(g)
		_, err := c.Chat.Completions.New(testContext(t), chatParams(big))
		if apiErr, ok := errAs[*openai.Error](err); !ok || apiErr.StatusCode != http.StatusRequestEntityTooLarge || apiErr.Code != "request_too_large" {
			t.Errorf("got %v, want a 413 request_too_large", err)
		}
	})
	t.Run("through the Anthropic SDK", func(t *testing.T) {
		c := anthropicClient(g)
		_, err := c.Messages.New(testContext(t), messageParams(big))
		if apiErr, ok := errAs[*anthropic.Error](err); !ok || apiErr.StatusCode != http.StatusRequestEntityTooLarge || apiErr.Type() != "request_too_large" {
			t.Errorf("got %v, want a 413 request_too_large", err)
		}
	})
	t.Run("a body just under the limit is served", func(t *testing.T) {
		c := openaiClient(g)
		if _, err := c.Chat.Completions.New(testContext(t), chatParams("hi")); err != nil {
			t.Error(err)
		}
	})
	if n := len(p.Requests()); n != 1 {
		t.Errorf("the provider received %d requests, want only the small one", n)
	}
}

func TestMalformedUpstreamIsARecordedFailure(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, inputOnly(t), upstream(p.URL))
	c := openaiClient(g)

	for i, tc := range []struct {
		name string
		raw  string
	}{
		{"an event that is not JSON", "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {not json\n\n"},
		{"a stream cut inside an event", "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"id\":\"x\",\"cho"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Enqueue(fakeprovider.Script{Raw: []byte(tc.raw), RawChunks: 3})
			_, _, err := chatStream(testContext(t), c, chatParams("hi"))
			streamErr, ok := errAs[*ssestream.StreamError](err)
			if !ok || !strings.Contains(streamErr.Message, "policy_evaluation_failed") {
				t.Errorf("got %v (%T), want a policy_evaluation_failed stream error", err, err)
			}
			if v := g.metric(`guard_streams_aborted_total{reason="upstream_malformed"}`); v != float64(i+1) {
				t.Errorf(`guard_streams_aborted_total{reason="upstream_malformed"} = %v, want %d`, v, i+1)
			}
		})
	}
	t.Run("a whole response that is not JSON is a 500 policy_evaluation_failed", func(t *testing.T) {
		p.Enqueue(fakeprovider.Script{Raw: []byte(`{"id":"x","choices":[`)})
		_, err := c.Chat.Completions.New(testContext(t), chatParams("hi"))
		if apiErr, ok := errAs[*openai.Error](err); !ok || apiErr.StatusCode != http.StatusInternalServerError || apiErr.Code != "policy_evaluation_failed" {
			t.Errorf("got %v, want a 500 policy_evaluation_failed", err)
		}
	})
	t.Run("the guard keeps serving", func(t *testing.T) {
		if _, err := c.Chat.Completions.New(testContext(t), chatParams("hi")); err != nil {
			t.Error(err)
		}
	})
}

func TestUpstreamErrorsPassThroughUnchanged(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, inputOnly(t), upstream(p.URL))
	p.Enqueue(fakeprovider.Script{Error: &fakeprovider.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Message: "slow down", Code: "rate_limit_exceeded"}})
	resp, b := rawPost(t, g.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	sent := lastResponse(t, p)
	if resp.StatusCode != http.StatusTooManyRequests || string(b) != string(sent.Body) {
		t.Errorf("%d %s, want the provider's %d %s", resp.StatusCode, b, sent.Status, sent.Body)
	}
}

func TestClientDisconnectCancelsTheUpstreamRequest(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, inputOnly(t), upstream(p.URL))
	script := fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Chunks(strings.Repeat("word ", 2000), 10)}},
		Delay: 5e6} // 5ms between events: about 5s for the whole stream

	ctx, cancel := context.WithCancel(testContext(t))
	p.Enqueue(script)
	c := openaiClient(g)
	stream := c.Chat.Completions.NewStreaming(ctx, chatParams("hi"))
	for i := 0; i < 3 && stream.Next(); i++ {
	}
	cancel()
	_ = stream.Close()

	d, err := p.WaitDisconnect(testContext(t))
	if err != nil {
		t.Fatal("the provider's request was not cancelled:", err)
	}
	if d.Path != "/v1/chat/completions" || d.EventsSent >= 1002 {
		t.Errorf("disconnect %+v", d)
	}
	eventually(t, "the guard to record the client gone", func() bool {
		return g.metric(`guard_streams_aborted_total{reason="client_gone"}`) == 1
	})
}

// decisions reads a JSON-lines decision log.
func decisions(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("decision log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// TestCutShortRequestBodiesAreRefused: a client that stops sending before the end of its
// body (shorter than its Content-Length, or chunked without the last chunk) and waits for
// the answer gets a 400 in its API's error shape, never an empty 200.
func TestCutShortRequestBodiesAreRefused(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, inputOnly(t), upstream(p.URL))
	addr := strings.TrimPrefix(g.URL, "http://")
	const chat = `{"model":"gpt-e2e","messages":[{"role":"user","content":"hi"}]}`
	const msg = `{"model":"claude-e2e","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`

	for _, tc := range []struct {
		name, path, header, body string
		// want is the error body's beginning: the family's shape.
		want string
	}{
		{"a chat body shorter than its Content-Length", "/v1/chat/completions",
			"Content-Length: 200\r\n", chat[:30], `{"error":{"message":`},
		{"a chunked chat body cut before its last chunk", "/v1/chat/completions",
			"Transfer-Encoding: chunked\r\n", fmt.Sprintf("%x\r\n%s\r\n", 30, chat[:30]), `{"error":{"message":`},
		{"a Messages body shorter than its Content-Length", "/v1/messages",
			"Content-Length: 200\r\nanthropic-version: 2023-06-01\r\n", msg[:30], `{"type":"error","error":{"type":"invalid_request_error"`},
		{"a chunked Messages body cut before its last chunk", "/v1/messages",
			"Transfer-Encoding: chunked\r\nanthropic-version: 2023-06-01\r\n", fmt.Sprintf("%x\r\n%s\r\n", 30, msg[:30]), `{"type":"error","error":{"type":"invalid_request_error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := (&net.Dialer{}).DialContext(testContext(t), "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			_ = conn.SetDeadline(time.Now().Add(waitTimeout))
			req := "POST " + tc.path + " HTTP/1.1\r\nHost: guard\r\nContent-Type: application/json\r\n" +
				"Authorization: Bearer " + apiKey + "\r\n" + tc.header + "\r\n" + tc.body
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			// Half-close: the client sends nothing more and reads the answer.
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(string(b), tc.want) || !strings.Contains(string(b), `"invalid_request"`) {
				t.Errorf("%d %q, want 400 %s…invalid_request", resp.StatusCode, b, tc.want)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no x-request-id on the answer")
			}
		})
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("the provider received %d requests with cut-short bodies", n)
	}
}
