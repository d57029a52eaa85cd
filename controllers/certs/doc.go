// Package certs owns the operator's serving certificates when they are self-managed: a CA
// and a serving certificate kept in one Secret of the operator's namespace, rotated before
// they expire, with the CA injected as caBundle into the injector's webhook configuration
// (github.com/open-policy-agent/cert-controller's rotator, as Gatekeeper uses it), and the
// Secret's contents mirrored into the manager's certificate directory.
//
// One certificate serves both endpoints of the operator: the pod webhook and the control
// plane that guards subscribe to. Its names are those of both Services.
package certs
