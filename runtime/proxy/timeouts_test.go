package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// A client that stops sending its body holds a handler and its buffer: the guard drops it
// after the read idle timeout, while a body that keeps coming, however slowly, is read to
// its end, and a stream that outlasts the timeout is not cut by it.
func TestReadIdleTimeout(t *testing.T) {
	// Long enough that a loaded machine's late sleeps (pieces go every quarter of it) do
	// not look like an idle client.
	const timeout = time.Second
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 1000) + `"}]}`
	send := func(t *testing.T, h *harness) net.Conn {
		t.Helper()
		var d net.Dialer
		conn, err := d.DialContext(t.Context(), "tcp", h.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		if _, err := fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: guard\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body)); err != nil {
			t.Fatal(err)
		}
		return conn
	}

	t.Run("a client that stops sending its body is dropped", func(t *testing.T) {
		h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.ReadIdleTimeout = timeout }))
		conn := send(t, h)
		if _, err := io.WriteString(conn, body[:100]); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadAll(conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection was still open after %v", time.Since(start))
		}
		if n := len(h.p.Requests()); n != 0 {
			t.Errorf("the provider received the request")
		}
	})

	t.Run("a body that keeps coming slowly is read whole", func(t *testing.T) {
		h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.ReadIdleTimeout = timeout }))
		conn := send(t, h)
		// Ten pieces, each well within the timeout, 2.5 times the timeout in all.
		piece := (len(body) + 9) / 10
		for rest := body; rest != ""; {
			n := min(piece, len(rest))
			if _, err := io.WriteString(conn, rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
			time.Sleep(timeout / 4)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})

	t.Run("a stream that outlasts the timeout is not cut", func(t *testing.T) {
		h := newHarness(t, streamPolicy, withConfig(func(c *Config) { c.ReadIdleTimeout = timeout / 4 }))
		h.p.Enqueue(fakeprovider.Script{Delay: timeout / 4, Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts("one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight")}}})
		resp, b := h.post(t, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		got, terminated, err := fakeprovider.ChatStreamText(b)
		if resp.StatusCode != http.StatusOK || err != nil || !terminated || got != "one two three four five six seven eight" {
			t.Errorf("%d: the client got %q (terminated %v, %v)", resp.StatusCode, got, terminated, err)
		}
	})
}
