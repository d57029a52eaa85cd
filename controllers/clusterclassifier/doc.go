// Package clusterclassifier is the ClusterClassifier kind of the shared classifier
// reconciler (controllers/internal/policyreconciler): a ClusterClassifier is compiled as
// the guard will (stalling with the offending field named) and counts the
// ClusterGuardrails that reference it and the guards that enforce one, with the kstatus
// conditions of a Classifier (controllers/internal/policystatus). What differs is where
// its credentials are: a Secret of the operator's namespace only, never a tenant's —
// tenants cannot read them, and the guards of every namespace receive them over their
// subscription.
package clusterclassifier
