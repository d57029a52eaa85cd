package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Answer is a judge's answer as CEL rules see it: answers.<question>.type is "answer" or
// "refusal"; the numeric fields of a refusal read as 0.
type Answer struct {
	Type        string  `cel:"type"`
	Probability float64 `cel:"probability"`
	Choice      string  `cel:"choice"`
	Score       float64 `cel:"score"`
}

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

	program cel.Program
}

// UnmarshalJSON decodes a rule and compiles its expression again, so that a snapshot read
// back from JSON is ready to evaluate.
func (r *Rule) UnmarshalJSON(b []byte) error {
	type plain Rule
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	ast, err := compileExpression(r.Expression)
	if err != nil {
		return fmt.Errorf("rule %s: %w", r.Name, err)
	}
	return r.setProgram(ast)
}

func (r *Rule) setProgram(ast *cel.Ast) error {
	env, err := celEnv()
	if err != nil {
		return err
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(celCostLimit))
	if err != nil {
		return fmt.Errorf("rule %s: %w", r.Name, err)
	}
	r.program = prg
	return nil
}

// celCostLimit bounds the work of one rule evaluation; authored rules over a handful of
// answers stay far below it.
const celCostLimit = 100000

// Activation holds the variables a result exposes to CEL rules. Build it once per result
// and evaluate every rule of the guardrail against it.
type Activation struct {
	vars map[string]any
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
	return &Activation{vars: map[string]any{"answers": answers, "scores": scores}}
}

// Match evaluates the rule. An error (a missing answer, a cost overrun) is an evaluation
// failure for the caller to record.
func (r *Rule) Match(act *Activation) (bool, error) {
	if r.program == nil {
		return false, fmt.Errorf("rule %s is not compiled", r.Name)
	}
	out, _, err := r.program.Eval(act.vars)
	if err != nil {
		return false, fmt.Errorf("rule %s: %w", r.Name, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("rule %s: result is %s, not bool", r.Name, out.Type())
	}
	return b, nil
}

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// celEnv is the environment every rule is compiled in: answers is a map from question id
// to Answer, scores a map from category id to double.
func celEnv() (*cel.Env, error) {
	envOnce.Do(func() {
		env, envErr = cel.NewEnv(
			answerTypes(),
			cel.Variable("answers", cel.MapType(cel.StringType, cel.ObjectType(answerTypeName))),
			cel.Variable("scores", cel.MapType(cel.StringType, cel.DoubleType)),
		)
	})
	return env, envErr
}

// compileExpression parses and type-checks expr; the result must be a bool.
func compileExpression(expr string) (*cel.Ast, error) {
	e, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, errors.New(iss.Err().Error())
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, fmt.Errorf("must evaluate to a bool, not %s", ast.OutputType())
	}
	return ast, nil
}

// mapKeyRefs returns the constant keys an expression reads from the map variable name,
// as in name.key, name['key'] and has(name.key).
func mapKeyRefs(ast *cel.Ast, name string) []string {
	var keys []string
	isVar := func(e celast.Expr) bool {
		return e.Kind() == celast.IdentKind && e.AsIdent() == name
	}
	visit := celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.SelectKind:
			if s := e.AsSelect(); isVar(s.Operand()) {
				keys = append(keys, s.FieldName())
			}
		case celast.CallKind:
			c := e.AsCall()
			if c.FunctionName() != operators.Index || len(c.Args()) != 2 || !isVar(c.Args()[0]) {
				return
			}
			if k := c.Args()[1]; k.Kind() == celast.LiteralKind {
				if s, ok := k.AsLiteral().Value().(string); ok {
					keys = append(keys, s)
				}
			}
		}
	})
	celast.PreOrderVisit(celast.NavigateAST(ast.NativeRep()), visit)
	return keys
}

// NewRule compiles a rule against the generic environment (without checking the keys it
// reads against a classifier; Compile does that). Tests and tools use it to build rules.
func NewRule(name, expression string, action Action, reason string) (*Rule, error) {
	ast, err := compileExpression(expression)
	if err != nil {
		return nil, fmt.Errorf("rule %s: %w", name, err)
	}
	r := &Rule{Name: name, Expression: expression, Action: action, Reason: reason}
	if err := r.setProgram(ast); err != nil {
		return nil, err
	}
	return r, nil
}
