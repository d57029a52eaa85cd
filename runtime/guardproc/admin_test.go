package guardproc

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// serveTestAdmin serves the admin routes with lim on loopback, on a listener capped as
// run caps it, and returns its address and the count of refused connections.
func serveTestAdmin(t *testing.T, lim AdminLimits) (string, *atomic.Int64) {
	t.Helper()
	tel := telemetry.New(nil)
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int64
	srv := NewAdminServer(AdminMux(proxy.New(proxy.Config{Telemetry: tel}), tel), lim)
	go func() { _ = srv.Serve(CapConns(ln, lim.MaxConns, &refused)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), &refused
}

// dial opens a connection to addr, closed when the test ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	var d net.Dialer
	c, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// healthz asks for /healthz on c, keeping the connection, and reads the answer.
func healthz(t *testing.T, c net.Conn, br *bufio.Reader) error {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: guard\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// closedBy reports whether the server closes c within wait: a read ends with EOF or a
// reset, not with the test's own deadline.
func closedBy(c net.Conn, br *bufio.Reader, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestAdminListenerClosesIdleConnections(t *testing.T) {
	lim := DefaultAdminLimits
	lim.ReadHeader, lim.Idle = 100*time.Millisecond, 100*time.Millisecond
	addr, _ := serveTestAdmin(t, lim)

	t.Run("a keep-alive connection that sends no next request", func(t *testing.T) {
		c := dial(t, addr)
		br := bufio.NewReader(c)
		if err := healthz(t, c, br); err != nil {
			t.Fatal(err)
		}
		if !closedBy(c, br, 3*time.Second) {
			t.Error("the idle connection was still open after 3s (idle timeout 100ms)")
		}
	})
	t.Run("a connection that sends nothing", func(t *testing.T) {
		c := dial(t, addr)
		if !closedBy(c, bufio.NewReader(c), 3*time.Second) {
			t.Error("the silent connection was still open after 3s (header timeout 100ms)")
		}
	})
	t.Run("a request whose header never ends", func(t *testing.T) {
		c := dial(t, addr)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: guard\r\n"); err != nil {
			t.Fatal(err)
		}
		if !closedBy(c, bufio.NewReader(c), 3*time.Second) {
			t.Error("the connection was still open after 3s (header timeout 100ms)")
		}
	})
}

func TestAdminListenerServesAtMostItsCap(t *testing.T) {
	lim := DefaultAdminLimits
	lim.MaxConns = 4
	addr, refused := serveTestAdmin(t, lim)

	held := make([]net.Conn, lim.MaxConns)
	for i := range held {
		held[i] = dial(t, addr)
		if err := healthz(t, held[i], bufio.NewReader(held[i])); err != nil {
			t.Fatalf("connection %d under the cap: %v", i, err)
		}
	}
	over := dial(t, addr)
	br := bufio.NewReader(over)
	if !closedBy(over, br, 3*time.Second) {
		t.Fatal("a connection over the cap was kept open")
	}
	if refused.Load() != 1 {
		t.Errorf("%d connections counted as refused, want 1", refused.Load())
	}

	// A connection that ends gives its slot back.
	_ = held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dial(t, addr)
		if healthz(t, c, bufio.NewReader(c)) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection was served after one under the cap closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The others were served all along.
	for i, c := range held[1:] {
		if err := healthz(t, c, bufio.NewReader(c)); err != nil {
			t.Errorf("held connection %d: %v", i+1, err)
		}
	}
}
