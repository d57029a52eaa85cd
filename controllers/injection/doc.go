// Package injection owns the guard sidecar's injection into pods (DESIGN.md §6): the Pod
// mutating admission handler that renders the guard into opted-in pods, the settings it
// reads from pod annotations with manager-wide defaults, and the controller that records
// the outcome of an injection as Events on the pod.
//
// The handler is a pure function of (pod, namespace labels, settings) to a JSON patch: it
// writes nothing to the cluster, so the webhook declares sideEffects None and dry-run
// requests are safe. What the handler wants users to see (Normal Injected, Warning events
// for values it refused) it leaves on the pod as annotations, and the events controller
// turns them into Events once the pod exists: at admission time a pod created from a
// generateName has neither a name nor a UID for an Event to refer to.
package injection
