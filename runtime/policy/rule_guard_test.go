package policy

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/celcheck"
)

// TestGuardCompilesRulesWithoutCEL compiles rules as the guard does: with no cel-go
// checker, rulelang alone. A rule the manager admitted compiles and matches; a wrong name
// or field is still refused at compile time; a type error cel-go would have refused at
// apply time, if one reaches the guard anyway (a policy file of its own), is an evaluation
// error when it runs — a recorded failure, never a match or a silent pass.
func TestGuardCompilesRulesWithoutCEL(t *testing.T) {
	SetRuleChecker(nil)
	t.Cleanup(func() { SetRuleChecker(celcheck.Check) })

	c := &Classifier{Questions: []Question{{ID: "topic", Type: QuestionChoice}}, Categories: []Category{{ID: "pii"}}}
	act := NewActivation(c, classify.Result{Scores: []float64{0.9}, Answers: []classify.Answer{{Choice: "other"}}})

	r, err := NewRule("r", "answers.topic.choice == 'other' && scores.pii > 0.5", ActionBlock, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Match(act); err != nil || !got {
		t.Fatalf("an admitted rule: got %v, %v; want a match", got, err)
	}

	for expr, want := range map[string]string{
		"answers.topic.chioce == 'x'":             "undefined field 'chioce'",
		"answerz.topic.choice == 'x'":             "undeclared reference to 'answerz'",
		"answers.topic.choice ==":                 "",
		"type(answers.topic) == policy.Answer":    "not supported in guardrail rules",
		"answers.topic.choice.lowerAscii() == ''": "",
	} {
		_, err := NewRule("r", expr, ActionBlock, "")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one containing %q", expr, err, want)
		}
	}

	for _, expr := range []string{"answers.topic.choice > 1.0", "answers.topic.choice", "scores.pii + 'x' == 'y'"} {
		if celcheck.Check(expr) == nil {
			t.Fatalf("%s: cel-go admits it; the case is meant to be one it refuses", expr)
		}
		r, err := NewRule("r", expr, ActionBlock, "")
		if err != nil {
			continue // refused at compile time: also safe
		}
		if got, err := r.Match(act); err == nil || got {
			t.Errorf("%s: got %v, %v; want an evaluation error", expr, got, err)
		}
	}
}
