// Package intake takes the guards' decisions (POST
// /v1/decisions on the control-plane server's listener): cumulative counts per guard
// incarnation, of which each manager replica claims the part not yet counted by recording
// the new cumulative on the guard's Lease under a resourceVersion precondition (claim.go),
// refusing counts for objects of another namespace (ClusterGuardrails and ClusterClassifiers excepted) and counts no guard could have made;
// it buffers what it claimed per Guardrail and Classifier and writes status.decisions and
// the classifier call figures at most once per object per interval, with aggregated
// Events and metrics (intake.go, calls.go). Counts of a ClusterGuardrail arrive under
// "/name" from guards of any namespace and are written with a per-namespace breakdown
// (cluster.go). Batches also carry the guards' usage of ModelProviders, claimed the same
// way, kept only for the providers the pod's verified guard uses in a namespace they
// select (providers.go), and written into each ModelProvider's status.usage with a
// per-namespace breakdown and into the provider metrics (usage.go).
//
// Every decision is counted exactly once whatever happens to a replica: what a replica
// claimed and has not yet written is also recorded on the guard's Lease as owed by it
// (owed.go), each status write leaves the writer's mark on the object so that a retry of
// unknown outcome is found (flush.go), a claim of unknown outcome is settled by reading
// the Lease again (doubt.go), and the owed counts of a replica whose heartbeat expired
// are taken over by another (sweep.go).
//
// The server authenticates a batch as it authenticates a subscription and hands the
// intake the guard's pod (Authorize); the intake never reads a token.
package intake
