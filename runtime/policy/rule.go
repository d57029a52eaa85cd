package policy

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/rulelang"
)

// Answer is a judge's answer as CEL rules see it: answers.<question>.type is "answer" or
// "refusal"; the numeric fields of a refusal read as 0.
type Answer = rulelang.Answer

// Answer types as CEL rules see them.
const (
	AnswerTypeAnswer  = "answer"
	AnswerTypeRefusal = "refusal"
)

// Rule is a compiled CEL rule.
type Rule struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
	Action     Action `json:"action"`
	// Reason a blocked caller receives (the guardrail's reason when the rule has none).
	Reason string `json:"reason"`

	program *rulelang.Program
}

// UnmarshalJSON decodes a rule and compiles its expression again, so that a snapshot read
// back from JSON is ready to evaluate.
func (r *Rule) UnmarshalJSON(b []byte) error {
	type plain Rule
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	prg, err := compileExpression(r.Expression)
	if err != nil {
		return fmt.Errorf("rule %s: %w", r.Name, err)
	}
	r.program = prg
	return nil
}

// Activation holds the variables a result exposes to CEL rules. Build it once per result
// and evaluate every rule of the guardrail against it.
type Activation struct {
	answers map[string]Answer
	scores  map[string]float64
}

// NewActivation exposes res, a result of classifier c, as answers and scores.
func NewActivation(c *Classifier, res classify.Result) *Activation {
	answers := make(map[string]Answer, len(c.Questions))
	for i, q := range c.Questions {
		if i >= len(res.Answers) {
			break
		}
		a := res.Answers[i]
		if a.Type == classify.Refused {
			answers[q.ID] = Answer{Type: AnswerTypeRefusal}
			continue
		}
		answers[q.ID] = Answer{Type: AnswerTypeAnswer, Probability: a.Probability, Choice: a.Choice, Score: a.Score}
	}
	scores := make(map[string]float64, len(c.Categories))
	for i, cat := range c.Categories {
		if i < len(res.Scores) {
			scores[cat.ID] = res.Scores[i]
		}
	}
	return &Activation{answers: answers, scores: scores}
}

// Match evaluates the rule. An error (a missing answer, a cost overrun) is an evaluation
// failure for the caller to record.
func (r *Rule) Match(act *Activation) (bool, error) {
	if r.program == nil {
		return false, fmt.Errorf("rule %s is not compiled", r.Name)
	}
	b, err := r.program.Eval(act.answers, act.scores)
	if err != nil {
		return false, fmt.Errorf("rule %s: %w", r.Name, err)
	}
	return b, nil
}

// ruleChecker type-checks an expression with cel-go (runtime/policy/celcheck) in the
// binaries that link it: the manager and the kubectl plugin (internal/rulecheck sets it).
// The guard does not link cel-go; it parses rules with rulelang alone.
var ruleChecker atomic.Pointer[func(string) error]

// SetRuleChecker has every rule compiled from now on type-checked by check first, whose
// error is the rule's; nil removes the check.
func SetRuleChecker(check func(expr string) error) {
	if check == nil {
		ruleChecker.Store(nil)
		return
	}
	ruleChecker.Store(&check)
}

// compileExpression checks expr with the rule checker, when one is set, and parses it
// with rulelang, which refuses what it does not implement.
func compileExpression(expr string) (*rulelang.Program, error) {
	if check := ruleChecker.Load(); check != nil {
		if err := (*check)(expr); err != nil {
			return nil, err
		}
	}
	return rulelang.Parse(expr)
}

// NewRule compiles a rule against the generic environment (without checking the keys it
// reads against a classifier; Compile does that). Tests and tools use it to build rules.
func NewRule(name, expression string, action Action, reason string) (*Rule, error) {
	prg, err := compileExpression(expression)
	if err != nil {
		return nil, fmt.Errorf("rule %s: %w", name, err)
	}
	return &Rule{Name: name, Expression: expression, Action: action, Reason: reason, program: prg}, nil
}
