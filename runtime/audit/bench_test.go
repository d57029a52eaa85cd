package audit

import (
	"io"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// The cost the audit log adds to a guarded request, measured where the proxy pays it:
// Begin, the records of its evaluations, Done. "off" is the guard without --audit-log
// (nothing installed: the path every request took before the log existed); "on" writes
// a line per decision to io.Discard (the cost of encoding and of the rate limit; a write
// to stdout adds a system call); "on-dropping" is a log over its rate limit.
//
//	go test ./runtime/audit -run '^$' -bench Request -benchmem
func benchRequest(b *testing.B, tel *telemetry.Telemetry) {
	rec := blocked()
	allowed := rec
	allowed.Guardrail, allowed.Outcome, allowed.Findings = "/baseline", guardv1.OutcomeAllowed, nil
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req := tel.Begin()
		req.Record(allowed)
		req.Record(rec)
		req.Done()
	}
}

func BenchmarkRequest(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchRequest(b, telemetry.New(nil)) })
	b.Run("on", func(b *testing.B) {
		tel := telemetry.New(nil)
		New(Config{Out: io.Discard, Pod: "chat-7d9f", Namespace: "team-a", Version: "v0.9.0",
			Incarnation: "0123456789abcdef", Rate: 1e12, Burst: 1 << 30}).Install(tel)
		benchRequest(b, tel)
	})
	b.Run("on-dropping", func(b *testing.B) {
		tel := telemetry.New(nil)
		l := New(Config{Out: io.Discard, Rate: 1e-9, Burst: 1})
		l.Install(tel)
		benchRequest(b, tel)
	})
	// With the control plane's sink installed (an injected guard), off and on.
	sink := func(telemetry.RequestDecisions) {}
	b.Run("control-plane/off", func(b *testing.B) {
		tel := telemetry.New(nil)
		tel.OnRequest(sink)
		benchRequest(b, tel)
	})
	b.Run("control-plane/on", func(b *testing.B) {
		tel := telemetry.New(nil)
		tel.OnRequest(sink)
		New(Config{Out: io.Discard, Pod: "chat-7d9f", Namespace: "team-a", Version: "v0.9.0",
			Incarnation: "0123456789abcdef", Rate: 1e12, Burst: 1 << 30}).Install(tel)
		benchRequest(b, tel)
	})
}

// BenchmarkLine is the encoding of one line alone.
func BenchmarkLine(b *testing.B) {
	f := newFixed(&Config{Pod: "chat-7d9f", Namespace: "team-a", Version: "v0.9.0", Incarnation: "0123456789abcdef"})
	rec := blocked()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendLine(buf[:0], &f, end, &rec, 0)
	}
}
