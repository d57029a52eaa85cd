package guardv1

// Outcome is what an evaluation decided, as the guard's records, its decisions batches and
// the Guardrails' status counters spell it.
type Outcome string

// Outcomes.
const (
	OutcomeAllowed  Outcome = "allowed"
	OutcomeWarned   Outcome = "warned"
	OutcomeStripped Outcome = "stripped"
	OutcomeRedacted Outcome = "redacted"
	OutcomeBlocked  Outcome = "blocked"
	// OutcomeFailed is an evaluation failure under failurePolicy Closed.
	OutcomeFailed Outcome = "failed"
	// OutcomeNotInspected is content passed without inspection: an evaluation failure under
	// failurePolicy Open, or a part unsupported: Allow let through.
	OutcomeNotInspected Outcome = "notInspected"
	// What Report mode would have done.
	OutcomeWouldWarn   Outcome = "wouldWarn"
	OutcomeWouldStrip  Outcome = "wouldStrip"
	OutcomeWouldRedact Outcome = "wouldRedact"
	OutcomeWouldBlock  Outcome = "wouldBlock"
	// OutcomePseudonymized: values were replaced by placeholders that the answer gets
	// back restored; the findings count them per category.
	OutcomePseudonymized     Outcome = "pseudonymized"
	OutcomeWouldPseudonymize Outcome = "wouldPseudonymize"
)

// Outcomes lists every Outcome, in the order status lists them.
var Outcomes = []Outcome{OutcomeAllowed, OutcomeWarned, OutcomeStripped, OutcomeRedacted, OutcomeBlocked, OutcomeFailed,
	OutcomeNotInspected, OutcomePseudonymized, OutcomeWouldWarn, OutcomeWouldStrip, OutcomeWouldRedact, OutcomeWouldBlock,
	OutcomeWouldPseudonymize}

// Known reports whether o is one of Outcomes.
func (o Outcome) Known() bool {
	for _, k := range Outcomes {
		if o == k {
			return true
		}
	}
	return false
}
