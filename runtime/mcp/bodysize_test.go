package mcp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAPostDeclaredOverTheLimitIsRefusedUnread: a Content-Length over the body limit is
// answered 413 at once, the connection closed, without reading the body (the client here
// sends none of it) or calling the server.
func TestAPostDeclaredOverTheLimitIsRefusedUnread(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, http.StatusOK, []byte(toolResult(7, "sunny")))
	})
	guard, _ := guardFor(t, up, &fakeJudges{})
	u, err := url.Parse(guard)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, err = io.WriteString(conn, "POST "+u.Path+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: "+strconv.Itoa(64<<20)+"\r\n\r\n{")
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // within the read idle timeout
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "larger than the guardrail sidecar accepts") || !resp.Close {
		t.Fatalf("%d (close %v) %s, want 413 and the connection closed", resp.StatusCode, resp.Close, b)
	}
	if hits := up.hits(); len(hits) != 0 {
		t.Fatalf("the server received %q", hits)
	}
}
