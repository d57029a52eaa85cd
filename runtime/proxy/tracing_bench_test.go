package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
)

// canned answers every upstream call at once with the same chat completion, so that a
// benchmark measures the guard, not the network.
type canned struct{}

const cannedAnswer = `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,` +
	`"message":{"role":"assistant","content":"Hello there, nothing to see."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`

func (canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(cannedAnswer)), ContentLength: int64(len(cannedAnswer)), Request: r}, nil
}

// BenchmarkGuardedCallTracing is one non-streamed chat call through the proxy's handler
// (Input and Output evaluations of one built-in guardrail, an in-memory upstream) with
// tracing off (Config.Tracer nil), on with the call sampled (two spans, batched and
// exported over OTLP/HTTP to a loopback receiver), and on with the call's trace not
// sampled (traceparent flags 00).
func BenchmarkGuardedCallTracing(b *testing.B) {
	const body = `{"model":"m","messages":[{"role":"user","content":"What is the capital of France?"}]}`
	for _, bc := range []struct {
		name        string
		on          bool
		traceparent string
	}{
		{"off", false, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{"on", true, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{"on-unsampled", true, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var tr *tracing.Tracer
			var col *otlptest.Collector
			if bc.on {
				col = otlptest.NewHTTP(b)
				col.Discard()
				tr = tracerTo(b, col, "http/protobuf")
			}
			h := newHarness(b, streamPolicy, withConfig(func(c *Config) { c.Tracer = tr }))
			h.px.client = &http.Client{Transport: canned{}}
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Traceparent", bc.traceparent)
				w := httptest.NewRecorder()
				h.px.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			b.StopTimer()
			if bc.on {
				_ = tr.Shutdown(b.Context())
				b.ReportMetric(float64(col.Count())/float64(b.N), "spans/op")
			}
		})
	}
}
