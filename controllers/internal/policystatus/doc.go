// Package policystatus holds what the reconcilers of the namespaced kinds (Guardrail,
// Classifier) and of their cluster forms (ClusterGuardrail, ClusterClassifier) share:
// counting the pods a guardrail selects into status.enforcement and the Enforced
// condition (enforcement.go), waiting for a referenced classifier and compiling a
// guardrail against it (guardrail.go), compiling a classifier's spec and resolving its
// credentials (classifier.go), and the watch predicates on injected pods and guards'
// Leases (predicates.go). The kinds differ in where they look (one namespace, or every
// namespace a namespaceSelector picks; a Secret of the classifier's namespace, or of the
// operator's), not in how they judge, so the judging lives here once.
package policystatus
