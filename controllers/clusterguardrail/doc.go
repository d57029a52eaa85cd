// Package clusterguardrail is the ClusterGuardrail kind of the shared guardrail reconciler
// (controllers/internal/policyreconciler). A ClusterGuardrail is a platform's baseline: a
// Guardrail's spec without a namespace, whose classifierRef names a ClusterClassifier,
// applied to the pods of every namespace its namespaceSelector picks (every namespace when
// it is unset). It is reconciled as a Guardrail is, with the same kstatus conditions,
// reasons and messages (controllers/internal/policystatus); what differs is here: an
// invalid namespaceSelector stalls it with the field named, its pods are counted across
// the selected namespaces into status.enforcement, the Enforced condition and the
// per-namespace breakdown (status.namespaces, at most 20, and status.otherNamespaces),
// and a namespace's labels changing recounts it. Decision counts reach its status from
// the decisions intake (controllers/controlplane/intake), which the guards report under
// "/name".
package clusterguardrail
