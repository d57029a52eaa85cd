// Package guardv1 is the contract between the guard sidecar and the operator: what one
// writes and the other reads. Pod labels and annotations, the guard's container name,
// flags and file paths that the injector renders and the guard defines, the Lease that
// records each guard's state in the operator's namespace, the decisions the guard reports
// (wire types, the typed outcome) and its usage of ModelProviders.
//
// It imports nothing but the standard library, so that the guard, the kubectl plugin, the
// injector, the control plane and the intake all import it rather than each other. The
// policy snapshot's wire type carries the compiled policy and lives with the guard's
// client (runtime/controlplane).
//
// Versioning: names and JSON fields here are read by guards and operators of different
// versions during an upgrade; a change must stay readable by the previous release (add
// fields, never re-purpose one).
package guardv1
