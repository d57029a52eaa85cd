package mcp

import (
	"bytes"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
)

// tracedGuard serves the MCP handler with a real engine under enginePolicy (Enforce) and
// the guard's tracing exporting to col.
func tracedGuard(t *testing.T, up *upstream, col *otlptest.Collector) (string, *tracing.Tracer) {
	t.Helper()
	tr := otlptest.Tracer(t, col, "http/protobuf")
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(enginePolicy, "MODE", "Enforce", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := (&policysource.File{Path: path}).Load()
	if err != nil {
		t.Fatal(err)
	}
	tel := telemetry.New(nil)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	px := proxy.New(proxy.Config{Telemetry: tel, Log: quiet})
	if err := px.Apply(snap); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(up.URL + "/mcp")
	h := New(Config{Upstreams: map[string]*url.URL{"tools": target}, Telemetry: tel, Tracer: tr,
		Judges: &EngineJudges{Engine: px.Engine, Pod: "app-1", Telemetry: tel}, Log: quiet})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp/tools", tr
}

// Each POST the guard judges is a span named as MCP's conventions name a client's, a child
// of the caller's context (params._meta over the HTTP header), with the exchange's guardrail
// evaluations as its children; no argument, result or token text is exported.
func TestMCPExchangesAreTraced(t *testing.T) {
	const (
		metaTrace   = "4bf92f3577b34da6a3ce929d0e0e4736"
		metaParent  = "00f067aa0ba902b7"
		headerTrace = "0af7651916cd43dd8448eb211c80319c"
		headerSpan  = "b7ad6b7169203331"
		canaryArg   = "CANARYARGUMENT8c1d"
	)
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		if strings.Contains(string(body), "tools/list") {
			writeJSON(w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read","description":"Reads a file","inputSchema":{"type":"object"}}]}}`))
			return
		}
		writeJSON(w, http.StatusOK, []byte(toolResult(7, "the key is tok_abcd1234")))
	})
	col := otlptest.NewHTTP(t)
	u, tr := tracedGuard(t, up, col)
	header := []string{"Traceparent", "00-" + headerTrace + "-" + headerSpan + "-01", "Mcp-Protocol-Version", "2025-06-18"}

	// Blocked before the server, its context in params._meta.
	readBody(t, post(t, u, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"send","arguments":{"what":"exfiltrate `+canaryArg+`"},
		"_meta":{"traceparent":"00-`+metaTrace+`-`+metaParent+`-01"}}}`, header...))
	// Allowed, its result redacted; the header's context.
	if got := readBody(t, post(t, u, `{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"search","arguments":{"q":"`+canaryArg+`"}}}`, header...)); !strings.Contains(got, "[REDACTED:api-token]") {
		t.Fatalf("the result was not redacted: %s", got)
	}
	readBody(t, post(t, u, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, header...))

	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := col.WaitSpans(3, 5*time.Second)
	byName := map[string]otlptest.Span{}
	children := map[string][]otlptest.Span{}
	for _, s := range spans {
		byName[s.GetName()] = s
		children[hex.EncodeToString(s.GetParentSpanId())] = append(children[hex.EncodeToString(s.GetParentSpanId())], s)
	}
	evaluations := func(call otlptest.Span) []string {
		var out []string
		for _, c := range children[hex.EncodeToString(call.GetSpanId())] {
			out = append(out, otlptest.Str(c.GetAttributes(), "guardrail.phase")+":"+otlptest.Str(c.GetAttributes(), "guardrail.name")+
				"="+otlptest.Str(c.GetAttributes(), "guardrail.outcome"))
		}
		slices.Sort(out)
		return out
	}

	blocked, ok := byName["tools/call send"]
	if !ok {
		t.Fatalf("no span of the blocked call among %d", len(spans))
	}
	if hex.EncodeToString(blocked.GetTraceId()) != metaTrace || hex.EncodeToString(blocked.GetParentSpanId()) != metaParent {
		t.Errorf("the blocked call's span is not params._meta's child: trace %x parent %x", blocked.GetTraceId(), blocked.GetParentSpanId())
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "send",
		"gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "5", "mcp.protocol.version": "2025-06-18",
		"guardrail.mcp.server": "tools", "server.address": "127.0.0.1", "guardrail.request.outcome": "blocked"} {
		if got := otlptest.Str(blocked.GetAttributes(), k); got != want {
			t.Errorf("blocked call: %s = %q, want %q", k, got, want)
		}
	}
	if got := evaluations(blocked); !slices.Contains(got, "ToolCalls:no-exfiltration=blocked") {
		t.Errorf("the blocked call's evaluations: %v", got)
	}

	allowed, ok := byName["tools/call search"]
	if !ok {
		t.Fatal("no span of the allowed call")
	}
	if hex.EncodeToString(allowed.GetTraceId()) != headerTrace || hex.EncodeToString(allowed.GetParentSpanId()) != headerSpan {
		t.Errorf("the allowed call's span is not the header's child: trace %x parent %x", allowed.GetTraceId(), allowed.GetParentSpanId())
	}
	if got := otlptest.Str(allowed.GetAttributes(), "jsonrpc.request.id"); got != "call-7" {
		t.Errorf("a string id recorded as %q", got)
	}
	if got := otlptest.Str(allowed.GetAttributes(), "guardrail.request.outcome"); got != "allowed" {
		t.Errorf("allowed call: outcome %q", got)
	}
	if got := evaluations(allowed); !slices.Contains(got, "ToolCalls:no-exfiltration=allowed") || !slices.Contains(got, "ToolResults:redact-tokens=redacted") {
		t.Errorf("the allowed call's evaluations: %v", got)
	}

	list, ok := byName["tools/list"]
	if !ok || otlptest.Str(list.GetAttributes(), "gen_ai.tool.name") != "" || otlptest.Str(list.GetAttributes(), "gen_ai.operation.name") != "" {
		t.Errorf("the tools/list span: %v (found %v)", list.Span, ok)
	}

	raw := col.Raw()
	for _, canary := range []string{canaryArg, "tok_abcd1234", "exfiltrate", "Reads a file"} {
		if bytes.Contains(raw, []byte(canary)) {
			t.Errorf("the exported spans contain %q", canary)
		}
	}
}

// A JSON-RPC id is recorded as its value: a string unquoted, a number as written, nothing
// for null or anything else.
func TestRequestIDs(t *testing.T) {
	for in, want := range map[string]string{`5`: "5", `"a-1"`: "a-1", `null`: "", ``: "", `1.5e3`: "1.5e3", `{"x":1}`: "", `"\u0041"`: "A"} {
		if got := requestID([]byte(in)); got != want {
			t.Errorf("requestID(%s) = %q, want %q", in, got, want)
		}
	}
}
