package mcp

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

// TestAPostDeclaredOverTheLimitIsRefusedWithoutBeingKept: a Content-Length over the body
// limit is answered 413 after the body is read to the limit and discarded: the request
// allocates a small fraction of the limit (buffering it cost the limit and more), and the
// server is not called.
func TestAPostDeclaredOverTheLimitIsRefusedWithoutBeingKept(t *testing.T) {
	const limit = 4 << 20
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, http.StatusOK, []byte(toolResult(7, "sunny")))
	})
	target, _ := url.Parse(up.URL + "/mcp")
	h := New(Config{Upstreams: map[string]*url.URL{"tools": target}, Judges: &fakeJudges{}, MaxBodyBytes: limit,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"send","arguments":{"body":"` +
		strings.Repeat("x", 2*limit) + `"}}}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req := httptest.NewRequest(http.MethodPost, "/mcp/tools", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "larger than the guardrail sidecar accepts") {
		t.Fatalf("%d %s, want 413", rec.Code, rec.Body)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit/8 {
		t.Fatalf("refusing the body allocated %d bytes (limit %d)", alloc, limit)
	}
	if hits := up.hits(); len(hits) != 0 {
		t.Fatalf("the server received %d requests", len(hits))
	}
}
