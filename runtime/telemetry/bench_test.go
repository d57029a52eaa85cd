package telemetry

import (
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// The guard records on every request and stream event: these are its per-request costs
// of telemetry (run with -benchmem; allocations on this path are a regression).

func benchRecord() engine.Record {
	r := rec("team-a/pii", policy.PhaseInput, guardv1.OutcomeBlocked, "email")
	r.Classifier, r.Duration = "team-a/builtin", 120*time.Microsecond
	return r
}

func BenchmarkRecord(b *testing.B) {
	tel, r := New(nil), benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		tel.Record(r)
	}
}

func BenchmarkRecordParallel(b *testing.B) {
	tel, r := New(nil), benchRecord()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tel.Record(r)
		}
	})
}

// BenchmarkRequest is what every request pays besides its evaluations: its outcome and
// the latency the guard added.
func BenchmarkRequest(b *testing.B) {
	tel := New(nil)
	b.ReportAllocs()
	for b.Loop() {
		tel.Request("chat", "allowed")
		tel.Added("chat", 300*time.Microsecond)
	}
}

func BenchmarkRequestParallel(b *testing.B) {
	tel := New(nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tel.Request("chat", "allowed")
			tel.Added("chat", 300*time.Microsecond)
		}
	})
}

// BenchmarkHeldBack is what each stream event pays for the held-back gauge.
func BenchmarkHeldBack(b *testing.B) {
	tel := New(nil)
	b.ReportAllocs()
	for b.Loop() {
		tel.HeldBack(512)
		tel.HeldBack(-512)
	}
}
