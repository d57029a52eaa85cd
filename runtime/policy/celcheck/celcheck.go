// Package celcheck type-checks guardrail rules with cel-go, the reference implementation
// of CEL: the manager and the kubectl plugin check every rule with it when it is applied
// (internal/rulecheck registers Check with runtime/policy), so that an author learns of a
// wrong field, a wrong type or a result that is not a bool with cel-go's own message.
//
// The guard does not link it: cel-go and the protobuf runtime it brings cost every guard
// about 3 MiB of resident memory. The guard parses and evaluates rules with
// runtime/policy/rulelang, which gives the results cel-go gives (the differential tests
// of runtime/policy hold it to this package's Program) and refuses what it does not
// implement, so a rule is accepted only where both accept it.
package celcheck

import (
	"errors"
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// The environment every rule is checked in: answers is a map from question id to
// policy.Answer, scores a map from category id to double; CEL's standard library and no
// extension library.
var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

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

// CostLimit bounds the work of one evaluation, as rulelang does.
const CostLimit = 100000

// compile parses and type-checks expr; the result must be a bool.
func compile(expr string) (*cel.Ast, *cel.Env, error) {
	e, err := celEnv()
	if err != nil {
		return nil, nil, err
	}
	ast, iss := e.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, nil, errors.New(iss.Err().Error())
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, nil, fmt.Errorf("must evaluate to a bool, not %s", ast.OutputType())
	}
	return ast, e, nil
}

// Check parses and type-checks a rule's expression; the error says why it is refused.
func Check(expr string) error {
	_, _, err := compile(expr)
	return err
}

// Program is a rule compiled by cel-go: the reference the guard's evaluator is tested
// against.
type Program struct{ prg cel.Program }

// Compile checks expr and plans it as the guard used to, with cel-go.
func Compile(expr string) (*Program, error) {
	ast, e, err := compile(expr)
	if err != nil {
		return nil, err
	}
	prg, err := e.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(CostLimit))
	if err != nil {
		return nil, err
	}
	return &Program{prg: prg}, nil
}

// Eval evaluates the program; a result that is not a bool is an error.
func (p *Program) Eval(answers map[string]Answer, scores map[string]float64) (bool, error) {
	out, _, err := p.prg.Eval(map[string]any{"answers": answers, "scores": scores})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("result is %s, not bool", out.Type())
	}
	return b, nil
}
