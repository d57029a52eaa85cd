// Package guardrail is the Guardrail kind of the shared guardrail reconciler
// (controllers/internal/policyreconciler): a Guardrail resolves its classifierRef among
// the Classifiers of its namespace (re-reconciling dependents when a Classifier changes,
// and stalling with a Stalled Classifier), compiles against that Classifier with the
// function the guard uses, counts the pods of its namespace it selects into
// status.enforcement and the Enforced condition, and keeps the kstatus conditions Ready
// (naming the generation and mode in effect), Reconciling, Stalled and
// ClassifierResolved, with reasons and messages that say what to fix.
package guardrail
