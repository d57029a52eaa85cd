// Package injection owns the guard sidecar's injection into pods: the Pod
// mutating admission handler that renders the guard into opted-in pods, the settings it
// reads from pod annotations with manager-wide defaults, and the controller that records
// the outcome of an injection as Events on the pod.
//
// The handler is a pure function of (pod, namespace labels and annotations, the
// ModelProviders the pod asks for, settings) to a JSON patch: it writes nothing to the
// cluster, so the webhook declares sideEffects None and dry-run
// requests are safe. What the handler wants users to see (Normal Injected, Warning events
// for values it refused) it leaves on the pod as annotations, and the events controller
// turns them into Events once the pod exists: at admission time a pod created from a
// generateName has neither a name nor a UID for an Event to refer to. Normal Injected is
// recorded only for a pod whose spec, read from the apiserver, passes VerifyGuard: the
// guardrail.dev/injected label is anyone's to write.
//
// # Namespaces labelled enabled, pods labelled inject=true
//
// Injection is opt-in and the pod's author may opt out (guardrail.dev/inject=false); a pod
// labelled guardrail.dev/injected is taken as handled. A pod with a container named like
// the guard is admitted only when that container is the guard the injector renders for it
// (the apiserver re-invoking the injector), and refused otherwise: a hand-written guard
// would send its token wherever its flags point. The webhook entries fail open: an
// operator outage admits pods without a guard. A pod the guard cannot be added to safely
// is admitted without it, labelled injected=false and told why.
//
// # What counts as the guard
//
// VerifyGuard is the one test, used by the injector, the manager's cache and the control
// plane: the guard container equals what render makes, value for value (arguments,
// environment, mounts, security context, no command run in it), and the pod around it
// neither re-points its host names (hostAliases, a dnsPolicy or dnsConfig of its own) nor
// reaches into it (host namespaces, a shared process namespace, an ephemeral container
// targeting it). What admission may change without changing whom the guard trusts is
// ignored: defaults, resources, the pull policy, HTTP probes.
//
// # Namespaces labelled required
//
// Every pod created there, other than in the system namespaces and the operator's own, is
// admitted with the injector's guard or refused with a message that names the reason:
//   - the webhook entry has no objectSelector, and fails closed, so the handler sees every
//     pod; no label, annotation or container name of the pod's author skips it:
//     inject=false is ignored with a warning (Warning OptOutIgnored), the injected label is
//     written by the injector, and a container named guardrail-guard is refused unless it
//     is the guard the injector renders for the pod (VerifyGuard, the arguments of the
//     pod's own annotations, the operator's CA), which is the apiserver re-invoking the
//     injector;
//   - after injection the pod passes VerifyGuard, which the control plane requires to serve
//     it a policy;
//   - no app container can reach what is the guard's: pods that mount the guard's volumes,
//     run a container (or the pod's securityContext) as the guard's user (guardUID), share
//     one process namespace, or use the host network are refused;
//   - the guard holds no Kubernetes API token: it mounts an empty volume where the
//     ServiceAccount admission plugin would mount the pod's token.
//
// # Keyless apps
//
// A pod that names ModelProviders (annotation guardrail.dev/provider, or its namespace's
// as the default) gets --provider=NAME on its guard and a placeholder OPENAI_API_KEY or
// ANTHROPIC_API_KEY in its app containers; the credential reaches the guard over its
// subscription, never through the pod. A pod that asks for a provider it cannot use is
// denied in every namespace (providers.go says why); docs/keyless-apps.md is the user's
// guide and threat model.
//
// What required does not cover: an app image whose own USER is the guard's UID (admission
// cannot see it; the UID is chosen to be one no common image uses), pods that existed
// before the namespace was labelled (they keep running until re-created), and an app that
// calls a provider directly instead of through the base URLs it is given (that is for the
// cluster's egress policy to stop).
package injection
