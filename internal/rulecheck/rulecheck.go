// Package rulecheck has every guardrail rule a binary compiles type-checked by cel-go
// (runtime/policy/celcheck) before the guard's own evaluator parses it. Importing it is
// enough: the manager's compile paths (internal/policykube, the reconcilers' compiler,
// the control plane's snapshot check) and the kubectl plugin import it, so a rule with a
// wrong field, a wrong type or a result that is not a bool is refused when it is applied,
// with cel-go's message. The guard never imports it (runtime/linkcheck_test.go): it
// compiles rules with runtime/policy/rulelang alone, which accepts no rule cel-go refuses
// to run and evaluates the others as cel-go does.
package rulecheck

import (
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/celcheck"
)

func init() { policy.SetRuleChecker(celcheck.Check) }
