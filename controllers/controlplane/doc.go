// Package controlplane is the operator's side of the policy subscription (DESIGN.md §6
// "Policy distribution", "Authentication"): an HTTPS long-poll server, on every manager
// replica, that authenticates each guard by its pod-bound service-account token
// (TokenReview, cached), compiles the snapshot of the guard's pod — the Guardrails of its
// namespace whose selector matches its labels, their Classifiers and credentials — once
// per distinct (namespace, label set), pushes it within the debounce of a change, and
// records each guard's acknowledgement on its pod, where the Guardrail reconciler counts
// them into status.enforcement.
//
// It also takes the guards' decisions (DESIGN.md §6 "Decisions", POST /v1/decisions):
// cumulative counts per guard incarnation, of which each replica claims the part not yet
// counted by recording the new cumulative on the guard's pod under a resourceVersion
// precondition (claim.go), buffers it per Guardrail and writes status.decisions at most
// once per Guardrail per interval, with aggregated Events and metrics (intake.go).
package controlplane
