package guardv1

import "time"

// Budgets of a ModelProvider (its spec.limits), each counted per namespace in fixed UTC
// windows. The names are the limits' fields in the ModelProvider's spec; the operator
// names the one a namespace reached in ProviderExhaustion.Budget, and the guard says it
// in its 429.
const (
	BudgetRequestsPerMinute = "requestsPerMinute"
	BudgetTokensPerMinute   = "tokensPerMinute"
	BudgetRequestsPerDay    = "requestsPerDay"
	BudgetTokensPerDay      = "tokensPerDay"
)

// CodeBudgetExceeded is the error code of a call the guard refuses because its
// namespace used up a budget of the ModelProvider (HTTP 429, with Retry-After).
const CodeBudgetExceeded = "budget_exceeded"

// ProviderExhaustion marks a ModelProvider in a pod's policy snapshot as used up for the
// pod's namespace (a limit in Enforce mode reached): the guard answers the pod's calls to
// it with 429 until Until, without sending them. A guard ignores a mark whose Until has
// passed; the operator drops it from the next snapshot after the window ended.
type ProviderExhaustion struct {
	// Budget is the limit reached (BudgetRequestsPerMinute, …); a guard that does not
	// know the name refuses the calls all the same.
	Budget string `json:"budget"`
	// Until is when the window ends, UTC.
	Until time.Time `json:"until"`
}

// BudgetDescription says a budget's name in words: "requests per minute".
func BudgetDescription(budget string) string {
	switch budget {
	case BudgetRequestsPerMinute:
		return "requests per minute"
	case BudgetTokensPerMinute:
		return "tokens per minute"
	case BudgetRequestsPerDay:
		return "requests per day"
	case BudgetTokensPerDay:
		return "tokens per day"
	}
	return "budget " + budget
}
