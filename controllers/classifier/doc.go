// Package classifier owns the Classifier reconciler: it validates and compiles a
// Classifier, resolves its credentials Secret (and reacts when that Secret changes),
// reports its backend, resolved categories and how many Guardrails use it, holds its
// deletion while Guardrails reference it (the guardrail.dev/in-use-protection finalizer and
// the InUse condition), and keeps the kstatus conditions Ready, Reconciling, Stalled and
// CredentialsResolved.
//
// A backend URL on the guard's own host or link (loopback, link-local, unspecified:
// policy.LocalBackendURLs) stalls the Classifier unless the manager runs with
// --classifier-allow-local-urls. Who may name which Secret is decided at admission, not
// here: config/admission's ValidatingAdmissionPolicy lets a Classifier name only a Secret
// its author may get, since the manager reads it with its own grant and the guards send
// it to the URL the Classifier names.
package classifier
