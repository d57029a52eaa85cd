package intake

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// engineOutcomes reads the outcomes a guard can record from the engine's source: every
// constant of type Outcome in runtime/engine/record.go. A new outcome there that the
// intake does not know would make it refuse every batch of a guard that recorded one.
func engineOutcomes(t *testing.T) []string {
	t.Helper()
	file := filepath.Join("..", "..", "..", "runtime", "engine", "record.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Outcome" {
				continue
			}
			for _, val := range v.Values {
				lit, ok := val.(*ast.BasicLit)
				if !ok {
					t.Fatalf("outcome %v is not a string literal", val)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
	}
	if len(out) < 12 {
		t.Fatalf("found %d outcomes in %s: %v", len(out), file, out)
	}
	return out
}

func TestEveryOutcomeAGuardRecordsIsAcceptedAndCounted(t *testing.T) {
	for _, o := range engineOutcomes(t) {
		if !knownOutcomes[o] {
			t.Errorf("outcome %q: a batch carrying it would be refused whole", o)
			continue
		}
		st := v1alpha1.GuardrailStatus{}
		d := newDelta()
		d.outcomes[o] = 3
		addDecisions(&st, d)
		if reflect.DeepEqual(*st.Decisions, v1alpha1.DecisionCounts{}) {
			t.Errorf("outcome %q is accepted but counted nowhere in status.decisions", o)
		}
	}
}
