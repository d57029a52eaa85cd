// Package clusterguardrail owns the ClusterGuardrail reconciler (DESIGN.md §9.1): it
// resolves a ClusterGuardrail's classifierRef among ClusterClassifiers (stalling with a
// Stalled one), compiles it against that ClusterClassifier with the function the guard
// uses, and counts the pods it selects across the namespaces its namespaceSelector picks
// into status.enforcement, the Enforced condition and the per-namespace breakdown
// (status.namespaces, at most 20, and status.otherNamespaces), with the same kstatus
// conditions, reasons and messages as a Guardrail (controllers/internal/policystatus).
// Decision counts reach its status from the decisions intake
// (controllers/controlplane/intake), which the guards report under "/name".
package clusterguardrail
