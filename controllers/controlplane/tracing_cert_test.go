package controlplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlptest"
)

// seenCert records what a real guard client handed to its tracer.
type seenCert struct {
	mu       sync.Mutex
	endpoint string
	cert     *cp.ClientCertificate
}

func (s *seenCert) set(endpoint string, c *cp.ClientCertificate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoint, s.cert = endpoint, c
}

func (s *seenCert) get() (string, *cp.ClientCertificate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoint, s.cert
}

// gauge reads a gauge of the manager's registry with label=value; -1 when it is absent.
func gauge(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// keyBody is a piece of a PEM key's base64 body: what must be nowhere but in the guard's
// memory.
func keyBody(key []byte) string { return string(key[40:80]) }

// A verified guard's snapshot carries the client certificate of the kubernetes.io/tls
// Secret of the operator's namespace, with the CA and the endpoint it is for; a mimic of
// the guard gets no snapshot and so no certificate; a rotation reaches the running guard
// (its client) as a new version; a Secret that cannot be used (a key of another
// certificate, a deleted Secret) sends KeepLast, so the guards keep theirs, and is logged,
// naming the Secret and not its content, with the gauge at 0. The key is in no log, Event,
// Lease, status, pod or persisted snapshot.
func TestTracingClientCertificateReachesVerifiedGuardsAndNothingElse(t *testing.T) {
	ctx := context.Background()
	ns := fixture(t)
	p := tracedPod(t, ns, "traced-cert-1", "web", currentTracing)
	tok := token(t, p, guardv1.Audience)

	pki := otlptest.NewPKI(t)
	crt1, key1 := pki.Client(t, "guards-1")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: tracingClientCert.Secret},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt1, "tls.key": key1, "ca.crt": pki.CAPEM}}
	must(t, k8s.Create(ctx, secret))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	keys := [][]byte{key1}

	// The real guard client, persisting its snapshot.
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	must(t, os.WriteFile(tokFile, []byte(tok), 0o600))
	var seen seenCert
	c := &cp.Client{URL: baseURL, TokenFile: tokFile, CAFile: caFile, SnapshotDir: dir, TracingClientCertificate: seen.set}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(cctx, func(*policy.Snapshot) error { return nil }, func(error) {})
	}()
	t.Cleanup(func() { cancel(); <-done })

	waitUntil(t, "the guard's client certificate", func() bool {
		_, cc := seen.get()
		return cc != nil && cc.Key == string(key1)
	})
	if e, cc := seen.get(); e != tracingClientCert.Endpoint || cc.Certificate != string(crt1) || cc.CA != string(pki.CAPEM) || cc.KeepLast {
		t.Errorf("the guard got a certificate for %q: CA %v, KeepLast %v", e, cc.CA != "", cc.KeepLast)
	}
	if g := gauge(t, "guardrail_controlplane_tracing_client_certificate_valid", "secret", tracingClientCert.Secret); g != 1 {
		t.Errorf("guardrail_controlplane_tracing_client_certificate_valid = %v, want 1", g)
	}
	status, body := poll(t, tok, cp.SubscribeRequest{})
	if status != http.StatusOK {
		t.Fatalf("subscription answered %d", status)
	}
	var first cp.Snapshot
	must(t, json.Unmarshal(body, &first))

	// A guard of the same namespace and labels injected while tracing was off gets the
	// policy, not the certificate.
	status, body = poll(t, token(t, pod(t, ns, "untraced-cert", "web"), guardv1.Audience), cp.SubscribeRequest{})
	if status != http.StatusOK || strings.Contains(string(body), keyBody(key1)) || strings.Contains(string(body), "PRIVATE KEY") {
		t.Errorf("a guard injected without tracing: %d, and its snapshot carries the client certificate's key: %t", status,
			strings.Contains(string(body), "PRIVATE KEY"))
	}

	// A mimic: the guard as the injector renders it, with a flag more, in the same
	// namespace and with the same labels, is refused: no snapshot, no certificate.
	m := createPod(t, editGuard(guardedPod(ns, "mimic-traced", map[string]string{"app": "web"}, nil), func(_ *corev1.Pod, g *corev1.Container) {
		g.Args = append(g.Args, "--pod-labels=nothing=selected")
	}))
	status, body = poll(t, token(t, m, guardv1.Audience), cp.SubscribeRequest{})
	if status != http.StatusForbidden || !strings.Contains(string(body), "does not carry the guard") {
		t.Errorf("the mimic's subscription: %d %q, want 403 not_a_guard", status, body)
	}
	if strings.Contains(string(body), keyBody(key1)) || strings.Contains(string(body), "PRIVATE KEY") {
		t.Error("the mimic's refusal carries the client certificate's key")
	}

	// A rotation: a new version, pushed to the running guard.
	crt2, key2 := pki.Client(t, "guards-2")
	keys = append(keys, key2)
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	secret.Data = map[string][]byte{"tls.crt": crt2, "tls.key": key2}
	must(t, k8s.Update(ctx, secret))
	waitUntil(t, "the rotated certificate", func() bool {
		_, cc := seen.get()
		return cc != nil && cc.Key == string(key2) && cc.Certificate == string(crt2) && cc.CA == ""
	})
	status, body = poll(t, tok, cp.SubscribeRequest{Running: first.Version})
	for deadline := time.Now().Add(20 * time.Second); status == http.StatusNoContent && time.Now().Before(deadline); {
		status, body = poll(t, tok, cp.SubscribeRequest{Running: first.Version})
	}
	var rotated cp.Snapshot
	must(t, json.Unmarshal(body, &rotated))
	if rotated.Version == first.Version || rotated.Tracing == nil || rotated.Tracing.ClientCertificate == nil ||
		rotated.Tracing.ClientCertificate.Certificate != string(crt2) {
		t.Errorf("a rotation: version %s (was %s), the new certificate %v", rotated.Version, first.Version,
			rotated.Tracing != nil && rotated.Tracing.ClientCertificate != nil && rotated.Tracing.ClientCertificate.Certificate == string(crt2))
	}

	// A key of another certificate: KeepLast, logged without content, the gauge at 0.
	_, key3 := pki.Client(t, "guards-3")
	keys = append(keys, key3)
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	secret.Data = map[string][]byte{"tls.crt": crt2, "tls.key": key3}
	must(t, k8s.Update(ctx, secret))
	waitUntil(t, "keep the last", func() bool { _, cc := seen.get(); return cc != nil && cc.KeepLast && cc.Key == "" })
	waitUntil(t, "the log line", func() bool {
		return strings.Contains(logs.String(), "Guards keep the client certificate they have") &&
			strings.Contains(logs.String(), "not a certificate and its key")
	})
	if !strings.Contains(logs.String(), leaseNS+"/"+tracingClientCert.Secret) {
		t.Error("the log does not name the Secret")
	}
	if g := gauge(t, "guardrail_controlplane_tracing_client_certificate_valid", "secret", tracingClientCert.Secret); g != 0 {
		t.Errorf("guardrail_controlplane_tracing_client_certificate_valid = %v, want 0", g)
	}

	// Valid again, then deleted: KeepLast.
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	secret.Data = map[string][]byte{"tls.crt": crt1, "tls.key": key1}
	must(t, k8s.Update(ctx, secret))
	waitUntil(t, "the fixed certificate", func() bool { _, cc := seen.get(); return cc != nil && cc.Key == string(key1) })
	must(t, k8s.Delete(ctx, secret))
	waitUntil(t, "keep the last once deleted", func() bool { _, cc := seen.get(); return cc != nil && cc.KeepLast })

	// Where the key must not be.
	var where []string
	b, err := os.ReadFile(filepath.Join(dir, cp.SnapshotFile))
	must(t, err)
	where = append(where, "the manager's log\x00"+logs.String(), "the persisted snapshot\x00"+string(b))
	var events eventsv1.EventList
	must(t, k8s.List(ctx, &events))
	var coreEvents corev1.EventList
	must(t, k8s.List(ctx, &coreEvents))
	var leases coordinationv1.LeaseList
	must(t, k8s.List(ctx, &leases, client.InNamespace(leaseNS)))
	var grs v1alpha1.GuardrailList
	must(t, k8s.List(ctx, &grs, client.InNamespace(ns)))
	var pods corev1.PodList
	must(t, k8s.List(ctx, &pods, client.InNamespace(ns)))
	for _, o := range []any{events, coreEvents, leases, grs, pods} {
		raw, _ := json.Marshal(o)
		where = append(where, fmt.Sprintf("%T", o)+"\x00"+string(raw))
	}
	for _, w := range where {
		name, text, _ := strings.Cut(w, "\x00")
		if strings.Contains(text, "PRIVATE KEY") {
			t.Errorf("%s holds a private key", name)
		}
		for _, k := range keys {
			if strings.Contains(text, keyBody(k)) {
				t.Errorf("%s holds the client certificate's key", name)
			}
		}
	}
	if strings.Contains(string(b), "BEGIN CERTIFICATE") {
		t.Error("the persisted snapshot holds the client certificate")
	}
}
