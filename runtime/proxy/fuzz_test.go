package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// fuzzRoutes are the guarded routes, with a valid body of each as a seed.
var fuzzRoutes = []struct{ path, seed string }{
	{"/v1/chat/completions", `{"model":"m","stream":true,"n":2,"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`},
	{"/v1/responses", `{"model":"m","stream":true,"instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}]}`},
	{"/v1/embeddings", `{"model":"m","input":["a","bluebird"]}`},
	{"/v1/messages", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`},
}

// FuzzServe posts arbitrary bodies to each guarded route of a proxy in front of a fake
// provider. The proxy must not panic, and must either forward the request (the provider
// then sees it) or answer an error in its route's provider shape.
func FuzzServe(f *testing.F) {
	for i, r := range fuzzRoutes {
		f.Add(uint8(i), []byte(r.seed))
		f.Add(uint8(i), []byte(`{"model":"m","messages":[{"role":"user","content":"bluebird"}],"input":"bluebird"}`))
		f.Add(uint8(i), []byte(`{"model":`))
		f.Add(uint8(i), []byte(`[]`))
	}
	var calls atomic.Int64 // cheaper than the provider's record, which grows per call
	h := newHarness(f, streamPolicy, withConfig(func(c *Config) { c.MaxBodyBytes = 1 << 16 }),
		upstreamVia(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1); next.ServeHTTP(w, r) })
		}))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		before := calls.Load()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, r.path, bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.px.ServeHTTP(rec, req)

		forwarded := calls.Load() > before
		if rec.Code == http.StatusOK {
			if !forwarded {
				t.Fatalf("200 without an upstream call: %s", rec.Body)
			}
			return
		}
		if forwarded && rec.Code != http.StatusInternalServerError {
			t.Fatalf("status %d after an upstream call", rec.Code)
		}
		checkErrorShape(t, r.path == "/v1/messages", rec)
	})
}

// checkErrorShape fails unless rec holds an error body in OpenAI's or Anthropic's shape.
func checkErrorShape(t *testing.T, anthropic bool, rec *httptest.ResponseRecorder) {
	t.Helper()
	var body struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error == nil || body.Error.Type == "" || body.Error.Message == "" {
		t.Fatalf("status %d with a body that is not an error: %q", rec.Code, rec.Body)
	}
	if anthropic != (body.Type == "error") {
		t.Fatalf("status %d: error body in the wrong family's shape: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error with content type %q", ct)
	}
}

// FuzzUpstreamStream sends arbitrary upstream stream bytes through the proxy for each
// family. The proxy must not panic, must end the response, and what it writes must stay
// proportional to what it read (no runaway re-chunking).
func FuzzUpstreamStream(f *testing.F) {
	streams := []struct{ path, body, seed string }{
		{"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"blue\"}}]}\n\ndata: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n"},
		{"/v1/responses", `{"model":"m","stream":true,"input":"hi"}`,
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"i\",\"output_index\":0,\"content_index\":0,\"delta\":\"bluebird\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[]}}\n\n"},
		{"/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"blue bird\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
	}
	for i, s := range streams {
		f.Add(uint8(i), []byte(s.seed))
		f.Add(uint8(i), []byte(s.seed[:len(s.seed)/2]))
	}
	h := newHarness(f, streamPolicy)
	f.Fuzz(func(t *testing.T, which uint8, upstream []byte) {
		s := streams[int(which)%len(streams)]
		h.p.Enqueue(fakeprovider.Script{Raw: upstream})
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, s.path, bytes.NewReader([]byte(s.body)))
		rec := httptest.NewRecorder()
		h.px.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			checkErrorShape(t, s.path == "/v1/messages", rec)
			return
		}
		if limit := 64*len(upstream) + 8192; rec.Body.Len() > limit {
			t.Fatalf("wrote %d bytes for %d read", rec.Body.Len(), len(upstream))
		}
	})
}
