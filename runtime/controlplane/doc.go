// Package controlplane is the guard's side of the operator's control plane: the policy
// subscription's wire types (the snapshot carries the compiled policy, so they live here
// rather than in the dependency-free contract, api/guard/v1), the client that subscribes,
// and the aggregator and reporter of the decisions the guard sends back (whose wire types
// are the contract's). It imports neither client-go nor controller-runtime: it is linked
// into every sidecar.
package controlplane
