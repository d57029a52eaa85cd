package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A compromised app container speaks raw HTTP to its guard and tries to make it send the
// ModelProvider's credential somewhere else: an absolute-form request target naming its
// own listener, a Host header naming it, hop-by-hop headers that would strip the guard's
// credential or smuggle one of its own, a second Authorization header. Every call that is
// forwarded goes to the ModelProvider, with its credential and no other; the attacker's
// listener receives nothing.
func TestACompromisedAppCannotSteerTheProvidersCredentialElsewhere(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod", "claude"}, nil)
	k.apply(t, k.openai(openaiCred), k.anthropic(anthropicCred))
	var stolen atomic.Int64
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { stolen.Add(1) }))
	t.Cleanup(attacker.Close)
	evil := strings.TrimPrefix(attacker.URL, "http://")
	guard := strings.TrimPrefix(k.srv.URL, "http://")

	for _, c := range []struct{ name, target, headers string }{
		{"an absolute-form target naming the attacker", "http://" + evil + "/v1/chat/completions", "Host: " + evil + "\r\n"},
		{"a Host header naming the attacker", "/v1/chat/completions", "Host: " + evil + "\r\n"},
		{"Connection naming the credential headers", "/v1/chat/completions", "Host: " + guard + "\r\nConnection: Authorization, X-Api-Key\r\n"},
		{"two Authorization headers", "/v1/chat/completions", "Host: " + guard + "\r\nAuthorization: Bearer x\r\nAuthorization: Bearer y\r\n"},
		{"an absolute-form pass-through GET", "http://" + evil + "/v1/models", "Host: " + evil + "\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(k.prov.Requests())
			method, body := "POST", keylessChat
			if strings.HasSuffix(c.target, "/v1/models") {
				method, body = "GET", ""
			}
			status := rawRequest(t, guard, fmt.Sprintf("%s %s HTTP/1.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				method, c.target, c.headers, len(body), body))
			t.Logf("the guard answered %d", status)
			if stolen.Load() != 0 {
				t.Fatal("the attacker's listener received a call")
			}
			if status >= 200 && status < 300 {
				if len(k.prov.Requests()) != before+1 {
					t.Fatalf("answered %d without calling the ModelProvider", status)
				}
				got, _ := k.prov.LastRequest()
				var keys []string
				for _, h := range credentialHeaders {
					keys = append(keys, got.Header.Values(h)...)
				}
				if strings.Join(keys, "|") != "Bearer "+openaiCred {
					t.Errorf("the ModelProvider received the credentials %d×, want only the provider's, once", len(keys))
				}
			}
		})
	}
	if n := len(k.p.Requests()); n != 0 {
		t.Errorf("the upstream flags' provider received %d calls", n)
	}
}

// rawRequest writes req on a new connection to addr and returns the response's status.
func rawRequest(t *testing.T, addr, req string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
