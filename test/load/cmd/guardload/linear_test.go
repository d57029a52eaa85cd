package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The linear-streams check counts a run only when every answer arrives whole: the
// provider's stream joins to exactly the text asked for, and an answer that lost a
// character on the way is an error, not a figure.
func TestLinearStreamsCheckTheAnswerWhole(t *testing.T) {
	p := newLongProvider(32)
	const size = 10000
	p.stream(size)
	want := p.text(size)
	client := &http.Client{}

	srv := httptest.NewServer(p)
	defer srv.Close()
	if err := streamOnce(context.Background(), client, srv.URL, want); err != nil {
		t.Fatalf("the provider's own stream: %v", err)
	}

	// A proxy that drops one character of one delta.
	lossy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		i := bytes.Index(body, []byte(`"content":"`+want[32:34]))
		body = append(body[:i+11:i+11], body[i+12:]...)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	defer lossy.Close()
	err := streamOnce(context.Background(), client, lossy.URL, want)
	if err == nil || !strings.Contains(err.Error(), "arrived changed") {
		t.Fatalf("a stream that lost a character: %v", err)
	}
}
