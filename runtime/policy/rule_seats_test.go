package policy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/celcheck"
)

// TestTheSamplesRulesRunInTheGuardAsCELRunsThem takes a user's seat: every rule of the
// Guardrails shipped in config/samples (written before the guard had its own evaluator) is
// admitted by the manager's cel-go check, compiles as the guard compiles it (no checker),
// and matches exactly when cel-go's program does, over judges' answers and refusals of
// every probability, score and choice the samples' classifiers can return.
func TestTheSamplesRulesRunInTheGuardAsCELRunsThem(t *testing.T) {
	var exprs []string
	err := filepath.WalkDir(filepath.Join("..", "..", "config", "samples"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		b, err := os.ReadFile(path) //nolint:gosec // the repository's own samples
		if err != nil {
			return err
		}
		exprs = append(exprs, manifestRules(b)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 2 {
		t.Fatalf("found %d rules in config/samples; the samples hold at least the topic and injection judges'", len(exprs))
	}

	SetRuleChecker(nil) // as the guard compiles
	t.Cleanup(func() { SetRuleChecker(celcheck.Check) })
	answers := []classify.Answer{{Type: classify.Refused}}
	for _, p := range []float64{0, 0.5, 0.8, 0.8000001, 1} {
		for _, choice := range []string{"", "other", "billing", "Other"} {
			answers = append(answers, classify.Answer{Probability: p, Score: p, Choice: choice})
		}
	}
	for _, expr := range exprs {
		if err := celcheck.Check(expr); err != nil {
			t.Errorf("%s: the manager refuses a sample's rule: %v", expr, err)
			continue
		}
		ref, err := celcheck.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		guard, err := NewRule("sample", expr, ActionBlock, "")
		if err != nil {
			t.Errorf("%s: the guard refuses a sample's rule: %v", expr, err)
			continue
		}
		qs := guard.program.KeyRefs("answers")
		c := &Classifier{}
		for _, q := range qs {
			c.Questions = append(c.Questions, Question{ID: q})
		}
		for _, a := range answers {
			res := classify.Result{}
			for range qs {
				res.Answers = append(res.Answers, a)
			}
			act := NewActivation(c, res)
			want, wantErr := ref.Eval(act.answers, act.scores)
			got, gotErr := guard.Match(act)
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("%s with %+v: the guard says %v, %v; cel-go %v, %v", expr, a, got, gotErr, want, wantErr)
			}
		}
	}
}

// manifestRules returns the rule expressions of the YAML documents in b, up to the end or
// the first document that is not a manifest.
func manifestRules(b []byte) []string {
	var exprs []string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc struct {
			Spec struct {
				Rules []struct {
					Expression string `yaml:"expression"`
				} `yaml:"rules"`
			} `yaml:"spec"`
		}
		if dec.Decode(&doc) != nil {
			return exprs
		}
		for _, r := range doc.Spec.Rules {
			exprs = append(exprs, r.Expression)
		}
	}
}

// TestAJudgesAnswerNeverReachesAnEvaluationError takes an attacker's seat: a judge's
// answer follows the text it judged, so a prompt can make its choice any string. A rule
// that indexes by it fails when no such answer exists, and that error is logged and
// recorded by the guard; it must not carry the choice.
func TestAJudgesAnswerNeverReachesAnEvaluationError(t *testing.T) {
	const canary = "CANARY-4f1d sk-ant-api03-leaked"
	c := &Classifier{Questions: []Question{{ID: "topic", Type: QuestionChoice}}}
	act := NewActivation(c, classify.Result{Answers: []classify.Answer{{Choice: canary}}})
	for expr, fails := range map[string]bool{
		"answers[answers.topic.choice].type == 'answer'":                          true,
		"answers.topic.choice.matches(answers.topic.choice + '(')":                true,
		"int(answers.topic.choice) > 1":                                           true,
		"double(answers.topic.choice) > 1.0":                                      true,
		"answers.topic.choice in {'a': 1} && {'a': 1}[answers.topic.choice] == 1": false,
	} {
		r, err := NewRule("r", expr, ActionBlock, "")
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		got, err := r.Match(act)
		switch {
		case got:
			t.Errorf("%s matched", expr)
		case (err != nil) != fails:
			t.Errorf("%s: err = %v, want an error: %v", expr, err, fails)
		case err != nil && strings.Contains(err.Error(), "CANARY"):
			t.Errorf("%s: the error carries the judge's answer: %v", expr, err)
		}
	}
}
