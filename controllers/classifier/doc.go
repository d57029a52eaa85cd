// Package classifier is the Classifier kind of the shared classifier reconciler
// (controllers/internal/policyreconciler): a Classifier is validated and compiled,
// resolves its credentials Secret in its own namespace (and reacts when that Secret
// changes), reports its backend, resolved categories and how many Guardrails and guards
// use it, holds its deletion while Guardrails reference it (the
// guardrail.dev/in-use-protection finalizer and the InUse condition), and keeps the
// kstatus conditions Ready, Reconciling, Stalled and CredentialsResolved.
//
// A backend URL on the guard's own host or link (loopback, link-local, unspecified:
// policy.LocalBackendURLs) stalls a Classifier or a ClusterClassifier unless the manager
// runs with --classifier-allow-local-urls (AllowLocalURLs). Who may name which Secret is
// decided at admission, not here: config/admission's ValidatingAdmissionPolicy lets a
// Classifier name only a Secret its author may get, since the manager reads it with its
// own grant and the guards send it to the URL the Classifier names.
package classifier
