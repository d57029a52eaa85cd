package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestABodyDeclaredOverTheLimitIsRefusedWithoutBeingKept: a Content-Length over
// --max-body-bytes is answered 413 after the body is read to the limit and discarded: the
// request allocates a small fraction of the limit (buffering it cost the limit itself).
// Over loopback, TestServeAnswersWhatItDoesNotForward checks the 413 reaches the client
// and the connection is closed.
func TestABodyDeclaredOverTheLimitIsRefusedWithoutBeingKept(t *testing.T) {
	const limit = 4 << 20
	h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.MaxBodyBytes = limit }))
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 2*limit) + `"}]}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.px.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), `"code":"request_too_large"`) {
		t.Fatalf("%d %s, want 413 request_too_large", rec.Code, rec.Body)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit/8 {
		t.Fatalf("refusing the body allocated %d bytes (limit %d)", alloc, limit)
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
