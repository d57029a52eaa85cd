package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/mcp/upstream"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// TestMCPPathsAreNeverPassedToAModelProvider: /mcp/ is the guard's own, configured names
// or not; every other path is the model proxy's.
func TestMCPPathsAreNeverPassedToAModelProvider(t *testing.T) {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the provider received %s %s", r.Method, r.URL.Path)
	}))
	defer provider.Close()
	files, err := upstream.Parse("files=http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	tel := telemetry.New(nil)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	px := proxy.New(proxy.Config{Telemetry: tel, Log: log})
	srv := httptest.NewServer(routes(px, mcpHandler(options{mcpUpstreams: []upstream.Upstream{files}}, px, tel, nil, log)))
	defer srv.Close()
	for path, want := range map[string]int{
		"/mcp/files":   http.StatusServiceUnavailable, // fronted, and refused until a policy is in force
		"/mcp/unknown": http.StatusNotFound,
		"/mcp/":        http.StatusNotFound,
	} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != want || !strings.Contains(string(body), `"jsonrpc":"2.0"`) {
			t.Errorf("POST %s: %d %s, want %d with a JSON-RPC error", path, resp.StatusCode, body, want)
		}
	}
}

func TestAnMCPUpstreamNamedTwiceIsRefused(t *testing.T) {
	a, _ := upstream.Parse("files=http://a/mcp")
	b, _ := upstream.Parse("files=http://b/mcp")
	err := run(options{policyFile: "unused.yaml", mcpUpstreams: []upstream.Upstream{a, b}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "named twice") {
		t.Fatalf("err %v", err)
	}
}
