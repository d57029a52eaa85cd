package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/audit"
	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// The benchmarks run the guard's handler in process, over loopback HTTP, against the
// replayed provider: the same requests as the load, sequentially, so that a CPU or memory
// profile of the guard's code can be taken with the usual flags:
//
//	go test -run '^$' -bench 'Guard' -benchmem -cpuprofile cpu.out ./test/load/cmd/guardload
//	go tool pprof -top -focus 'proxy.\(\*Proxy\).ServeHTTP' cpu.out
//
// The profile also holds the client and the provider; -focus keeps the guard's share.

func BenchmarkGuardChat(b *testing.B) {
	benchChat(b, guardHandler(b, &config{streamCadence: 64}), false)
}

func BenchmarkPlainChat(b *testing.B) { benchChat(b, plainHandler(b), false) }

// BenchmarkGuardChatAudit is BenchmarkGuardChat with the audit log on, its lines written
// to a file as a container runtime writes stdout: a write per line, which the client's
// answer does not wait for (the answer is flushed before the request's bookkeeping).
func BenchmarkGuardChatAudit(b *testing.B) {
	benchChat(b, guardHandlerWith(b, &config{streamCadence: 64}, benchFeatures{audit: true}), false)
}

// BenchmarkGuardChatTracing is BenchmarkGuardChat with every call traced (three spans:
// the call, its Input and its Output evaluation), exported over OTLP/HTTP to a receiver
// in the benchmark's process that counts them.
func BenchmarkGuardChatTracing(b *testing.B) {
	benchChat(b, guardHandlerWith(b, &config{streamCadence: 64}, benchFeatures{tracing: true}), false)
}

// benchFeatures are the optional features of a benchmark's guard.
type benchFeatures struct{ audit, tracing bool }

func BenchmarkGuardStream(b *testing.B) {
	benchChat(b, guardHandler(b, &config{streamCadence: 64}), true)
}

func BenchmarkGuardStreamPhase(b *testing.B) {
	benchChat(b, guardHandler(b, &config{streamPhase: true, streamCadence: 64}), true)
}

func BenchmarkPlainStream(b *testing.B) { benchChat(b, plainHandler(b), true) }

const benchEvents = 200

// providerServer serves the replayed answers.
func providerServer(b *testing.B) *httptest.Server {
	chat, stream, err := recordAnswers(context.Background(), 2048, benchEvents)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(&replay{chat: chat, stream: stream})
	b.Cleanup(srv.Close)
	return srv
}

func guardHandler(b *testing.B, cfg *config) func(upstream *url.URL) http.Handler {
	return guardHandlerWith(b, cfg, benchFeatures{})
}

// guardHandlerWith is guardHandler with optional features.
func guardHandlerWith(b *testing.B, cfg *config, with benchFeatures) func(upstream *url.URL) http.Handler {
	return func(upstream *url.URL) http.Handler {
		path := filepath.Join(b.TempDir(), "policy.yaml")
		if err := os.WriteFile(path, []byte(policyYAML(cfg)), 0o600); err != nil {
			b.Fatal(err)
		}
		snap, err := (&policysource.File{Path: path}).Load()
		if err != nil {
			b.Fatal(err)
		}
		tel := telemetry.New(nil)
		if with.audit {
			f, err := os.Create(filepath.Join(b.TempDir(), "audit.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = f.Close() })
			audit.New(audit.Config{Out: f, Pod: "bench", Version: "bench", Incarnation: "0123456789abcdef"}).Install(tel)
		}
		var tr *tracing.Tracer
		if with.tracing {
			col := otlptest.NewHTTP(b)
			col.Discard()
			tcfg, err := tracing.FromEnv(func(k string) string {
				return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
					"OTEL_TRACES_SAMPLER": "always_on"}[k]
			})
			if err != nil {
				b.Fatal(err)
			}
			if tr, err = tracing.Setup(context.Background(), tcfg, tracing.Options{Pod: "bench"}); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
		}
		px := proxy.New(proxy.Config{OpenAIUpstream: upstream, AnthropicUpstream: upstream, Telemetry: tel, Tracer: tr,
			Log: slog.New(slog.DiscardHandler)})
		if err := px.Apply(snap); err != nil {
			b.Fatal(err)
		}
		return px
	}
}

func plainHandler(*testing.B) func(upstream *url.URL) http.Handler { return plainProxy }

func benchChat(b *testing.B, handler func(*url.URL) http.Handler, streamed bool) {
	up := providerServer(b)
	u, _ := url.Parse(up.URL)
	srv := httptest.NewServer(handler(u))
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: newTransport()}
	body := chatRequest(2048, streamed)
	want, err := post(context.Background(), client, up.URL, body)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := post(context.Background(), client, srv.URL, body)
		if err != nil {
			b.Fatal(err)
		}
		if !streamed && !bytes.Equal(got, want) {
			b.Fatalf("the proxy changed the answer:\n%s", got)
		}
	}
}

// The JSON work of one load request, alone: parsing the request and decoding the answer.

func BenchmarkParseLoadRequest(b *testing.B) {
	body := chatRequest(2048, false)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.ParseRequest(wire.FamilyChat, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeLoadResponse(b *testing.B) {
	chat, _, err := recordAnswers(context.Background(), 2048, benchEvents)
	if err != nil {
		b.Fatal(err)
	}
	req, err := wire.ParseRequest(wire.FamilyChat, chatRequest(2048, false))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(chat.body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.DecodeResponse(wire.FamilyChat, &req, chat.body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalLoadRequest is the floor of ParseRequest: one encoding/json pass into
// the fields the guard reads.
func BenchmarkUnmarshalLoadRequest(b *testing.B) {
	body := chatRequest(2048, false)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var r struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}
