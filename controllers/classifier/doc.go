// Package classifier owns the Classifier reconciler: it validates and compiles a
// Classifier, resolves its credentials Secret (and reacts when that Secret changes),
// reports its resolved categories and how many Guardrails use it, and keeps the
// kstatus conditions Ready, Reconciling, Stalled and CredentialsResolved.
package classifier
