// Package policyreconciler holds the two reconcilers of the policy kinds, written once
// for the namespaced kind and its cluster form: Guardrails (Guardrail, ClusterGuardrail)
// and Classifiers (Classifier, ClusterClassifier). What differs between the two forms is
// where they look, not how they judge, and it is a small strategy, the kind (a
// GuardrailKind or a ClassifierKind, implemented by the package of each kind and passed
// as a type parameter): which objects it reads and lists, which namespaces its pods may be
// in (one, or those a ClusterGuardrail's namespaceSelector picks, with a per-namespace
// breakdown in its status), where a classifier's credentials Secret is (its own namespace,
// or the operator's for a ClusterClassifier), and what its watches enqueue. Scope follows
// from the object: a cluster kind has no namespace, so its guardrail is looked for among
// every namespace's pods and a guard's Lease names it "/name" (policystatus.ClusterName).
//
// The judging itself (conditions, reasons, messages, Events) is controllers/internal/
// policystatus's. Compiling is the guard's compiler (runtime/policy), done once per
// generation for the whole manager by a shared Compiler: a classifier's reconciler and
// those of the guardrails that use it, and every recount, share one compilation.
//
// Report or Enforce is decided by that compiler alone (policy.Guardrail.Mode): the
// guard enforces the compiled mode, and the Ready message of a guardrail
// (policystatus.InEffect) says the compiled mode, never the spec's field.
package policyreconciler
