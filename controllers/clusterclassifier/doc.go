// Package clusterclassifier owns the ClusterClassifier reconciler (DESIGN.md §9.1): it
// compiles a ClusterClassifier's spec with the function the guard uses (stalling with the
// offending field named), resolves its credentials from a Secret of the operator's
// namespace only — tenants cannot read them, and the guards of every namespace receive
// them over their subscription — and counts the ClusterGuardrails that reference it and
// the guards that enforce one, with the kstatus conditions of a Classifier
// (controllers/internal/policystatus).
package clusterclassifier
