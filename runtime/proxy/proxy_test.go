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
			status: http.StatusBadRequest, want: `"message":"Project Bluebird is not discussed here.","type":"invalid_request_error","param":null,"code":"content_policy_violation","guardrail":"default/no-bluebird"`},
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
			if got := resp.Header.Get("X-Should-Retry"); got != "false" {
				t.Errorf("x-should-retry %q: SDKs would retry a deterministic refusal", got)
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
	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// A chunked body whose chunk size is not hexadecimal.
	_, err = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400 for a body that cannot be read", resp.StatusCode)
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
	h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.OpenAIUpstream = dead }))
	resp, b := h.post(t, "/v1/chat/completions", chatBody)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), `"code":"upstream_unreachable"`) {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	resp, _ = h.do(t, http.MethodGet, "/v1/models", "")
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("pass-through: %d", resp.StatusCode)
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
