package policy

import (
	"os"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy/celcheck"
)

// TestMain type-checks rules with cel-go, as the manager and the kubectl plugin do
// (internal/rulecheck); TestGuardCompilesRulesWithoutCEL compiles without it, as the
// guard does.
func TestMain(m *testing.M) {
	SetRuleChecker(celcheck.Check)
	os.Exit(m.Run())
}
