// Package sharedguard runs SharedGuards: the guard as a Deployment of its own behind a
// Service, for apps that cannot take a sidecar or should reach their model through one
// place.
//
// The guard's pods are rendered by the injector's code (injection.Renderer), value for
// value as a sidecar guard except that the proxy listens on the pod's address and no
// ModelProvider is attached, so the control plane verifies them like any guard and serves
// them the Guardrails that select their labels (spec.podLabels). With spec.tls the proxy
// serves HTTPS (injection.Renderer's SharedGuardPodWithTLS) on the Service's port https
// (443 to the guard's proxy port, appProtocol https). In ExtProc mode
// (spec.mode) the pods run the Envoy external processor instead (injection.Renderer's
// SharedExtProcPodWithTLS), verified as strictly, and the Service's port is grpc (15081)
// for a gateway's ext_proc filter: h2c, or TLS with the certificate of the Secret
// spec.tls.secretName names (appProtocol https; tls.go reports that Secret missing or
// invalid). The Service has no selector: this reconciler writes its
// EndpointSlices itself, from the pods the manager's cache verified as the SharedGuard's
// kind of guard (proxy or processor) and whose labels are exactly the template's. A tenant who labels a pod of
// its own guardrail.dev/shared-guard receives none of the Service's traffic, and a pod whose
// guard was edited never serves: it is not verified, and its guard gets no policy.
//
// The Deployment, Service and EndpointSlices are owned by the SharedGuard (garbage
// collected with it), labelled guardrail.dev/shared-guard so that the manager caches only
// them, and an edit by anyone else is written back. An object of the same name that the
// SharedGuard does not own is left alone and reported (Stalled, NameInUse).
package sharedguard
