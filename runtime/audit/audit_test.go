package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

var end = time.Date(2026, 12, 6, 23, 49, 45, 123456789, time.FixedZone("CET", 3600))

func blocked() engine.Record {
	return engine.Record{Guardrail: "team-a/pii", Generation: 3, Classifier: "team-a/builtin", Phase: policy.PhaseInput,
		Outcome: guardv1.OutcomeBlocked, Mode: policy.ModeEnforce,
		Findings: []engine.Finding{{Kind: engine.FindingCategory, Name: "email", Score: 1, Threshold: 0.5},
			{Kind: engine.FindingRule, Name: "no-secrets"}, {Kind: engine.FindingCategory, Name: "phone"}},
		Escalated: true,
		IDs: engine.IDs{Pod: "ignored", RequestID: "req-42", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
			SpanID: "00f067aa0ba902b7", Model: "gpt-4o"}}
}

// decode reads the lines of out, each strictly as a Line: no field the schema lacks.
func decode(t *testing.T, out string) []Line {
	t.Helper()
	var lines []Line
	for _, raw := range strings.SplitAfter(out, "\n") {
		if raw == "" {
			continue
		}
		if !strings.HasSuffix(raw, "\n") {
			t.Fatalf("a line without its newline: %q", raw)
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		var l Line
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %q: %v", raw, err)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestLineHasTheSchemaFields(t *testing.T) {
	var out bytes.Buffer
	l := New(Config{Out: &out, Pod: "chat-7d9f", Namespace: "team-a", Version: "v0.9.0", Incarnation: "0123456789abcdef"})
	cluster := engine.Record{Guardrail: "/baseline", Generation: 1, Phase: policy.PhaseOutput,
		Outcome: guardv1.OutcomeWouldRedact, Mode: policy.ModeReport}
	failed := engine.Record{Guardrail: "team-a/judge", Phase: policy.PhaseStream, Outcome: guardv1.OutcomeFailed,
		Mode: policy.ModeEnforce, Code: "timeout", Partial: true,
		Findings: []engine.Finding{{Kind: engine.FindingNotInspected, Name: "image"}}}
	l.Decisions(telemetry.RequestDecisions{Decisions: []engine.Record{blocked(), cluster, failed}, End: end})

	got := decode(t, out.String())
	want := []Line{
		{Schema: Schema, Time: "2026-12-06T22:49:45.123Z", Pod: "chat-7d9f", Namespace: "team-a", Guardrail: "pii",
			GuardrailNamespace: "team-a", Generation: 3, Phase: "Input", Outcome: "blocked", Action: "Block",
			Mode: "Enforce", Categories: []string{"email", "phone"}, Rules: []string{"no-secrets"}, Escalated: true,
			RequestID: "req-42", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Model: "gpt-4o",
			GuardVersion: "v0.9.0", Incarnation: "0123456789abcdef"},
		{Schema: Schema, Time: "2026-12-06T22:49:45.123Z", Pod: "chat-7d9f", Namespace: "team-a", Guardrail: "baseline",
			ClusterScoped: true, Generation: 1, Phase: "Output", Outcome: "wouldRedact", Action: "Redact", Mode: "Report",
			GuardVersion: "v0.9.0", Incarnation: "0123456789abcdef"},
		{Schema: Schema, Time: "2026-12-06T22:49:45.123Z", Pod: "chat-7d9f", Namespace: "team-a", Guardrail: "judge",
			GuardrailNamespace: "team-a", Phase: "Stream", Outcome: "failed", Mode: "Enforce", NotInspected: []string{"image"},
			Code: "timeout", Partial: true, GuardVersion: "v0.9.0", Incarnation: "0123456789abcdef"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), out.String())
	}
	for i := range want {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if !bytes.Equal(g, w) {
			t.Errorf("line %d:\n got %s\nwant %s", i, g, w)
		}
	}
	// The fields come in the schema's order, the schema first.
	if !strings.HasPrefix(out.String(), `{"schema":"guardrail.dev/decision/v1","time":"2026-12-06T22:49:45.123Z","pod":`) {
		t.Errorf("line starts %.80s", out.String())
	}
}

// TestClientValuesThatAreNotIDsAreLeftOut: the request id, traceparent and model come from
// the client; what does not look like an id is not written, whatever it holds.
func TestClientValuesThatAreNotIDsAreLeftOut(t *testing.T) {
	const canary = "CANARY-c0ffee"
	for _, ids := range []engine.IDs{
		{RequestID: "my prompt says " + canary},
		{RequestID: strings.Repeat("a", 65) + canary},
		{TraceID: "zz" + strings.Repeat("0", 30), SpanID: canary},
		{TraceID: strings.Repeat("0", 32)},
		{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: canary + "xxxxxxx"},
		{Model: "gpt-4o\nsay " + canary},
		{Model: strings.Repeat("m", 129)},
	} {
		var out bytes.Buffer
		r := blocked()
		r.IDs = ids
		New(Config{Out: &out}).Decisions(telemetry.RequestDecisions{Decisions: []engine.Record{r}, End: end})
		if strings.Contains(out.String(), canary) || strings.Contains(out.String(), "mmmmmmmm") ||
			strings.Contains(out.String(), "aaaaaaaa") || strings.Contains(out.String(), `"spanId"`) {
			t.Errorf("ids %+v written:\n%s", ids, out.String())
		}
		decode(t, out.String())
	}
}

// TestStringsStayOneJSONLine: names come from the policy, but whatever they hold, a line
// stays one valid JSON line that decodes to what encoding/json would (invalid UTF-8 as
// U+FFFD).
func TestStringsStayOneJSONLine(t *testing.T) {
	for _, s := range []string{"plain", `q"uo\te`, "new\nline\r\t", "\x00\x01\x1f", "<a>&b", "é ü 日本", "bad\xffutf8",
		"\u2028\u2029", ""} {
		got := jsonx.AppendString(nil, s)
		want, _ := json.Marshal(s)
		var gotS, wantS string
		if err := json.Unmarshal(got, &gotS); err != nil || bytes.ContainsAny(got, "\n\r") {
			t.Errorf("%q: %s is not one JSON string: %v", s, got, err)
		}
		_ = json.Unmarshal(want, &wantS)
		if gotS != wantS {
			t.Errorf("%q: decodes to %q, encoding/json's to %q", s, gotS, wantS)
		}
	}
}

func TestRateLimitDropsAndCountsAndTellsTheNextLine(t *testing.T) {
	now := end
	var out bytes.Buffer
	l := New(Config{Out: &out, Rate: 2, Burst: 3, Now: func() time.Time { return now }})
	rd := telemetry.RequestDecisions{Decisions: []engine.Record{blocked(), blocked()}, End: end}
	l.Decisions(rd)
	l.Decisions(rd) // 4 lines at once: the burst of 3 is written, 1 dropped
	if l.Written() != 3 || l.Dropped() != 1 {
		t.Fatalf("written %d dropped %d, want 3 and 1", l.Written(), l.Dropped())
	}
	l.Decisions(rd) // no time passed: both dropped
	if l.Dropped() != 3 {
		t.Fatalf("dropped %d, want 3", l.Dropped())
	}
	now = now.Add(time.Second) // two tokens
	l.Decisions(rd)
	lines := decode(t, out.String())
	if len(lines) != 5 || l.Written() != 5 {
		t.Fatalf("%d lines (%d written), want 5", len(lines), l.Written())
	}
	for i, want := range []uint64{0, 0, 0, 3, 0} {
		if lines[i].Dropped != want {
			t.Errorf("line %d says %d dropped before it, want %d", i, lines[i].Dropped, want)
		}
	}
	// A long pause refills the bucket up to its burst only.
	now = now.Add(time.Hour)
	l.Decisions(telemetry.RequestDecisions{Decisions: []engine.Record{blocked(), blocked(), blocked(), blocked()}, End: end})
	if l.Written() != 8 || l.Dropped() != 4 {
		t.Errorf("written %d dropped %d, want 8 and 4", l.Written(), l.Dropped())
	}
}

func TestUnlimitedWritesEveryLine(t *testing.T) {
	var out bytes.Buffer
	l := New(Config{Out: &out})
	for range 1000 {
		l.Decisions(telemetry.RequestDecisions{Decisions: []engine.Record{blocked()}, End: end})
	}
	if l.Written() != 1000 || l.Dropped() != 0 || strings.Count(out.String(), "\n") != 1000 {
		t.Errorf("written %d dropped %d", l.Written(), l.Dropped())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriteErrorsAreCounted(t *testing.T) {
	l := New(Config{Out: failingWriter{}})
	l.Decisions(telemetry.RequestDecisions{Decisions: []engine.Record{blocked(), blocked()}, End: end})
	if l.WriteErrors() != 2 || l.Written() != 0 {
		t.Errorf("write errors %d written %d", l.WriteErrors(), l.Written())
	}
}

// TestTelemetryHandsEachRequestToTheLog: installed on telemetry, the log gets one line
// per guardrail and outcome a request came to (allowed only when nothing else), once the
// request is done, with or without the control plane's sink.
func TestTelemetryHandsEachRequestToTheLog(t *testing.T) {
	for _, withSink := range []bool{false, true} {
		var out bytes.Buffer
		tel := telemetry.New(nil)
		sunk := 0
		if withSink {
			tel.OnRequest(func(telemetry.RequestDecisions) { sunk++ })
		}
		New(Config{Out: &out}).Install(tel)
		req := tel.Begin()
		allowed := blocked()
		allowed.Outcome, allowed.Findings = guardv1.OutcomeAllowed, nil
		req.Record(allowed)
		req.Record(blocked())
		req.Record(blocked()) // the same guardrail and outcome again: one line
		other := allowed
		other.Guardrail = "/baseline"
		req.Record(other)
		if out.Len() != 0 {
			t.Fatal("a line before the request ended")
		}
		req.Done()
		lines := decode(t, out.String())
		if len(lines) != 2 || lines[0].Outcome != "blocked" || lines[1].Guardrail != "baseline" || lines[1].Outcome != "allowed" {
			t.Errorf("sink %v: lines %+v", withSink, lines)
		}
		if withSink && sunk != 1 {
			t.Errorf("the control plane's sink ran %d times", sunk)
		}
	}
}
