// Package guardrail owns the Guardrail reconciler: it resolves a Guardrail's
// classifierRef (re-reconciling dependents when a Classifier changes, and stalling with a
// Stalled Classifier), compiles the Guardrail against that Classifier with the same
// function the guard uses, and keeps the kstatus conditions Ready (naming the generation
// and mode in effect), Reconciling, Stalled and ClassifierResolved, with reasons and
// messages that say what to fix.
package guardrail
