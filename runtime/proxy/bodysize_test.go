package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestABodyDeclaredOverTheLimitIsRefusedUnread: a Content-Length over --max-body-bytes is
// answered 413 at once, the connection closed, without reading (or buffering) the body;
// the client here sends none of it.
func TestABodyDeclaredOverTheLimitIsRefusedUnread(t *testing.T) {
	h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.MaxBodyBytes = 1024; c.ReadIdleTimeout = time.Minute }))
	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, err = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: "+strconv.Itoa(16<<20)+"\r\n\r\n{")
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // well within the read idle timeout
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"code":"request_too_large"`) || !resp.Close {
		t.Fatalf("%d (close %v) %s, want 413 request_too_large and the connection closed", resp.StatusCode, resp.Close, b)
	}
	if n := len(h.p.Requests()); n != 0 {
		t.Fatalf("the provider received %d requests", n)
	}
}

// TestABodyOfUnknownLengthIsReadWithoutMuchGarbage: a body without a Content-Length
// (chunked) is read allocating less than two and a half times its size in all; growing
// one buffer as append does (a quarter at a time past 256 bytes) allocated five times.
func TestABodyOfUnknownLengthIsReadWithoutMuchGarbage(t *testing.T) {
	for _, size := range []int{1 << 20, 5<<20 + 12345, 12 << 20} {
		body := bytes.Repeat([]byte("x"), size)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := readAll(io.MultiReader(bytes.NewReader(body)), -1, 16<<20)
		runtime.ReadMemStats(&after)
		if err != nil || len(got) != size {
			t.Fatalf("read %d bytes of %d, %v", len(got), size, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; float64(alloc) > 2.5*float64(size) {
			t.Errorf("reading %d bytes allocated %d (%.1f times)", size, alloc, float64(alloc)/float64(size))
		}
	}
}
