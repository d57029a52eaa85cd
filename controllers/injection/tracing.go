package injection

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The guard's OpenTelemetry tracing (runtime/tracing, docs/tracing.md): the guard reads
// the standard OTEL_* variables, and the injector sets them on the guard from the
// manager's --guard-otel-* flags. Unlike the audit log, tracing is the platform's alone:
// no pod annotation sets it, because the endpoint decides where the spans of a pod go,
// and those hold the matched categories and scores of ClusterGuardrails.
//
// VerifyGuard reads a guard's OTEL_* variables back (settingsOf) and accepts them only when
// they are the rendering of a setting the manager accepts (Guard.Tracing): its current one,
// or one listed by --guard-otel-previous (a platform changing its setting keeps the earlier
// one there until the pods injected with it are re-created), or none at all (a pod injected
// while tracing was off). A tenant who edits a pod can therefore turn tracing off for it,
// as the audit-log annotation can, but cannot send its spans elsewhere or label them.
// No secret is rendered: the collector's headers (a token) and the guards' client
// certificate are not in the pod. The manager reads them from Secrets of its namespace
// (--guard-otel-headers-secret, TracingHeaders; --guard-otel-client-cert-secret,
// TracingClientCert) and the control plane delivers them to verified guards
// (controllers/controlplane tracing.go and tracing_cert.go, docs/tracing.md).

// Tracing is one tracing setting of injected guards. Its zero value is off.
type Tracing struct {
	// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT, the collector's base URL; empty is off.
	Endpoint string `json:"endpoint"`
	// Protocol is OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (the default) or grpc.
	Protocol string `json:"protocol,omitempty"`
	// Sampler and SamplerArg are OTEL_TRACES_SAMPLER (parentbased_traceidratio by default)
	// and OTEL_TRACES_SAMPLER_ARG (the ratio, none by default: the guard's 1.0).
	Sampler    string `json:"sampler,omitempty"`
	SamplerArg string `json:"samplerArg,omitempty"`
	// ResourceAttributes is OTEL_RESOURCE_ATTRIBUTES, key=value,... (none by default).
	ResourceAttributes string `json:"resourceAttributes,omitempty"`
}

// TracingHeaders is --guard-otel-headers-secret: the key of a Secret of the operator's
// namespace holding the OTLP headers of the guards' exports, in the format of
// OTEL_EXPORTER_OTLP_HEADERS, and the endpoint they are for (the current
// --guard-otel-endpoint). The zero value is none.
type TracingHeaders struct {
	Endpoint    string
	Secret, Key string
}

// On reports whether h names a Secret.
func (h TracingHeaders) On() bool { return h.Secret != "" }

// parseTracingHeadersSecret reads --guard-otel-headers-secret, NAME/KEY.
func parseTracingHeadersSecret(raw string) (name, key string, err error) {
	name, key, ok := strings.Cut(raw, "/")
	if !ok || len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsConfigMapKey(key)) > 0 {
		return "", "", errors.New("must be NAME/KEY: a Secret's name in the operator's namespace and a key of it")
	}
	return name, key, nil
}

// TracingClientCert is --guard-otel-client-cert-secret: a kubernetes.io/tls Secret of the
// operator's namespace (tls.crt, tls.key, and optionally ca.crt) holding the client
// certificate the guards present to the collector (mTLS), and the endpoint it is for (the
// current --guard-otel-endpoint, an https:// URL). The zero value is none.
type TracingClientCert struct {
	Endpoint string
	Secret   string
}

// On reports whether c names a Secret.
func (c TracingClientCert) On() bool { return c.Secret != "" }

// parseTracingClientCertSecret reads --guard-otel-client-cert-secret, NAME.
func parseTracingClientCertSecret(raw string) (string, error) {
	if len(validation.IsDNS1123Subdomain(raw)) > 0 {
		return "", errors.New("must be NAME: a kubernetes.io/tls Secret's name in the operator's namespace")
	}
	return raw, nil
}

// The variables the injector sets on the guard when tracing is on, in this order.
const (
	envOTelEndpoint           = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTelProtocol           = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envOTelSampler            = "OTEL_TRACES_SAMPLER"
	envOTelSamplerArg         = "OTEL_TRACES_SAMPLER_ARG"
	envOTelServiceName        = "OTEL_SERVICE_NAME"
	envOTelResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
)

// The values runtime/tracing accepts (contract_test.go checks them against its constants).
const (
	otelProtocolHTTP = "http/protobuf"
	otelProtocolGRPC = "grpc"
	// otelServiceName is the guard's service.name (tracing.DefaultServiceName).
	otelServiceName = "guardrail-guard"
	// otelDefaultSampler is the guard's default sampler.
	otelDefaultSampler = "parentbased_traceidratio"
)

// otelSamplers are the samplers the guard has; the ratio ones take OTEL_TRACES_SAMPLER_ARG.
var otelSamplers = map[string]bool{
	"always_on": false, "always_off": false, "traceidratio": true,
	"parentbased_always_on": false, "parentbased_always_off": false, "parentbased_traceidratio": true,
}

// otelReservedAttributes are the resource attributes the guard sets itself (service.name
// from OTEL_SERVICE_NAME, the pod's from the downward API): a setting may not override them.
var otelReservedAttributes = []string{"service.name", "service.version", "k8s.pod.name", "k8s.namespace.name", "k8s.pod.uid"}

// On reports whether t turns tracing on.
func (t Tracing) On() bool { return t.Endpoint != "" }

// normalized is t with the defaults of its empty protocol and sampler filled in, as
// render writes it; off stays the zero value.
func (t Tracing) normalized() Tracing {
	if !t.On() {
		return Tracing{}
	}
	if t.Protocol == "" {
		t.Protocol = otelProtocolHTTP
	}
	if t.Sampler == "" {
		t.Sampler = otelDefaultSampler
	}
	return t
}

// check says why t is not a setting the injector renders, or nil. Values are not echoed:
// an endpoint may be an internal address a log need not hold.
func (t Tracing) check() error {
	if !t.On() {
		if t != (Tracing{}) {
			return errors.New("has settings but no endpoint")
		}
		return nil
	}
	u, err := url.Parse(t.Endpoint)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return errors.New("endpoint: not an http:// or https:// URL with a host")
	case u.User != nil:
		return errors.New("endpoint: must not carry credentials")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("endpoint: must not have a query or fragment")
	}
	t = t.normalized()
	if t.Protocol != otelProtocolHTTP && t.Protocol != otelProtocolGRPC {
		return errors.New("protocol: must be " + otelProtocolHTTP + " or " + otelProtocolGRPC)
	}
	ratio, ok := otelSamplers[t.Sampler]
	if !ok {
		return errors.New("sampler: not one the guard has (always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)")
	}
	if t.SamplerArg != "" {
		r, err := strconv.ParseFloat(t.SamplerArg, 64)
		switch {
		case !ratio:
			return errors.New("sampler argument: only the traceidratio samplers take one")
		case err != nil || r < 0 || r > 1:
			return errors.New("sampler argument: must be a ratio between 0 and 1")
		}
	}
	return checkResourceAttributes(t.ResourceAttributes)
}

// checkResourceAttributes checks a key=value,... list as the OpenTelemetry SDK reads it
// (values URL-encoded), without the attributes the guard sets itself.
func checkResourceAttributes(s string) error {
	if s == "" {
		return nil
	}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return errors.New("resource attributes: not a list of key=value")
		}
		if _, err := url.PathUnescape(strings.TrimSpace(v)); err != nil {
			return errors.New("resource attributes: a value is not URL-encoded")
		}
		if slices.Contains(otelReservedAttributes, k) {
			return errors.New("resource attributes: " + k + " is the guard's own")
		}
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errors.New("resource attributes: holds a control character")
	}
	return nil
}

// tracingEnv is the guard's environment of t: none when off.
func tracingEnv(t Tracing) []corev1.EnvVar {
	if !t.On() {
		return nil
	}
	t = t.normalized()
	env := []corev1.EnvVar{
		{Name: envOTelEndpoint, Value: t.Endpoint},
		{Name: envOTelProtocol, Value: t.Protocol},
		{Name: envOTelSampler, Value: t.Sampler},
	}
	if t.SamplerArg != "" {
		env = append(env, corev1.EnvVar{Name: envOTelSamplerArg, Value: t.SamplerArg})
	}
	env = append(env, corev1.EnvVar{Name: envOTelServiceName, Value: otelServiceName})
	if t.ResourceAttributes != "" {
		env = append(env, corev1.EnvVar{Name: envOTelResourceAttributes, Value: t.ResourceAttributes})
	}
	return env
}

// GuardTracingEndpoint returns the OTLP endpoint a pod's guard was injected to export to
// (its OTEL_EXPORTER_OTLP_ENDPOINT), empty when it does not trace. The caller verifies the
// pod first (VerifyGuard): only then is the setting one the manager rendered.
func GuardTracingEndpoint(pod *corev1.Pod) string {
	guard, _ := findGuard(pod)
	if guard == nil {
		return ""
	}
	return tracingOf(guard.Env).Endpoint
}

// tracingOf reads the setting a guard's environment was rendered with (the inverse of
// tracingEnv on what it renders). OTEL_SERVICE_NAME is not a setting: envDiff compares it
// with the rendered one.
func tracingOf(env []corev1.EnvVar) Tracing {
	var t Tracing
	for _, e := range env {
		switch e.Name {
		case envOTelEndpoint:
			t.Endpoint = e.Value
		case envOTelProtocol:
			t.Protocol = e.Value
		case envOTelSampler:
			t.Sampler = e.Value
		case envOTelSamplerArg:
			t.SamplerArg = e.Value
		case envOTelResourceAttributes:
			t.ResourceAttributes = e.Value
		}
	}
	return t
}

// acceptsTracing reports whether a guard carrying t verifies against g: off, or exactly
// one of the settings the manager accepts. Read-back values that render differently (an
// empty protocol where the rendering has one) are not accepted: t is compared as read.
func (g Guard) acceptsTracing(t Tracing) bool {
	if t == (Tracing{}) {
		return true
	}
	return slices.ContainsFunc(g.Tracing, func(a Tracing) bool { return a.On() && a.normalized() == t })
}

// acceptedTracing is the current setting (when on) followed by the earlier ones.
func acceptedTracing(current Tracing, previous []Tracing) []Tracing {
	var out []Tracing
	if current.On() {
		out = append(out, current.normalized())
	}
	for _, p := range previous {
		out = append(out, p.normalized())
	}
	return out
}

// parsePreviousTracing reads one --guard-otel-previous: a setting as JSON,
// {"endpoint": ..., "protocol": ..., "sampler": ..., "samplerArg": ..., "resourceAttributes": ...},
// with the same defaults as the current one's flags.
func parsePreviousTracing(raw string) (Tracing, error) {
	var t Tracing
	d := json.NewDecoder(strings.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&t); err != nil {
		return Tracing{}, errors.New("not a JSON object of endpoint, protocol, sampler, samplerArg and resourceAttributes")
	}
	if !t.On() {
		return Tracing{}, errors.New("has no endpoint")
	}
	if err := t.check(); err != nil {
		return Tracing{}, err
	}
	return t.normalized(), nil
}
