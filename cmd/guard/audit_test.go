package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/audit"
	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// auditPolicy blocks prompts naming the secret project (Enforce) and reports answers
// naming it (Report).
const auditPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: words, namespace: team-a}
spec:
  builtin:
    keywords: [{category: secret-project, words: [quokkacanary]}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: input-block, namespace: team-a}
spec:
  mode: Enforce
  classifierRef: {name: words}
  phases: [Input]
  threshold: 0.5
  action: Block
  reason: Not discussed here.
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: output-report, namespace: team-a}
spec:
  mode: Report
  classifierRef: {name: words}
  phases: [Output]
  threshold: 0.5
  action: Block
  reason: Not discussed here.
`

// Canaries: text the log must never hold. The matched word is one of them.
const (
	canaryPrompt     = "CANARY-PROMPT-7f3a"
	canaryCompletion = "CANARY-COMPLETION-91c2"
	canaryKey        = "sk-CANARY-KEY-55d1"
	canaryRequestID  = "CANARY-REQID-e4"
	canaryMatch      = "quokkacanary"
)

// syncBuffer is a buffer written by the proxy's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAuditLogOfRequestsThroughTheProxy: a guard with --audit-log, serving on loopback in
// front of a fake provider, writes a line per request's decision with the schema's fields,
// and neither its audit log nor its own log holds the prompt, the completion, the matched
// word, the API key or a request id that is not an id.
func TestAuditLogOfRequestsThroughTheProxy(t *testing.T) {
	provider := fakeprovider.New()
	t.Cleanup(provider.Close)
	up := httptest.NewServer(provider)
	t.Cleanup(up.Close)
	upURL, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}

	var o options
	fs := flag.NewFlagSet("guard", flag.ContinueOnError)
	o.audit.register(fs)
	if err := fs.Parse([]string{"--audit-log", "--audit-log-rate=0"}); err != nil {
		t.Fatal(err)
	}
	o.pod, o.namespace = "chat-7d9f", "team-a"
	auditOut, guardLog := &syncBuffer{}, &syncBuffer{}
	o.audit.out = auditOut
	log := slog.New(slog.NewJSONHandler(guardLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tel := telemetry.New(nil)
	px := proxy.New(proxy.Config{OpenAIUpstream: upURL, AnthropicUpstream: upURL, Pod: o.pod, Namespace: o.namespace,
		Telemetry: tel, Log: log})
	if err := startAudit(o, tel, nil, log); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := (&policysource.File{Path: path}).Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := px.Apply(snap); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(routes(px, mcpHandler(o, px, tel, nil, log)))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("not on loopback: %s", srv.URL)
	}

	post := func(body string, header ...string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+canaryKey)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// 1. A prompt naming the project: blocked at Input. Its request id is free text.
	if code := post(`{"model":"gpt-4o","messages":[{"role":"user","content":"`+canaryPrompt+` tell me about `+canaryMatch+`"}]}`,
		"X-Request-Id", canaryRequestID+" with spaces", "Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); code == http.StatusOK {
		t.Fatalf("the prompt was not blocked (%d)", code)
	}
	// 2. A clean prompt whose answer names it: allowed at Input, would be blocked at Output.
	provider.Enqueue(fakeprovider.Reply(canaryCompletion + " all about " + canaryMatch))
	if code := post(`{"model":"gpt-4o","messages":[{"role":"user","content":"`+canaryPrompt+` hello"}]}`,
		"X-Request-Id", "req-42"); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}

	var lines []audit.Line
	for deadline := time.Now().Add(5 * time.Second); ; {
		if strings.Count(auditOut.String(), "\n") >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := auditOut.String()
	for _, raw := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		var l audit.Line
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %q: %v", raw, err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out)
	}
	type key struct{ guardrail, outcome string }
	byKey := map[key]audit.Line{}
	for _, l := range lines {
		byKey[key{l.Guardrail, l.Outcome}] = l
		if l.Schema != audit.Schema || l.Pod != "chat-7d9f" || l.Namespace != "team-a" || l.GuardrailNamespace != "team-a" ||
			l.ClusterScoped || l.Model != "gpt-4o" || l.GuardVersion == "" || len(l.Incarnation) != 16 {
			t.Errorf("line %+v", l)
		}
		if ts, err := time.Parse(time.RFC3339Nano, l.Time); err != nil || time.Since(ts) > time.Minute {
			t.Errorf("time %q", l.Time)
		}
	}
	b := byKey[key{"input-block", "blocked"}]
	if b.Phase != "Input" || b.Action != "Block" || b.Mode != "Enforce" || strings.Join(b.Categories, ",") != "secret-project" ||
		b.RequestID != "" || b.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || b.SpanID != "00f067aa0ba902b7" {
		t.Errorf("the blocked request's line: %+v", b)
	}
	if a := byKey[key{"input-block", "allowed"}]; a.Phase != "Input" || a.Action != "Allow" || a.RequestID != "req-42" || a.TraceID != "" {
		t.Errorf("the allowed request's line: %+v", a)
	}
	w := byKey[key{"output-report", "wouldBlock"}]
	if w.Phase != "Output" || w.Action != "Block" || w.Mode != "Report" || strings.Join(w.Categories, ",") != "secret-project" ||
		w.RequestID != "req-42" {
		t.Errorf("the reported answer's line: %+v", w)
	}

	for name, text := range map[string]string{"audit log": out, "guard log": guardLog.String()} {
		for _, canary := range []string{canaryPrompt, canaryCompletion, canaryKey, canaryRequestID, canaryMatch} {
			if strings.Contains(text, canary) {
				t.Errorf("the %s holds %s:\n%s", name, canary, text)
			}
		}
	}
	if !strings.Contains(guardLog.String(), "Audit log on") {
		t.Errorf("the guard did not log that the audit log is on:\n%s", guardLog.String())
	}

	// The metrics count the lines.
	var text bytes.Buffer
	if err := tel.Registry.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"guard_audit_lines_total 3", "guard_audit_lines_dropped_total 0", "guard_audit_write_errors_total 0"} {
		if !strings.Contains(text.String(), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestAuditLogIsOffByDefault(t *testing.T) {
	var o options
	fs := flag.NewFlagSet("guard", flag.ContinueOnError)
	o.audit.register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	o.audit.out = out
	tel := telemetry.New(nil)
	if err := startAudit(o, tel, nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := tel.Registry.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "guard_audit_") {
		t.Error("audit metrics registered with the log off")
	}
	// Nothing installed: a request's telemetry is the shared one that records nothing.
	if first, second := tel.Begin(), tel.Begin(); first != second {
		t.Error("requests are recorded with the audit log off")
	}
}

func TestAuditLogFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{{"--audit-log", "--audit-log-rate=-1"}, {"--audit-log", "--audit-log-burst=0"}} {
		var o options
		fs := flag.NewFlagSet("guard", flag.ContinueOnError)
		o.audit.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := startAudit(o, telemetry.New(nil), nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
