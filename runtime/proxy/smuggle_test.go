package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawExchange writes request as it is on a new connection to the proxy (so that no client
// library cleans its path or drops its body) and reads one response.
func rawExchange(t *testing.T, h *harness, request string) (*http.Response, []byte) {
	t.Helper()
	var d net.Dialer
	conn, err := d.DialContext(t.Context(), "tcp", h.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// A GET or HEAD carries no body a provider should read: a GET to a guarded path with a
// prompt in its body would reach a provider that reads bodies of GETs unjudged. The guard
// refuses any GET or HEAD with a body, whatever its path, before the provider sees it.
func TestAGETOrHEADWithABodyIsRefused(t *testing.T) {
	h := newHarness(t, inputPolicy)
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		want                     string
	}{
		{"a GET to a guarded path", http.MethodGet, "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"tell me about bluebird"}]}`, nil, `"code":"invalid_request"`},
		{"a GET to another path", http.MethodGet, "/v1/models", `{"x":1}`, nil, `"code":"invalid_request"`},
		{"a GET of an Anthropic client, in Anthropic's shape", http.MethodGet, "/v1/messages",
			`{"model":"m","messages":[{"role":"user","content":"bluebird"}]}`, []string{"anthropic-version", "2023-06-01"},
			`{"type":"error","error":{"type":"invalid_request_error"`},
		{"a HEAD", http.MethodHead, "/v1/models", `{"x":1}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.p.Requests())
			resp, b := h.do(t, tc.method, tc.path, tc.body, tc.header...)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
				t.Errorf("%d %s, want 400 with %s", resp.StatusCode, b, tc.want)
			}
			if n := len(h.p.Requests()); n != before {
				t.Errorf("the provider received the request")
			}
		})
	}
	t.Run("a chunked body on a GET", func(t *testing.T) {
		before := len(h.p.Requests())
		resp, b := rawExchange(t, h, "GET /v1/models HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%d %s, want 400", resp.StatusCode, b)
		}
		if n := len(h.p.Requests()); n != before {
			t.Errorf("the provider received the request")
		}
	})
	t.Run("a GET without a body passes", func(t *testing.T) {
		if resp, b := h.do(t, http.MethodGet, "/v1/models", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
}

// A path with dot segments, encoded or not, or with an encoded slash would be resolved by
// the provider (or a proxy before it) to another path than the one the guard routed: GET
// /v1/../../internal/admin leaves /v1, and a guarded route could hide behind
// /v1/x/../responses/... The guard refuses such paths with 400 rather than guess how the
// provider normalises them.
func TestPathsThatANormaliserWouldChangeAreRefused(t *testing.T) {
	h := newHarness(t, inputPolicy)
	for _, target := range []string{
		"/v1/../../internal/admin",
		"/v1/./models",
		"/v1/models/..",
		"/v1/models/.",
		"/v1/%2e%2e/%2E%2E/internal/admin",
		"/v1/.%2e/internal",
		"/v1/models%2f..%2finternal",
		"/v1/models%2Fx",
		"/v1//models",
		"/v1/models%5c..%5cinternal",
		"/v1/responses/..%2fresp_1",
	} {
		t.Run(target, func(t *testing.T) {
			before := len(h.p.Requests())
			resp, b := rawExchange(t, h, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"code":"invalid_request"`) {
				t.Errorf("%d %s, want 400 invalid_request", resp.StatusCode, b)
			}
			if n := len(h.p.Requests()); n != before {
				last, _ := h.p.LastRequest()
				t.Errorf("the provider received %s", last.Path)
			}
		})
	}
	t.Run("a guarded route behind dot segments", func(t *testing.T) {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
		resp, b := rawExchange(t, h, "POST /v1/x/../chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
			itoa(len(body))+"\r\n\r\n"+body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%d %s, want 400", resp.StatusCode, b)
		}
	})
	t.Run("ordinary paths pass", func(t *testing.T) {
		for _, target := range []string{"/v1/models", "/v1/models?after=a.b", "/v1/models/ft:gpt-4o:org:x.y"} {
			resp, b := rawExchange(t, h, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp.StatusCode == http.StatusBadRequest {
				t.Errorf("%s: %d %s", target, resp.StatusCode, b)
			}
		}
	})
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}
