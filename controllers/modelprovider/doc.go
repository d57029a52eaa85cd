// Package modelprovider owns the ModelProvider reconciler (keyless apps).
// It judges a ModelProvider's spec as a guard would use it (CheckSpec: what the schema
// cannot say, such as a URL on the guard's own pod or a header given twice, stalls it with
// the field named), resolves its credential in a Secret of the operator's namespace only
// — reading the Secret from the apiserver, since the manager caches only Secrets'
// metadata, and keeping nothing of its value — and counts the running pods whose verified
// guard uses it (guards.GuardProviders, which the cache's transform sets from the guard's
// --provider flags) in the namespaces its namespaceSelector selects, into status.pods and
// status.namespaces. The conditions are those of the other kinds: Ready computed from
// CredentialsResolved, Reconciling and Stalled as kstatus reads them
// (controllers/internal/status, controllers/internal/policystatus).
//
// status.usage is not written here: the decisions intake (controllers/controlplane/intake)
// adds the guards' usage to it, under the same optimistic lock.
package modelprovider
