package main

import (
	"bytes"
	"context"
	"math"
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

// The target is that cost per character does not grow with the answer: a size may cost
// less per character than a smaller one (the fixed cost of a request weighs less), never
// more than 1.5× any smaller one.
func TestLinearGrowthIsTheDearestSizeOverAnySmaller(t *testing.T) {
	for _, tc := range []struct {
		perKB          []float64
		growth, spread float64
	}{
		{[]float64{400, 300, 200, 200}, 1, 2},           // cheaper with length: no growth
		{[]float64{200, 210, 290, 310}, 1.55, 1.55},     // grows
		{[]float64{300, 150, 250, 200}, 250.0 / 150, 2}, // dearer than a smaller size, not than the smallest
		{[]float64{100, 1000, 10000}, 100, 100},         // the quadratic cost issue 15 was about
		{[]float64{250}, 1, 1},
	} {
		growth, spread := linearGrowth(tc.perKB)
		if math.Abs(growth-tc.growth) > 1e-9 || math.Abs(spread-tc.spread) > 1e-9 {
			t.Errorf("linearGrowth(%v) = %.3f, %.3f; want %.3f, %.3f", tc.perKB, growth, spread, tc.growth, tc.spread)
		}
	}
}
