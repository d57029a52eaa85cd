package guards

import (
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AnnotationGuardVerification exists only in the manager's cache, never in the apiserver:
// the cache's transform (controllers.Options.Cache) drops the pod's spec and every
// annotation the manager does not read — this one too, whoever wrote it — and sets it to
// guardVerified, or to why the spec does not carry the guard as the injector renders it
// (injection.VerifyGuard). The control-plane server and the Guardrail reconciler read it
// from cached pods; a pod read from the apiserver is verified from its spec.
const AnnotationGuardVerification = "guardrail.dev/guard-verification"

// guardVerified is AnnotationGuardVerification of a pod whose spec carries the guard.
const guardVerified = "verified"

// maxVerificationChars bounds the reason kept in the cache.
const maxVerificationChars = 256

// SetGuardVerification records on a cached pod the result of injection.VerifyGuard.
func SetGuardVerification(o client.Object, err error) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationGuardVerification] = guardVerified
	if err != nil {
		a[AnnotationGuardVerification] = Printable(err.Error(), maxVerificationChars)
	}
	o.SetAnnotations(a)
}

// ErrNotVerified is GuardVerification's answer for a cached pod without
// AnnotationGuardVerification (a cache without the transform): the caller verifies the
// pod from the apiserver.
var ErrNotVerified = errors.New("the pod's spec was not verified")

// GuardVerification returns what the cache's transform found of a cached pod's guard: nil
// when its spec carries the guard, else why not.
func GuardVerification(p *corev1.Pod) error {
	v, ok := p.Annotations[AnnotationGuardVerification]
	switch {
	case !ok:
		return ErrNotVerified
	case v == guardVerified:
		return nil
	}
	return errors.New(v)
}

// AnnotationGuardProviders exists only in the manager's cache, like
// AnnotationGuardVerification: the transform sets it, on a pod whose guard is verified,
// to the ModelProviders its guard was injected for (the guard's --provider flags, sorted,
// comma-separated) and drops it otherwise, whoever wrote it. The control plane sends a
// guard the credentials of these providers only; the ModelProvider reconciler counts the
// pods that use each.
const AnnotationGuardProviders = "guardrail.dev/guard-providers"

// SetGuardProviders records on a cached pod the providers its verified guard uses.
func SetGuardProviders(o client.Object, names []string) {
	a := o.GetAnnotations()
	if len(names) == 0 {
		delete(a, AnnotationGuardProviders)
		o.SetAnnotations(a)
		return
	}
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationGuardProviders] = strings.Join(names, ",")
	o.SetAnnotations(a)
}

// AnnotationGuardTracing exists only in the manager's cache, like
// AnnotationGuardVerification: the transform sets it, on a pod whose guard is verified, to
// the OTLP endpoint its guard was injected to export to (OTEL_EXPORTER_OTLP_ENDPOINT, one
// of the tracing settings VerifyGuard accepts) and drops it otherwise, whoever wrote it.
// The control plane sends the collector's credentials (headers, client certificate) only
// to a guard injected with the endpoint they are for: a guard injected while tracing was
// off never holds them.
const AnnotationGuardTracing = "guardrail.dev/guard-tracing"

// SetGuardTracing records on a cached pod the OTLP endpoint of its verified guard; empty
// is none.
func SetGuardTracing(o client.Object, endpoint string) {
	a := o.GetAnnotations()
	if endpoint == "" {
		delete(a, AnnotationGuardTracing)
		o.SetAnnotations(a)
		return
	}
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationGuardTracing] = endpoint
	o.SetAnnotations(a)
}

// GuardTracing returns the OTLP endpoint a cached pod's verified guard exports to (empty
// for a pod whose guard is not verified or does not trace).
func GuardTracing(p client.Object) string {
	a := p.GetAnnotations()
	if a[AnnotationGuardVerification] != guardVerified {
		return ""
	}
	return a[AnnotationGuardTracing]
}

// AnnotationGuardKind exists only in the manager's cache, like AnnotationGuardVerification:
// the transform sets it to GuardKindExtProc on a pod whose verified guard container is the
// Envoy external processor of an ExtProc SharedGuard (injection.IsExtProc), and drops it
// otherwise, whoever wrote it. A SharedGuard's Service lists only pods of its own kind.
const AnnotationGuardKind = "guardrail.dev/guard-kind"

// GuardKindExtProc is AnnotationGuardKind of a verified Envoy external processor.
const GuardKindExtProc = "extproc"

// SetGuardExtProc records on a cached pod whether its verified guard is the Envoy external
// processor.
func SetGuardExtProc(o client.Object, extProc bool) {
	a := o.GetAnnotations()
	if !extProc {
		delete(a, AnnotationGuardKind)
		o.SetAnnotations(a)
		return
	}
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationGuardKind] = GuardKindExtProc
	o.SetAnnotations(a)
}

// GuardIsExtProc reports whether a cached pod's verified guard is the Envoy external
// processor (false for a pod whose guard is not verified, or is the guard's proxy).
func GuardIsExtProc(p client.Object) bool {
	a := p.GetAnnotations()
	return a[AnnotationGuardKind] == GuardKindExtProc && a[AnnotationGuardVerification] == guardVerified
}

// GuardProviders returns the providers a cached pod's verified guard uses (nil for a pod
// whose guard is not verified or uses none).
func GuardProviders(p client.Object) []string {
	v := p.GetAnnotations()[AnnotationGuardProviders]
	if v == "" || p.GetAnnotations()[AnnotationGuardVerification] != guardVerified {
		return nil
	}
	return strings.Split(v, ",")
}
