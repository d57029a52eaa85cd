package controlplane

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlpheaders"
)

// The collector's headers in every snapshot: the platform keeps the
// headers of the guards' OTLP exports (a collector's token) in a Secret of the operator's
// namespace (the manager's --guard-otel-headers-secret, Options.TracingHeaders), in the
// format of OTEL_EXPORTER_OTLP_HEADERS. Nothing of it is in a pod: the control plane reads
// the Secret when it compiles a snapshot and sends the headers, with the endpoint they are
// for, in Snapshot.Tracing to every verified guard injected to export to that endpoint
// (tracedTo; a guard injected while tracing was off, or with an earlier setting, gets none
// and exports without them); the guard keeps them in memory and adds them to its exports
// only when that endpoint is its own. The Secret's identity and resource version are part of
// the snapshot's version, so a rotation reaches running guards like a Classifier's
// credential does (a change to a Secret of the operator's namespace touches every
// snapshot).
//
// A Secret that is missing, lacks the key or does not parse (otlpheaders.Parse: control
// characters, hop-by-hop or protocol header names, a name twice, too long) sends no
// headers: the guards' tracing goes on without them, and their collector may refuse the
// spans; the policy is never withheld for it. The manager logs it once per version of the
// Secret, naming the Secret, its key and the entry's position, never a header, and
// guardrail_controlplane_tracing_headers_valid is 0.

// tracingHeadersState remembers what was last logged of the headers' Secret.
type tracingHeadersState struct {
	mu     sync.Mutex
	logged string
}

var tracingHeadersValid = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "guardrail_controlplane_tracing_headers_valid",
	Help: "1 when the Secret of --guard-otel-headers-secret holds headers the guards can send, 0 when it is missing " +
		"or malformed (the guards then export without them; the manager's log says why). Absent without the flag.",
})

func init() { ctrlmetrics.Registry.MustRegister(tracingHeadersValid) }

// tracing returns the tracing credentials of the snapshots of traced guards (tracedTo), the collector's headers and
// the guards' client certificate (tracing_cert.go), nil when there are none, and records
// their Secrets' versions in secretVersions so that a rotation changes the snapshot's
// version.
func (b *builder) tracing(ctx context.Context, secretVersions map[string]string) (*cp.Tracing, error) {
	h, err := b.tracingHeadersOf(ctx, secretVersions)
	if err != nil {
		return nil, err
	}
	cc, err := b.tracingClientCertificate(ctx, secretVersions)
	if err != nil {
		return nil, err
	}
	switch {
	case cc != nil:
		return &cp.Tracing{Endpoint: b.tracingClientCert.Endpoint, Headers: h, ClientCertificate: cc}, nil
	case len(h) > 0:
		return &cp.Tracing{Endpoint: b.tracingHeaders.Endpoint, Headers: h}, nil
	}
	return nil, nil
}

// tracedTo reports whether a guard injected to export to endpoint gets the collector's
// credentials: the headers' or client certificate's Secret is set, for that endpoint. A
// guard injected while tracing was off, or with an earlier endpoint, would never send them
// (runtime/tracing takes them only for its own endpoint), so it is not given them.
func (b *builder) tracedTo(endpoint string) bool {
	if endpoint == "" {
		return false
	}
	return (b.tracingHeaders.On() && b.tracingHeaders.Endpoint == endpoint) ||
		(b.tracingClientCert.On() && b.tracingClientCert.Endpoint == endpoint)
}

// tracingHeadersOf returns the collector's headers, nil when none, and records the
// Secret's version in secretVersions (key "tracing").
func (b *builder) tracingHeadersOf(ctx context.Context, secretVersions map[string]string) (map[string]string, error) {
	th := b.tracingHeaders
	if !th.On() {
		return nil, nil
	}
	s := &corev1.Secret{}
	err := b.secrets.Get(ctx, types.NamespacedName{Namespace: b.operatorNamespace, Name: th.Secret}, s)
	switch {
	case apierrors.IsNotFound(err):
		b.tracingProblem(th, "missing", "the Secret does not exist")
		return nil, nil
	case err != nil:
		return nil, err // the snapshot waits: sending it without the headers would be a rotation to none
	}
	value, ok := s.Data[th.Key]
	if !ok {
		b.tracingProblem(th, "nokey/"+string(s.UID)+"/"+s.ResourceVersion, "the Secret has no such key")
		return nil, nil
	}
	h, perr := otlpheaders.Parse(string(value))
	if perr != nil {
		// Not an error of the snapshot: the guards trace without headers.
		b.tracingProblem(th, "invalid/"+string(s.UID)+"/"+s.ResourceVersion, "the value is not a list key=value,... the guards can send: "+perr.Error())
		return nil, nil //nolint:nilerr // reported above; the policy is not withheld for the headers
	}
	b.tracingOK(th, string(s.UID)+"/"+s.ResourceVersion, len(h))
	if len(h) == 0 {
		return nil, nil
	}
	secretVersions["tracing"] = string(s.UID) + "/" + s.ResourceVersion
	return h, nil
}

// tracingProblem logs, once per state, why the guards get no headers. why never holds one.
func (b *builder) tracingProblem(th injection.TracingHeaders, state, why string) {
	tracingHeadersValid.Set(0)
	if b.tracingState.change(state) {
		b.log.Info("Guards export their traces without the collector's headers: the Secret of --guard-otel-headers-secret "+
			"cannot be used", "secret", b.operatorNamespace+"/"+th.Secret, "key", th.Key, "reason", why)
	}
}

func (b *builder) tracingOK(th injection.TracingHeaders, version string, n int) {
	tracingHeadersValid.Set(1)
	if b.tracingState.change("ok/" + version) {
		b.log.Info("Guards get the collector's headers from the Secret of --guard-otel-headers-secret",
			"secret", b.operatorNamespace+"/"+th.Secret, "key", th.Key, "headers", n, "endpoint", th.Endpoint)
	}
}

// change records state and reports whether it differs from the last one.
func (s *tracingHeadersState) change(state string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logged == state {
		return false
	}
	s.logged = state
	return true
}
