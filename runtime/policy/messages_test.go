package policy

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// A condition message names the offending field with its full path and says what is
// wrong in words, never as a printed Go struct.
func TestCompileErrorMessages(t *testing.T) {
	tests := []struct {
		name     string
		compile  func() error
		want     []string
		wantNone []string
	}{
		{
			name: "an invalid regular expression is named by its full field path",
			compile: func() error {
				_, err := CompileClassifier(ptr(classifierObj("c", func(c *ClassifierObject) {
					c.Spec.Builtin = &spec.BuiltinBackend{Patterns: []spec.PatternRule{
						{Category: "ok", Regex: "EMP-[0-9]{6}"}, {Category: "employee-id", Regex: "EMP-[0-9"},
					}}
				})), "")
				return err
			},
			want:     []string{"spec.builtin.patterns[1].regex: Invalid value: error parsing regexp: missing closing ]"},
			wantNone: []string{"spec.builtin: Invalid value: patterns"},
		},
		{
			name: "a blank keyword is named by its full field path",
			compile: func() error {
				_, err := CompileClassifier(ptr(classifierObj("c", func(c *ClassifierObject) {
					c.Spec.Builtin = &spec.BuiltinBackend{Keywords: []spec.KeywordRule{
						{Category: "codenames", Words: []string{"bluebird", " "}},
					}}
				})), "")
				return err
			},
			want: []string{"spec.builtin.keywords[0].words[1]: Invalid value: must not be blank"},
		},
		{
			name: "a selector error names the requirement and prints no Go struct",
			compile: func() error {
				c := mustClassifier(t, classifierObj("pii"))
				_, err := CompileGuardrail(ptr(guardrailObj("g", "pii", func(g *GuardrailObject) {
					g.Spec.Selector = &spec.LabelSelector{MatchExpressions: []spec.LabelSelectorRequirement{
						{Key: "tier", Operator: spec.LabelSelectorOpIn},
					}}
				})), c)
				return err
			},
			want:     []string{"spec.selector.matchExpressions[0].values: Required value"},
			wantNone: []string{"&LabelSelector", "MatchLabels:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.compile()
			if err == nil {
				t.Fatal("compiled, want an error")
			}
			msg := err.(*Error).Message()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
			for _, w := range tt.wantNone {
				if strings.Contains(msg, w) {
					t.Errorf("message %q contains %q", msg, w)
				}
			}
		})
	}
}
