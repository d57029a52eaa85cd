package controlplane

import (
	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// The subscription protocol is a long poll over
// HTTPS (HTTP/2 when both ends offer it), one endpoint:
//
//	POST /v1/subscribe
//	Authorization: Bearer <projected service-account token, audience guardrail.dev>
//	{"running": "<version the guard enforces, or empty>", "refused": {"version": …, "error": …}}
//
// The operator answers 200 with a Snapshot as soon as the pod's policy differs from
// running (at once on a reconnect with an old version, within the debounce of an apply
// otherwise), or 204 after WaitHeader's time with nothing new. Every request is an
// acknowledgement: running is the version applied, refused the one the guard could not
// apply (it is not pushed again until the policy changes). The guard polls again at once
// after each answer, so an ack reaches the operator as soon as the snapshot is applied.
const (
	// SubscribePath is the endpoint.
	SubscribePath = "/v1/subscribe"
	// MaxSnapshotBytes bounds a snapshot on the wire and on disk.
	MaxSnapshotBytes = 8 << 20
	// MaxErrorChars bounds the error of a refusal.
	MaxErrorChars = 512
)

// SubscribeRequest is the body of a poll.
type SubscribeRequest struct {
	// Running is the version the guard enforces; empty when it has none.
	Running string `json:"running,omitempty"`
	// Refused is the latest version the guard could not apply, if any.
	Refused *Refusal `json:"refused,omitempty"`
}

// Refusal is a version the guard refused and why.
type Refusal struct {
	Version string `json:"version"`
	Error   string `json:"error"`
}

// Snapshot is the policy of one pod: the Guardrails of its namespace whose selector
// matches its labels, the ClusterGuardrails whose namespaceSelector matches its
// namespace's labels and whose selector matches its labels (kind ClusterGuardrail, no
// namespace, key "/name"; their spec is the GuardrailSpec without namespaceSelector, which
// the operator has applied), the Classifiers and ClusterClassifiers they reference and
// those classifiers' credentials.
// The guard compiles it with policy.Compile, the code the operator validated it with. The
// objects are policy.Objects: apiVersion, kind, name, namespace, uid, generation and the
// spec (the API's own type, api/v1alpha1/spec), decoded strictly on the spec, so a guard
// refuses (and reports) a snapshot holding a field it does not know rather than ignore it.
type Snapshot struct {
	// Version identifies the content, credentials included (by the resource version of
	// their Secrets, never by their value): equal versions are equal policies.
	Version string `json:"version"`
	// Namespace is the pod's namespace.
	Namespace   string                    `json:"namespace"`
	Classifiers []policy.ClassifierObject `json:"classifiers"`
	Guardrails  []policy.GuardrailObject  `json:"guardrails"`
	// Credentials maps a classifier key (namespace/name) to its credential.
	Credentials map[string]string `json:"credentials,omitempty"`
	// Providers are the ModelProviders the pod's guard was injected for (its --provider
	// flags) that select the pod's namespace and whose credential resolves, sorted by
	// name. A provider the guard names that is missing here is not available to the pod.
	Providers []Provider `json:"providers,omitempty"`
	// Tracing, when set, holds the platform's collector credentials for the guard's OTLP
	// trace exports: the headers (the manager's --guard-otel-headers-secret) and the client
	// certificate (--guard-otel-client-cert-secret). Absent when the platform set neither.
	Tracing *Tracing `json:"tracing,omitempty"`
}

// Tracing is the part of the guards' tracing that is secret, so never in a pod's spec:
// the headers of the OTLP exports and the client certificate of mTLS to the collector.
// The guard keeps Headers and ClientCertificate in memory only, like a provider's
// credential: the persisted snapshot never holds them.
type Tracing struct {
	// Endpoint is the collector the headers are for: the manager's current
	// --guard-otel-endpoint, as the injector renders it in OTEL_EXPORTER_OTLP_ENDPOINT. A
	// guard exporting elsewhere (injected with an earlier setting) does not send them.
	Endpoint string `json:"endpoint"`
	// Headers are the header names (canonical) and values, checked by
	// runtime/tracing/otlpheaders. Empty in a persisted snapshot.
	Headers map[string]string `json:"headers,omitempty"`
	// ClientCertificate, when set, is the client certificate the guard presents to the
	// collector at Endpoint (mTLS), from the platform's kubernetes.io/tls Secret. Absent
	// when the platform set none, and in a persisted snapshot.
	ClientCertificate *ClientCertificate `json:"clientCertificate,omitempty"`
}

// ClientCertificate is the guard's client certificate for the collector, as PEM: the
// tls.crt, tls.key and ca.crt of the platform's Secret, checked by the operator (the key
// is the certificate's). The guard keeps it in memory only.
type ClientCertificate struct {
	// Certificate is the certificate chain, leaf first (tls.crt).
	Certificate string `json:"certificate,omitempty"`
	// Key is the certificate's private key (tls.key).
	Key string `json:"key,omitempty"`
	// CA, when set, is the bundle the collector's serving certificate must chain to
	// (ca.crt), instead of the system's.
	CA string `json:"ca,omitempty"`
	// KeepLast says that the platform set a client certificate but its Secret cannot be
	// used now (missing, or not a certificate and its key): the guard keeps the one it has,
	// if it has one for Endpoint. Certificate, Key and CA are then empty.
	KeepLast bool `json:"keepLast,omitempty"`
}

// Provider is a ModelProvider as a guard uses it: where to send the
// pod's calls of one API family and the credential that replaces the app's placeholder.
// The guard keeps Credential in memory only: the persisted snapshot never holds it.
type Provider struct {
	// Name is the ModelProvider's name.
	Name string `json:"name"`
	// API is ProviderAPIOpenAI or ProviderAPIAnthropic.
	API string `json:"api"`
	// URL is the provider's base URL; a trailing /v1 is accepted.
	URL string `json:"url"`
	// Headers are extra request headers (never credentials).
	Headers map[string]string `json:"headers,omitempty"`
	// Credential is the API key: Authorization: Bearer for OpenAI, x-api-key for
	// Anthropic. Empty in a persisted snapshot.
	Credential string `json:"credential,omitempty"`
	// Exhausted, when set, says that the pod's namespace used up a budget of the provider
	// (its spec.limits, in Enforce mode) until a time: the guard answers the calls it
	// would send to the provider with 429 until then. Absent otherwise.
	Exhausted *guardv1.ProviderExhaustion `json:"exhausted,omitempty"`
}
