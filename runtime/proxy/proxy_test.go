package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

func TestServeAnswersWhatItDoesNotForward(t *testing.T) {
	h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.MaxBodyBytes = 1024 }))
	unloaded := newHarness(t, "")
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`

	for _, tc := range []struct {
		name         string
		h            *harness
		method, path string
		body         string
		header       []string
		status       int
		want         string
		// final: a policy verdict, answered with x-should-retry: false; the other
		// answers leave the SDKs to their own retry rules.
		final bool
	}{
		{name: "a guarded route without a policy is refused, fail closed", h: unloaded, path: "/v1/chat/completions", body: chatBody,
			status: http.StatusServiceUnavailable, want: `"code":"policy_not_loaded"`},
		{name: "an unknown POST route is refused", h: h, path: "/v1/completions", body: `{}`,
			status: http.StatusNotFound, want: `"code":"route_not_guarded"`},
		{name: "an unknown POST route of an Anthropic client is refused in Anthropic's shape", h: h, path: "/v1/complete", body: `{}`,
			header: []string{"anthropic-version", "2023-06-01"}, status: http.StatusNotFound, want: `{"type":"error","error":{"type":"not_found_error"`},
		{name: "a PUT is refused", h: h, method: http.MethodPut, path: "/v1/chat/completions", body: chatBody,
			status: http.StatusNotFound, want: `"code":"route_not_guarded"`},
		{name: "an oversized chat body is refused with 413", h: h, path: "/v1/chat/completions", body: big,
			status: http.StatusRequestEntityTooLarge, want: `"code":"request_too_large"`},
		{name: "an oversized messages body is refused with 413 in Anthropic's shape", h: h, path: "/v1/messages", body: big,
			status: http.StatusRequestEntityTooLarge, want: `"type":"request_too_large"`},
		{name: "an oversized embeddings body is refused with 413", h: h, path: "/v1/embeddings", body: `{"model":"m","input":"` + strings.Repeat("x", 2048) + `"}`,
			status: http.StatusRequestEntityTooLarge, want: `"code":"request_too_large"`},
		{name: "a body that is not JSON is refused with 400", h: h, path: "/v1/responses", body: `{"model":`,
			status: http.StatusBadRequest, want: `"code":"invalid_request"`},
		{name: "a blocked prompt is refused with 400 before the provider", h: h, path: "/v1/embeddings", body: `{"model":"m","input":"bluebird"}`,
			status: http.StatusBadRequest, final: true, want: `"message":"Project Bluebird is not discussed here.","type":"invalid_request_error","param":null,"code":"content_policy_violation","guardrail":"default/no-bluebird"`},
		// Every input is embedded: one not last in the list is judged too (the policy
		// judges the last message, the default).
		{name: "a blocked input before the last of an embeddings list is refused", h: h, path: "/v1/embeddings", body: `{"model":"m","input":["bluebird","hello"]}`,
			status: http.StatusBadRequest, final: true, want: `"code":"content_policy_violation","guardrail":"default/no-bluebird"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.h.p.Requests())
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			resp, b := tc.h.do(t, method, tc.path, tc.body, tc.header...)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("%d %s\nwant %d with %s", resp.StatusCode, b, tc.status, tc.want)
			}
			want := ""
			if tc.final {
				want = "false"
			}
			if got := resp.Header.Get("X-Should-Retry"); got != want {
				t.Errorf("x-should-retry %q, want %q", got, want)
			}
			if tc.status == http.StatusRequestEntityTooLarge && !resp.Close {
				t.Error("the connection is kept after a 413: the server would read the rest of the body")
			}
			if n := len(tc.h.p.Requests()); n != before {
				t.Errorf("the provider received the request")
			}
		})
	}
}

func TestServeReadErrorsAreAnswered(t *testing.T) {
	h := newHarness(t, inputPolicy)
	const head = "Host: x\r\nContent-Type: application/json\r\n"
	for _, tc := range []struct {
		name, request, want string
	}{
		{"a chunk size that is not hexadecimal",
			"POST /v1/chat/completions HTTP/1.1\r\n" + head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", `"code":"invalid_request"`},
		{"a body shorter than its Content-Length",
			"POST /v1/chat/completions HTTP/1.1\r\n" + head + "Content-Length: 100\r\n\r\n" + chatBody[:20], `{"error":{`},
		{"a chunked body cut before its last chunk",
			"POST /v1/chat/completions HTTP/1.1\r\n" + head + "Transfer-Encoding: chunked\r\n\r\n10\r\n" + chatBody[:16] + "\r\n", `{"error":{`},
		{"a short body on the Anthropic route is answered in Anthropic's shape",
			"POST /v1/messages HTTP/1.1\r\n" + head + "Content-Length: 100\r\n\r\n" + chatBody[:20], `{"type":"error","error":{"type":"invalid_request_error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			if _, err = io.WriteString(conn, tc.request); err != nil {
				t.Fatal(err)
			}
			// The client stops sending but still reads: the guard sees the body end early.
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
				t.Errorf("%d %s, want 400 with %s", resp.StatusCode, b, tc.want)
			}
		})
	}
	if n := len(h.p.Requests()); n != 0 {
		t.Errorf("the provider received %d requests with a body the guard could not read", n)
	}
}

func TestServeForwardsHeaders(t *testing.T) {
	h := newHarness(t, inputPolicy)
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)

	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		check                    func(t *testing.T, got http.Header)
	}{
		{"credentials reach the provider untouched", http.MethodPost, "/v1/chat/completions", chatBody,
			[]string{"Authorization", "Bearer sk-app", "OpenAI-Organization", "org-1"}, func(t *testing.T, got http.Header) {
				if got.Get("Authorization") != "Bearer sk-app" || got.Get("Openai-Organization") != "org-1" {
					t.Errorf("headers %v", got)
				}
			}},
		{"an Anthropic key reaches the Anthropic provider untouched", http.MethodPost, "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
			[]string{"X-Api-Key", "sk-ant-app", "Anthropic-Version", "2023-06-01", "Anthropic-Beta", "b1"}, func(t *testing.T, got http.Header) {
				if got.Get("X-Api-Key") != "sk-ant-app" || got.Get("Anthropic-Version") != "2023-06-01" || got.Get("Anthropic-Beta") != "b1" {
					t.Errorf("headers %v", got)
				}
			}},
		{"a request id is added when absent", http.MethodPost, "/v1/chat/completions", chatBody, nil, func(t *testing.T, got http.Header) {
			if !hexID.MatchString(got.Get("X-Request-Id")) {
				t.Errorf("x-request-id %q", got.Get("X-Request-Id"))
			}
		}},
		{"a request id is kept when present", http.MethodPost, "/v1/chat/completions", chatBody, []string{"X-Request-Id", "app-1"}, func(t *testing.T, got http.Header) {
			if got.Get("X-Request-Id") != "app-1" {
				t.Errorf("x-request-id %q", got.Get("X-Request-Id"))
			}
		}},
		{"hop-by-hop headers are not forwarded", http.MethodPost, "/v1/chat/completions", chatBody,
			[]string{"Connection", "X-Hop", "X-Hop", "1", "Proxy-Authorization", "Basic x", "Te", "trailers"}, func(t *testing.T, got http.Header) {
				if got.Get("X-Hop") != "" || got.Get("Proxy-Authorization") != "" || got.Get("Te") != "" {
					t.Errorf("headers %v", got)
				}
			}},
		{"a pass-through GET carries credentials and a request id", http.MethodGet, "/v1/models", "",
			[]string{"Authorization", "Bearer sk-app"}, func(t *testing.T, got http.Header) {
				if got.Get("Authorization") != "Bearer sk-app" || !hexID.MatchString(got.Get("X-Request-Id")) {
					t.Errorf("headers %v", got)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.do(t, tc.method, tc.path, tc.body, tc.header...)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			last, _ := h.p.LastRequest()
			tc.check(t, last.Header)
		})
	}
}

func TestServeAnswersOneRequestID(t *testing.T) {
	h := newHarness(t, inputPolicy)
	for _, tc := range []struct{ name, method, path, body string }{
		{"on a guarded route", http.MethodPost, "/v1/chat/completions", chatBody},
		{"on a pass-through route", http.MethodGet, "/v1/models", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := h.do(t, tc.method, tc.path, tc.body)
			if ids := resp.Header.Values("X-Request-Id"); len(ids) != 1 {
				t.Errorf("x-request-id values %q, want one", ids)
			}
		})
	}
}

func TestServeUpstreamUnreachable(t *testing.T) {
	dead, _ := url.Parse("http://127.0.0.1:1")
	h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.OpenAIUpstream, c.AnthropicUpstream = dead, dead }))
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		want                     string
	}{
		{"a guarded route", http.MethodPost, "/v1/chat/completions", chatBody, nil, `{"error":{`},
		{"a pass-through route", http.MethodGet, "/v1/models", "", nil, `{"error":{`},
		{"a pass-through route of an Anthropic client", http.MethodGet, "/v1/models", "", []string{"anthropic-version", "2023-06-01"},
			`{"type":"error","error":{"type":"api_error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.do(t, tc.method, tc.path, tc.body, tc.header...)
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), `"upstream_unreachable"`) {
				t.Errorf("%d %s", resp.StatusCode, b)
			}
			// The SDKs retry a 502 unless told not to, as they retry a refused connection.
			if got := resp.Header.Get("X-Should-Retry"); got != "" {
				t.Errorf("x-should-retry %q on an unreachable provider", got)
			}
		})
	}
}

// TestStreamsReuseUpstreamConnections: a stream read to its terminator leaves the
// upstream connection reusable; without that every stream pays a new TCP and TLS
// handshake to the provider.
func TestStreamsReuseUpstreamConnections(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"chat completions", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, streamPolicy, upstreamVia(slowEnd))
			for range 3 {
				resp, b := h.post(t, tc.path, tc.body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
			}
			if n := h.upstreamConns.count(); n != 1 {
				t.Errorf("3 sequential streams opened %d upstream connections, want 1", n)
			}
		})
	}
}

// slowEnd ends each response a moment after the provider's last event, as a network
// does when the terminator and the end of the chunked body travel apart: a proxy that
// closes the body at the terminator then loses the connection every time.
func slowEnd(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		http.NewResponseController(w).Flush() //nolint:errcheck // best effort
		time.Sleep(20 * time.Millisecond)
	})
}
