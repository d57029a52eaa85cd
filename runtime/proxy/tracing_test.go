package proxy

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Text that must never reach a span: the prompt's, the answer's, the app's key and a
// request header's.
const (
	canaryPrompt     = "CANARYPROMPT7f3a"
	canaryCompletion = "CANARYCOMPLETION9b2c"
	canaryKey        = "sk-CANARYKEY4d1e"
	canaryHeader     = "CANARYHEADER5e6f"
)

// tracerTo sets up the guard's tracing against a collector (otlptest.Tracer).
func tracerTo(t testing.TB, col *otlptest.Collector, protocol string) *tracing.Tracer {
	t.Helper()
	return otlptest.Tracer(t, col, protocol)
}

func spanNamed(spans []otlptest.Span, name string) (otlptest.Span, bool) {
	for _, s := range spans {
		if s.GetName() == name {
			return s, true
		}
	}
	return otlptest.Span{}, false
}

// Guarded calls through the proxy reach a real OTLP receiver as spans: the call's a child
// of the app's traceparent, each guardrail evaluation's a child of the call's, with their
// attributes, and no prompt, answer, key or header text anywhere in what was exported.
func TestTracesOfGuardedCalls(t *testing.T) {
	col := otlptest.NewGRPC(t)
	tr := tracerTo(t, col, "grpc")
	h := newHarness(t, streamPolicy, withConfig(func(c *Config) { c.Tracer = tr }))
	const (
		traceID = "0af7651916cd43dd8448eb211c80319c"
		parent  = "b7ad6b7169203331"
	)
	headers := []string{"Traceparent", "00-" + traceID + "-" + parent + "-01", "Authorization", "Bearer " + canaryKey,
		"X-App-Note", canaryHeader}

	// An allowed chat call, answered whole.
	h.p.Enqueue(fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Chunks("the answer is "+canaryCompletion, 3)}},
		Usage: fakeprovider.Usage{InputTokens: 7, OutputTokens: 5}})
	resp, body := h.post(t, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"say `+canaryPrompt+`"}]}`, headers...)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), canaryCompletion) {
		t.Fatalf("allowed call: %d %s", resp.StatusCode, body)
	}
	// A blocked Messages call.
	resp, _ = h.post(t, "/v1/messages", `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"bluebird `+canaryPrompt+`"}]}`, headers...)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("blocked call: %d", resp.StatusCode)
	}
	// A streamed Messages answer blocked in the Stream phase.
	h.p.Enqueue(fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Chunks(canaryCompletion+" and bluebird too", 4)}}})
	resp, _ = h.post(t, "/v1/messages", `{"model":"claude-y","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"`+canaryPrompt+`"}]}`, headers...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("streamed call: %d", resp.StatusCode)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := col.WaitSpans(6, 5*time.Second)

	allowed, ok := spanNamed(spans, "chat gpt-4o-mini")
	if !ok {
		t.Fatalf("no span of the allowed call among %d spans", len(spans))
	}
	if hex.EncodeToString(allowed.GetTraceId()) != traceID || hex.EncodeToString(allowed.GetParentSpanId()) != parent {
		t.Errorf("the call's span is not the traceparent's child: trace %x parent %x", allowed.GetTraceId(), allowed.GetParentSpanId())
	}
	for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "server.address": "127.0.0.1", "guardrail.request.outcome": "allowed"} {
		if got := otlptest.Str(allowed.GetAttributes(), k); got != want {
			t.Errorf("allowed call: %s = %q, want %q", k, got, want)
		}
	}
	if in, out := otlptest.Attr(allowed.GetAttributes(), "gen_ai.usage.input_tokens").GetIntValue(),
		otlptest.Attr(allowed.GetAttributes(), "gen_ai.usage.output_tokens").GetIntValue(); in != 7 || out != 5 {
		t.Errorf("allowed call: usage %d/%d, want 7/5", in, out)
	}
	// Its evaluations: Input, then Output (streamPolicy judges whole answers too).
	var phases []string
	for _, s := range spans {
		if bytes.Equal(s.GetParentSpanId(), allowed.GetSpanId()) {
			if s.GetName() != "guardrail default/no-bluebird" || otlptest.Str(s.GetAttributes(), "guardrail.outcome") != "allowed" ||
				otlptest.Str(s.GetAttributes(), "guardrail.classifier") != "default/words" {
				t.Errorf("an evaluation span of the allowed call: %v", s.Span)
			}
			phases = append(phases, otlptest.Str(s.GetAttributes(), "guardrail.phase"))
		}
	}
	if strings.Join(phases, ",") != "Input,Output" {
		t.Errorf("the allowed call's evaluations were of phases %v, want Input and Output", phases)
	}

	blocked, ok := spanNamed(spans, "chat claude-x")
	if !ok || otlptest.Str(blocked.GetAttributes(), "gen_ai.provider.name") != "anthropic" ||
		otlptest.Str(blocked.GetAttributes(), "guardrail.request.outcome") != "blocked" {
		t.Fatalf("the blocked call's span: %v", blocked.Span)
	}
	var blockedEval bool
	for _, s := range spans {
		if bytes.Equal(s.GetParentSpanId(), blocked.GetSpanId()) {
			cats := otlptest.Attr(s.GetAttributes(), "guardrail.category").GetArrayValue().GetValues()
			blockedEval = otlptest.Str(s.GetAttributes(), "guardrail.outcome") == "blocked" &&
				otlptest.Str(s.GetAttributes(), "guardrail.name") == "no-bluebird" &&
				otlptest.Str(s.GetAttributes(), "guardrail.namespace") == "default" &&
				otlptest.Str(s.GetAttributes(), "guardrail.mode") == "Enforce" &&
				len(cats) == 1 && cats[0].GetStringValue() == "secret-project" &&
				otlptest.Attr(s.GetAttributes(), "guardrail.score").GetDoubleValue() == 1
		}
	}
	if !blockedEval {
		t.Error("no blocking evaluation span under the blocked call")
	}

	streamed, ok := spanNamed(spans, "chat claude-y")
	if !ok || otlptest.Str(streamed.GetAttributes(), "guardrail.request.outcome") != "blocked" {
		t.Fatalf("the streamed call's span: %v", streamed.Span)
	}
	var streamBlocked bool
	for _, s := range spans {
		if bytes.Equal(s.GetParentSpanId(), streamed.GetSpanId()) && otlptest.Str(s.GetAttributes(), "guardrail.phase") == "Stream" &&
			otlptest.Str(s.GetAttributes(), "guardrail.outcome") == "blocked" {
			streamBlocked = true
		}
	}
	if !streamBlocked {
		t.Error("no Stream-phase blocking evaluation under the streamed call")
	}

	raw := col.Raw()
	for _, canary := range []string{canaryPrompt, canaryCompletion, canaryKey, canaryHeader, "Bluebird is not"} {
		if bytes.Contains(raw, []byte(canary)) {
			t.Errorf("the exported spans contain %q", canary)
		}
	}
}

// Without a traceparent the call starts a trace; with an unsampled one it is not traced
// (parentbased_traceidratio), and the proxy answers the same.
func TestTracesRootAndUnsampled(t *testing.T) {
	col := otlptest.NewHTTP(t)
	tr := tracerTo(t, col, "http/protobuf")
	h := newHarness(t, inputPolicy, withConfig(func(c *Config) { c.Tracer = tr }))
	resp, _ := h.post(t, "/v1/chat/completions", `{"model":"root","messages":[{"role":"user","content":"hi"}]}`)
	resp2, _ := h.post(t, "/v1/chat/completions", `{"model":"unsampled","messages":[{"role":"user","content":"hi"}]}`,
		"Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
	if resp.StatusCode != http.StatusOK || resp2.StatusCode != http.StatusOK {
		t.Fatalf("statuses %d %d", resp.StatusCode, resp2.StatusCode)
	}
	_ = tr.Shutdown(t.Context())
	spans := col.WaitSpans(2, 5*time.Second)
	root, ok := spanNamed(spans, "chat root")
	if !ok || len(root.GetParentSpanId()) != 0 {
		t.Errorf("the call without traceparent: %v", root.Span)
	}
	if _, ok := spanNamed(spans, "chat unsampled"); ok {
		t.Error("a call of an unsampled trace was traced")
	}
}

// A call refused before it is judged has a span of its own, ended at once with the outcome
// refused and the code the client was answered with; its body is never in it.
func TestRefusedCallsAreTraced(t *testing.T) {
	col := otlptest.NewHTTP(t)
	tr := tracerTo(t, col, "http/protobuf")
	h := newHarness(t, streamPolicy, withConfig(func(c *Config) { c.Tracer = tr; c.MaxBodyBytes = 4096 }))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	parent := []string{"Traceparent", "00-" + traceID + "-00f067aa0ba902b7-01"}

	resp, _ := h.post(t, "/v1/responses", `{"model":"gpt-4o-mini","background":true,"input":"`+canaryPrompt+`"}`, parent...)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("background call: %d", resp.StatusCode)
	}
	resp, _ = h.post(t, "/v1/messages", `{"model":"claude-x","messages":[{"role":"user","content":"`+strings.Repeat(canaryPrompt, 400)+`"}]}`, parent...)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized call: %d", resp.StatusCode)
	}
	resp, _ = h.post(t, "/v1/chat/completions", `{"model": "x", "messages": [`+canaryPrompt, parent...)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("malformed call: %d", resp.StatusCode)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := col.WaitSpans(3, 5*time.Second)
	got := map[string]int{}
	for _, s := range spans {
		if hex.EncodeToString(s.GetTraceId()) != traceID {
			t.Errorf("span %q is not in the caller's trace", s.GetName())
		}
		if otlptest.Str(s.GetAttributes(), "guardrail.request.outcome") != "refused" {
			t.Errorf("span %q: outcome %q", s.GetName(), otlptest.Str(s.GetAttributes(), "guardrail.request.outcome"))
		}
		code := otlptest.Str(s.GetAttributes(), "guardrail.refusal.code")
		got[code]++
		if code == "unsupported_parameter" && s.GetName() != "chat gpt-4o-mini" {
			t.Errorf("the background call's span is named %q, want its model in it", s.GetName())
		}
	}
	for code, n := range map[string]int{"unsupported_parameter": 1, "request_too_large": 1, "invalid_request": 1} {
		if got[code] != n {
			t.Errorf("%d spans with refusal code %s, want %d (all: %v)", got[code], code, n, got)
		}
	}
	if bytes.Contains(col.Raw(), []byte(canaryPrompt)) {
		t.Error("the exported spans contain the refused call's prompt")
	}
}

// A keyless call refused over its namespace's budget is a span with the code the SDKs
// surface (budget_exceeded): the trace says why the call never reached the provider.
func TestABudgetRefusalIsTraced(t *testing.T) {
	col := otlptest.NewHTTP(t)
	tr := tracerTo(t, col, "http/protobuf")
	k := newKeylessHarness(t, []string{"openai-prod"}, nil, withConfig(func(c *Config) { c.Namespace = "shop"; c.Tracer = tr }))
	oa := k.openai(openaiCred)
	oa.Exhausted, oa.ExhaustedUntil = guardv1.BudgetTokensPerMinute, time.Now().Add(time.Minute)
	k.apply(t, oa)
	resp, _ := k.do(t, "POST", "/v1/chat/completions", keylessChat, "Authorization", "Bearer "+guardv1.PlaceholderAPIKey)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%d, want 429", resp.StatusCode)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := col.WaitSpans(1, 5*time.Second)
	if len(spans) != 1 || otlptest.Str(spans[0].GetAttributes(), "guardrail.refusal.code") != guardv1.CodeBudgetExceeded ||
		otlptest.Str(spans[0].GetAttributes(), "guardrail.request.outcome") != "refused" {
		t.Fatalf("the refused call's spans: %v", spans)
	}
}
