// Package classifier owns the Classifier reconciler: it validates and compiles a
// Classifier, resolves its credentials Secret (and reacts when that Secret changes),
// reports its backend, resolved categories and how many Guardrails use it, holds its
// deletion while Guardrails reference it (the guardrail.dev/in-use-protection finalizer and
// the InUse condition), and keeps the kstatus conditions Ready, Reconciling, Stalled and
// CredentialsResolved.
package classifier
