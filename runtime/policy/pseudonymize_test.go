package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

func TestCompilePseudonymize(t *testing.T) {
	pii := mustClassifier(t, classifierObj("pii"))
	scored := mustClassifier(t, classifierObj("scored", judge([]string{"pii"})))
	pseudonymize := func(phases ...spec.Phase) func(*GuardrailObject) {
		return func(g *GuardrailObject) { g.Spec.Action, g.Spec.Phases = spec.ActionPseudonymize, phases }
	}
	t.Run("on Input and ToolResults it compiles to a sanitizer that judges every message", func(t *testing.T) {
		g := guardrailObj("g", "pii", pseudonymize(spec.PhaseInput, spec.PhaseToolResults), func(g *GuardrailObject) {
			g.Spec.Messages = spec.MessagesLast
		})
		got, err := CompileGuardrail(&g, pii)
		if err != nil {
			t.Fatal(err)
		}
		assertEq(t, got.Action, ActionPseudonymize)
		assertEq(t, got.Sanitizer(), true)
		assertEq(t, got.AllMessages, true)
		assertEq(t, got.Action.String(), "Pseudonymize")
	})
	refused := []struct {
		name     string
		phases   []spec.Phase
		wantPath string
	}{
		{"the default phases include Output", nil, "spec.phases"},
		{"Output", []spec.Phase{spec.PhaseInput, spec.PhaseOutput}, "spec.phases[1]"},
		{"Stream", []spec.Phase{spec.PhaseStream}, "spec.phases[0]"},
		{"ToolCalls", []spec.Phase{spec.PhaseToolResults, spec.PhaseToolCalls}, "spec.phases[1]"},
	}
	for _, tt := range refused {
		t.Run("on "+tt.name+" it is refused naming the field", func(t *testing.T) {
			g := guardrailObj("g", "pii", pseudonymize(tt.phases...))
			_, err := CompileGuardrail(&g, pii)
			var perr *Error
			if !errors.As(err, &perr) || perr.Reason != spec.ReasonInvalidSpec ||
				!strings.Contains(perr.Message(), tt.wantPath) || !strings.Contains(perr.Message(), "Input and ToolResults phases only") {
				t.Fatalf("err = %v, want InvalidSpec naming %s", err, tt.wantPath)
			}
		})
	}
	t.Run("with a classifier that returns no spans it does not fit the classifier", func(t *testing.T) {
		g := guardrailObj("g", "scored", pseudonymize(spec.PhaseInput))
		_, err := CompileGuardrail(&g, scored)
		var perr *Error
		if !errors.As(err, &perr) || perr.Reason != spec.ReasonClassifierMismatch || !strings.Contains(perr.Message(), "Pseudonymize needs a classifier that returns spans") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestActionStrength(t *testing.T) {
	order := []Action{ActionAllow, ActionWarn, ActionPseudonymize, ActionRedact, ActionStrip, ActionBlock}
	for i := range order {
		for j := range order {
			if got := order[i].Stronger(order[j]); got != (i > j) {
				t.Errorf("%s.Stronger(%s) = %v", order[i], order[j], got)
			}
		}
	}
	// The snapshot encodes actions as numbers: the existing ones keep theirs.
	for want, a := range []Action{ActionAllow, ActionWarn, ActionRedact, ActionStrip, ActionBlock, ActionPseudonymize} {
		assertEq(t, int(a), want)
	}
}
