package policy

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// TestAnswerTypeInRules pins what a rule can do with an answer: its four fields and their
// types, presence, equality, and the errors an author sees. These cases were first run
// against cel-go with its reflection-based native types (ext.NativeTypes), then with the
// answer type of celcheck/answer_type.go, then with the guard's evaluator (rulelang) after
// cel-go's check, with the same results except for what the rules no longer have: cel-go's
// string extension, and the type's name, dyn() and building an answer in a rule, which
// rulelang refuses.
func TestAnswerTypeInRules(t *testing.T) {
	c := &Classifier{
		Questions:  []Question{{ID: "topic", Type: QuestionChoice}, {ID: "unsafe", Type: QuestionBoolean}, {ID: "quality", Type: QuestionScore}},
		Categories: []Category{{ID: "pii"}},
	}
	res := classify.Result{
		Scores: []float64{0.75},
		Answers: []classify.Answer{
			{Choice: "other"},
			{Type: classify.Refused},
			{Probability: 0.25, Score: 0.5},
		},
	}
	act := NewActivation(c, res)

	matches := map[string]bool{
		"answers.topic.type == 'answer' && answers.topic.choice == 'other'":            true,
		"answers.unsafe.type == 'refusal' && answers.unsafe.probability == 0.0":        true,
		"answers.quality.score < 1.0 && answers.quality.probability + 0.5 == 0.75":     true,
		"has(answers.topic.choice) && !has(answers.topic.probability)":                 true,
		"has(answers.unsafe.type) && !has(answers.unsafe.choice)":                      true,
		"answers.topic == answers.unsafe":                                              false,
		"'topic' in answers && !('missing' in answers)":                                true,
		"answers.topic.choice.startsWith('oth') && answers.topic.choice.matches('^o')": true,
		"size(answers.topic.choice) == 5 && answers.topic.choice in ['other', 'x']":    true,
		"answers.all(q, answers[q].type == 'answer')":                                  false,
		"answers.exists(q, answers[q].type == 'refusal')":                              true,
		"scores.pii > 0.5 && scores['pii'] < 1.0":                                      true,
		"string(answers.quality.score) == '0.5'":                                       true,
		"answers['topic'].choice == 'other'":                                           true,
	}
	for expr, want := range matches {
		r, err := NewRule("r", expr, ActionBlock, "")
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		got, err := r.Match(act)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got != want {
			t.Errorf("%s = %v, want %v", expr, got, want)
		}
	}

	refused := map[string]string{
		"answers.topic.chioce == 'x'":             "undefined field 'chioce'",
		"answers.topic.probability > 'x'":         "found no matching overload for '_>_' applied to '(double, string)'",
		"answers.topic.choice > 1.0":              "found no matching overload for '_>_' applied to '(string, double)'",
		"answers.topic":                           "must evaluate to a bool, not policy.Answer",
		"policy.Answer{choice: 1.0}.choice == ''": "expected type of field 'choice' is 'string' but provided type is 'double'",
		"policy.Answer{nope: 1}.type == ''":       "undefined field 'nope'",
		// cel-go's string extension is not linked by the guard (answer_type.go).
		"answers.topic.choice.lowerAscii() == 'other'": "undeclared reference to 'lowerAscii'",
		// What cel-go accepts and the guard's evaluator (rulelang) does not implement.
		"type(answers.topic) == policy.Answer":                            "not supported in guardrail rules: function 'type'",
		"answers.topic == policy.Answer{type: 'answer', choice: 'other'}": "not supported in guardrail rules: message construction",
		"dyn(answers.quality.probability) == 0.25":                        "not supported in guardrail rules: function 'dyn'",
	}
	for expr, want := range refused {
		if _, err := NewRule("r", expr, ActionBlock, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one containing %q", expr, err, want)
		}
	}

	failing := map[string]string{
		"answers.missing.choice == 'other'": "no such key: missing",
	}
	for expr, want := range failing {
		r, err := NewRule("r", expr, ActionBlock, "")
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got, err := r.Match(act); err == nil || !strings.Contains(err.Error(), want) || got {
			t.Errorf("%s: got %v, %v; want an error containing %q", expr, got, err, want)
		}
	}
}
