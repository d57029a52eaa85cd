package mcp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// benchPolicy judges tool calls and results with the built-in default packs, as the load
// harness does (test/load/cmd/mcpload).
const benchPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: builtin}
spec:
  builtin:
    packs: [pii, secrets, prompt-injection]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: tools}
spec:
  mode: Enforce
  classifierRef: {name: builtin}
  phases: [ToolCalls, ToolResults]
  threshold: 1
  action: Block
  reason: Blocked.
`

const benchProse = "The committee met on a grey morning to review the plans for the new library wing. " +
	"Several members asked whether the reading rooms would stay open during construction. "

// BenchmarkToolCall is one guarded tools/call of about 1 KiB of arguments and result,
// answered with an event stream, through the handler on loopback: with the engine and
// the built-in packs, and with a judge that allows everything (the transport alone).
func BenchmarkToolCall(b *testing.B) {
	text := strings.Repeat(benchProse, 1024/len(benchProse)+1)[:1024]
	result := []byte("event: message\ndata: " + toolResult(7, text) + "\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(result)
	}))
	defer up.Close()
	call := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`)
	target, _ := url.Parse(up.URL)
	for _, tc := range []struct {
		name   string
		judges func(b *testing.B, tel *telemetry.Telemetry) Judges
	}{
		{"engine", func(b *testing.B, tel *telemetry.Telemetry) Judges {
			path := filepath.Join(b.TempDir(), "policy.yaml")
			if err := os.WriteFile(path, []byte(benchPolicy), 0o600); err != nil {
				b.Fatal(err)
			}
			snap, err := (&policysource.File{Path: path}).Load()
			if err != nil {
				b.Fatal(err)
			}
			px := proxy.New(proxy.Config{Telemetry: tel, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err := px.Apply(snap); err != nil {
				b.Fatal(err)
			}
			return &EngineJudges{Engine: px.Engine, Telemetry: tel}
		}},
		{"allow", func(*testing.B, *telemetry.Telemetry) Judges { return allowAll{} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tel := telemetry.New(nil)
			srv := httptest.NewServer(New(Config{Upstreams: map[string]*url.URL{"tools": target}, Judges: tc.judges(b, tel),
				Telemetry: tel, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
			defer srv.Close()
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/mcp/tools", bytes.NewReader(call))
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if !bytes.Equal(body, result) {
					b.Fatalf("answer %s", body)
				}
			}
		})
	}
}

type allowAll struct{}

func (allowAll) Begin(*http.Request, string) (Judge, bool) { return allowAll{}, true }
func (allowAll) Call(context.Context, string, string) (Judgement, error) {
	return Judgement{}, nil
}
func (allowAll) Results(_ context.Context, texts []string) (Judgement, error) {
	return Judgement{Texts: texts, Dropped: make([]bool, len(texts))}, nil
}
func (allowAll) Done() {}
