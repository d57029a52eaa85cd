// Package guards is what the operator knows of each injected guard, and how its parts
// read it: whether a pod's spec carries the guard as the injector renders it, as the
// manager's pod cache records it (verification.go), and the guard's Lease in the
// operator's namespace — its name, labels and annotations, the acknowledgement and
// heartbeat it carries (ReadAck, ListAcks) and the collector that deletes the Leases of
// pods that are gone (LeaseCollector).
//
// The control-plane server (package controlplane) is the only writer of the Leases; the
// Guardrail and Classifier reconcilers read them through this package and link nothing
// of the server.
package guards
