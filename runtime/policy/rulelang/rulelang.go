// Package rulelang evaluates guardrail rules: CEL expressions over answers (a map from
// question id to Answer) and scores (a map from category id to double), with the results
// cel-go gives for them (github.com/google/cel-go v0.29.2 with the standard library,
// cel.EvalOptions(cel.OptOptimize) and cel.CostLimit(100000)), using only the standard
// library, so that the guard need not link cel-go and the protobuf runtime.
//
// It does not type-check: rules are type-checked by cel-go when they are applied, and Parse
// only resolves names, checks answers' field names and refuses what it does not implement
// (with an error starting with UnsupportedPrefix). Supported: int (decimal, hex), uint,
// double, string (every quoting and escape form), bool and null literals; lists; maps with
// constant string, int, uint or bool keys; answers, scores and comprehension variables;
// field selection and indexing; ! and unary -; * / % + -; == != < <= > >= and in; && || ?:;
// size, contains, startsWith, endsWith, matches; int, uint, double, string and bool
// conversions; the macros has, all, exists, exists_one, map (2 and 3 arguments) and filter.
// Refused: type and dyn, type names, message construction, bytes, timestamps, durations,
// identifiers with a leading dot, and anything else cel-go's standard library has beyond
// the above.
//
// One difference is deliberate: comprehensions over a map visit its keys in a fixed order
// (sorted for answers and scores, as written for a map literal), where cel-go's order is
// Go's map order; only map() and filter() over a map can tell.
package rulelang

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"
)

// Answer is a judge's answer as rules see it: answers.<question>.type, .probability,
// .choice and .score. has() of a field is true when the field is not its zero value.
type Answer struct {
	Type        string
	Probability float64
	Choice      string
	Score       float64
}

// Program is a parsed rule, ready to evaluate; it is safe for concurrent use.
type Program struct {
	root  node
	slots int
	ast   *expr
}

var ctxPool = sync.Pool{New: func() any { return new(ctx) }}

// maxLen bounds an expression's length, as cel-go's default expression size limit does
// (100,000 code points).
const maxLen = 100000

// Parse parses and plans a rule. Errors are one line; an expression that is valid CEL but
// outside what this package implements is refused with an error starting with
// UnsupportedPrefix.
func Parse(expr string) (*Program, error) {
	if !utf8.ValidString(expr) {
		return nil, unsupported("expressions that are not valid UTF-8")
	}
	if utf8.RuneCountInString(expr) > maxLen {
		return nil, fmt.Errorf("expression is longer than %d characters", maxLen)
	}
	e, err := parseExpr(expr)
	if err != nil {
		return nil, err
	}
	p := &planner{}
	pl, err := p.plan(e)
	if err != nil {
		return nil, err
	}
	return &Program{root: pl.n, slots: p.slots, ast: e}, nil
}

// Eval evaluates the rule. A result that is not a bool is an error, and so is any runtime
// error (a missing key, a division by zero, an overflow, a failed conversion, exceeding the
// cost limit); error messages name at most the expression's own keys, never the values.
func (p *Program) Eval(answers map[string]Answer, scores map[string]float64) (bool, error) {
	c := ctxPool.Get().(*ctx)
	defer func() {
		clear(c.vars)
		*c = ctx{vars: c.vars[:0]}
		ctxPool.Put(c)
	}()
	c.answers, c.scores = answers, scores
	if cap(c.vars) < p.slots {
		c.vars = make([]value, p.slots)
	}
	c.vars = c.vars[:p.slots]
	v := p.root.eval(c)
	switch {
	case c.exceeded:
		return false, errCostExceeded
	case v.k == kErr:
		return false, v.err()
	case v.k != kBool:
		return false, fmt.Errorf("result is %s, not bool", kindNames[v.k])
	}
	return v.b(), nil
}

// KeyRefs returns the constant keys the expression reads from the map variable ("answers"
// or "scores"): v.key, v['key'] and has(v.key), in the order they appear (as
// runtime/policy's mapKeyRefs does over cel-go's AST).
func (p *Program) KeyRefs(variable string) []string {
	var keys []string
	isVar := func(e *expr) bool { return e != nil && e.kind == xIdent && e.name == variable }
	var visit func(e *expr)
	visit = func(e *expr) {
		if e == nil {
			return
		}
		switch e.kind {
		case xSelect, xHas:
			if isVar(e.target) {
				keys = append(keys, e.name)
			}
		case xCall:
			if e.name == "_[_]" && isVar(e.args[0]) && e.args[1].kind == xLit && e.args[1].lit.k == kString {
				keys = append(keys, e.args[1].lit.s)
			}
		}
		visit(e.target)
		for i, a := range e.args {
			if e.kind == xMap {
				visit(e.keys[i])
			}
			visit(a)
		}
	}
	visit(p.ast)
	return keys
}

// IsUnsupported reports whether err is Parse's refusal of valid CEL it does not implement.
func IsUnsupported(err error) bool {
	var pe *parseError
	return errors.As(err, &pe) && len(pe.msg) >= len(UnsupportedPrefix) && pe.msg[:len(UnsupportedPrefix)] == UnsupportedPrefix
}
