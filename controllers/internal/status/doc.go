// Package status owns how the reconcilers of this project report: condition helpers,
// the one place Ready is computed from sub-conditions, kstatus-compatible Reconciling and
// Stalled handling, the single deferred status patch, and Events on condition transitions.
package status
