// Package controlplane is the operator's side of the policy subscription: an HTTPS long-poll server, on every manager
// replica, that authenticates each guard by its pod-bound service-account token
// (TokenReview, cached), accepts only pods whose spec carries the guard as the injector
// renders it (injection.VerifyGuard; the manager's cache records the verdict of each
// injected pod, package guards), compiles the snapshot of the guard's pod — the
// Guardrails of its namespace whose selector matches its labels, the ClusterGuardrails
// whose namespaceSelector matches its namespace's labels (cluster.go), their Classifiers
// and ClusterClassifiers and credentials — once per namespace and set of policies its
// pods' labels select (hub.go), pushes it within the debounce of a change, and records each guard's acknowledgement and heartbeat on the guard's
// Lease in the operator's namespace (lease.go; package guards holds the Lease's contract
// and reads it for the reconcilers), where the Guardrail reconciler counts them into
// status.enforcement. A guard whose Lease was not renewed within its duration no longer
// counts. Nothing is written on pods: the manager cannot write them, and what a tenant
// writes on its pods proves nothing.
//
// The same listener serves the guards' decisions (POST /v1/decisions), authenticated
// alike and taken by package intake.
package controlplane
