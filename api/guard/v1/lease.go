package guardv1

// A guard's state lives in one coordination.k8s.io/v1 Lease per guard pod, in the
// operator's own namespace, written only by the operator's control plane (tenants never
// write there): the acknowledgement, the liveness and the decisions claim.
const (
	// LeasePrefix begins the name of every guard's Lease.
	LeasePrefix = "guard-"
	// LabelLeasePodNamespace is the namespace of a guard Lease's pod.
	LabelLeasePodNamespace = "guardrail.dev/pod-namespace"
	// AnnotationLeasePod is the name of a guard Lease's pod.
	AnnotationLeasePod = "guardrail.dev/pod"
	// AnnotationLeasePodUID is the uid of a guard Lease's pod.
	AnnotationLeasePodUID = "guardrail.dev/pod-uid"
	// AnnotationPolicyVersion is the snapshot version the guard enforces.
	AnnotationPolicyVersion = "guardrail.dev/policy-version"
	// AnnotationEnforced lists the Guardrails that version holds, as name=generation
	// pairs separated by commas.
	AnnotationEnforced = "guardrail.dev/enforced"
	// AnnotationRefused is the version the guard refused and why ("<version>: <error>").
	AnnotationRefused = "guardrail.dev/policy-refused"
	// AnnotationDecisions records, per guard incarnation, the cumulative counts the
	// operator has already counted: the claim that makes a count reach status once,
	// whichever replica receives it and however often.
	AnnotationDecisions = "guardrail.dev/decisions-counted"
	// AnnotationDecisionsOwed holds the counts claimed from the guard that a manager
	// replica has not yet written into status: a Lease carrying it is not collected until
	// another replica has taken them over.
	AnnotationDecisionsOwed = "guardrail.dev/decisions-owed"
)

// LeaseName is the name of the Lease of the guard of the pod with uid: a pod re-created
// under the same name starts afresh.
func LeaseName(uid string) string { return LeasePrefix + uid }
