package telemetry

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// TestDecisionsAreCountedUnderTheirOwnLabels: records of several guardrails, phases and
// outcomes, interleaved and from several goroutines, each land in their own series of
// guard_decisions_total (a stream's repeated records take a shortcut to their series).
func TestDecisionsAreCountedUnderTheirOwnLabels(t *testing.T) {
	tel := New(nil)
	records := []engine.Record{
		rec("ns/a", policy.PhaseStream, guardv1.OutcomeAllowed), rec("ns/a", policy.PhaseStream, guardv1.OutcomeAllowed),
		rec("ns/b", policy.PhaseStream, guardv1.OutcomeAllowed), rec("ns/a", policy.PhaseStream, guardv1.OutcomeBlocked),
		rec("ns/a", policy.PhaseInput, guardv1.OutcomeAllowed), rec("ns/a", policy.PhaseStream, guardv1.OutcomeAllowed),
		rec("ns/a", policy.PhaseToolCalls, guardv1.OutcomeWouldBlock),
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				for _, r := range records {
					tel.Record(r)
				}
			}
		})
	}
	wg.Wait()
	var out bytes.Buffer
	if err := tel.Registry.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`guard_decisions_total{guardrail="ns/a",outcome="allowed",phase="Stream"} 2400`,
		`guard_decisions_total{guardrail="ns/b",outcome="allowed",phase="Stream"} 800`,
		`guard_decisions_total{guardrail="ns/a",outcome="blocked",phase="Stream"} 800`,
		`guard_decisions_total{guardrail="ns/a",outcome="allowed",phase="Input"} 800`,
		`guard_decisions_total{guardrail="ns/a",outcome="wouldBlock",phase="ToolCalls"} 800`,
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("missing %s in\n%s", want, grepLines(out.String(), "guard_decisions_total{"))
		}
	}
}

func grepLines(s, sub string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
