package controlplane_test

import (
	"context"
	"encoding/json"
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

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// tracingHeaders is the servers' --guard-otel-headers-secret (TestMain).
var tracingHeaders = injection.TracingHeaders{Endpoint: "https://otel-collector.observability.svc:4318",
	Secret: "guard-otlp-headers", Key: "headers"}

// tracingClientCert is the servers' --guard-otel-client-cert-secret (TestMain), for the
// same endpoint, as the manager's flags give it.
var tracingClientCert = injection.TracingClientCert{Endpoint: tracingHeaders.Endpoint, Secret: "guard-otlp-client-cert"}

// currentTracing is the manager's tracing setting, whose guards get the credentials of
// tracingHeaders and tracingClientCert; previousTracing an earlier one (--guard-otel-previous)
// whose guards still verify.
var (
	currentTracing  = injection.Tracing{Endpoint: tracingHeaders.Endpoint}
	previousTracing = injection.Tracing{Endpoint: "https://old-collector.observability.svc:4318", Protocol: "grpc"}
)

// otlpCanary is in the headers' Secret: it must reach the guards' memory and nothing else.
const otlpCanary = "otlp-canary-token-4b8d"

// seenHeaders records what a real guard client handed to its tracer.
type seenHeaders struct {
	mu       sync.Mutex
	endpoint string
	headers  map[string]string
}

func (s *seenHeaders) set(endpoint string, h map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoint, s.headers = endpoint, h
}

func (s *seenHeaders) get() (string, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoint, s.headers
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A verified guard's snapshot carries the collector's headers from the Secret of the
// operator's namespace, with the endpoint they are for; a rotation reaches the running
// guard (its client) as a new version; a malformed value or a deleted Secret sends none
// and is logged without the value. The headers are in no log, Event, Lease, status or
// persisted snapshot.
func TestTracingHeadersReachVerifiedGuardsAndNothingElse(t *testing.T) {
	ctx := context.Background()
	ns := fixture(t)
	p := tracedPod(t, ns, "traced-1", "web", currentTracing)
	tok := token(t, p, guardv1.Audience)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: tracingHeaders.Secret},
		Data: map[string][]byte{tracingHeaders.Key: []byte("authorization=Bearer%20" + otlpCanary + "-1,x-scope-orgid=guards")}}
	must(t, k8s.Create(ctx, secret))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })

	// The real guard client, persisting its snapshot.
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	must(t, os.WriteFile(tokFile, []byte(tok), 0o600))
	var seen seenHeaders
	c := &cp.Client{URL: baseURL, TokenFile: tokFile, CAFile: caFile, SnapshotDir: dir, TracingHeaders: seen.set}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(cctx, func(*policy.Snapshot) error { return nil }, func(error) {})
	}()
	t.Cleanup(func() { cancel(); <-done })

	waitUntil(t, "the guard's tracing headers", func() bool {
		_, h := seen.get()
		return h["Authorization"] == "Bearer "+otlpCanary+"-1"
	})
	if e, h := seen.get(); e != tracingHeaders.Endpoint || h["X-Scope-Orgid"] != "guards" || len(h) != 2 {
		t.Errorf("the guard got headers for %q: %d of them, X-Scope-Orgid %q", e, len(h), h["X-Scope-Orgid"])
	}
	status, body := poll(t, tok, cp.SubscribeRequest{})
	var first cp.Snapshot
	if status != http.StatusOK {
		t.Fatalf("subscription answered %d", status)
	}
	must(t, json.Unmarshal(body, &first))
	if first.Tracing == nil || first.Tracing.Endpoint != tracingHeaders.Endpoint {
		t.Fatalf("the snapshot's tracing: %+v", first.Tracing != nil)
	}

	// A rotation: a new version, pushed to the running guard.
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	secret.Data[tracingHeaders.Key] = []byte("authorization=Bearer%20" + otlpCanary + "-2")
	must(t, k8s.Update(ctx, secret))
	waitUntil(t, "the rotated headers", func() bool {
		_, h := seen.get()
		return h["Authorization"] == "Bearer "+otlpCanary+"-2" && len(h) == 1
	})
	status, body = poll(t, tok, cp.SubscribeRequest{Running: first.Version})
	for deadline := time.Now().Add(20 * time.Second); status == http.StatusNoContent && time.Now().Before(deadline); {
		status, body = poll(t, tok, cp.SubscribeRequest{Running: first.Version})
	}
	var rotated cp.Snapshot
	must(t, json.Unmarshal(body, &rotated))
	if rotated.Version == first.Version {
		t.Errorf("a rotation kept the snapshot version %s", first.Version)
	}

	// Malformed (a header injected by a newline): no headers, the guard's removed, logged
	// without the value.
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	secret.Data[tracingHeaders.Key] = []byte("authorization=Bearer%20" + otlpCanary + "-3%0D%0AX-Injected:%201")
	must(t, k8s.Update(ctx, secret))
	waitUntil(t, "the headers removed", func() bool { _, h := seen.get(); return h == nil })
	waitUntil(t, "the log line", func() bool { return strings.Contains(logs.String(), "cannot be used") })
	if !strings.Contains(logs.String(), leaseNS+"/"+tracingHeaders.Secret) {
		t.Error("the log does not name the Secret")
	}

	// Valid again, then deleted: none.
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	secret.Data[tracingHeaders.Key] = []byte("authorization=Bearer%20" + otlpCanary + "-4")
	must(t, k8s.Update(ctx, secret))
	waitUntil(t, "the fixed headers", func() bool { _, h := seen.get(); return h["Authorization"] == "Bearer "+otlpCanary+"-4" })
	must(t, k8s.Delete(ctx, secret))
	waitUntil(t, "the headers removed with the Secret", func() bool { _, h := seen.get(); return h == nil })

	// Where the headers must not be.
	if strings.Contains(logs.String(), otlpCanary) {
		t.Error("the manager's log holds the collector's headers")
	}
	b, err := os.ReadFile(filepath.Join(dir, cp.SnapshotFile))
	must(t, err)
	if strings.Contains(string(b), otlpCanary) {
		t.Error("the guard's persisted snapshot holds the collector's headers")
	}
	var events eventsv1.EventList
	must(t, k8s.List(ctx, &events))
	for _, e := range events.Items {
		if strings.Contains(e.Note, otlpCanary) || strings.Contains(e.Reason, otlpCanary) {
			t.Errorf("Event %s/%s holds the collector's headers", e.Namespace, e.Name)
		}
	}
	var coreEvents corev1.EventList
	must(t, k8s.List(ctx, &coreEvents))
	for _, e := range coreEvents.Items {
		if strings.Contains(e.Message, otlpCanary) {
			t.Errorf("Event %s/%s holds the collector's headers", e.Namespace, e.Name)
		}
	}
	var leases coordinationv1.LeaseList
	must(t, k8s.List(ctx, &leases, client.InNamespace(leaseNS)))
	for _, l := range leases.Items {
		if raw, _ := json.Marshal(l); strings.Contains(string(raw), otlpCanary) {
			t.Errorf("Lease %s holds the collector's headers", l.Name)
		}
	}
	var grs v1alpha1.GuardrailList
	must(t, k8s.List(ctx, &grs, client.InNamespace(ns)))
	var pods corev1.PodList
	must(t, k8s.List(ctx, &pods, client.InNamespace(ns)))
	for _, o := range []any{grs, pods} {
		if raw, _ := json.Marshal(o); strings.Contains(string(raw), otlpCanary) {
			t.Errorf("%T holds the collector's headers", o)
		}
	}
}

// The collector's credentials reach only guards injected to export to the endpoint they are
// for: in one namespace, under the same Guardrails, a guard injected while tracing was off
// and one injected with an earlier setting get the policy without them, and so does a pod
// whose tenant wrote the manager's cache-only tracing annotation onto it. The guard that
// traces to the endpoint gets them.
func TestCollectorCredentialsReachOnlyGuardsThatTraceThere(t *testing.T) {
	ctx := context.Background()
	ns := fixture(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: tracingHeaders.Secret},
		Data: map[string][]byte{tracingHeaders.Key: []byte("authorization=Bearer%20" + otlpCanary + "-only")}}
	must(t, k8s.Create(ctx, secret))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })

	traced := tracedPod(t, ns, "traced", "web", currentTracing)
	untraced := pod(t, ns, "untraced", "web")
	earlier := tracedPod(t, ns, "earlier", "web", previousTracing)
	claimed := guardedPod(ns, "claimed", map[string]string{"app": "web"},
		map[string]string{"guardrail.dev/guard-tracing": tracingHeaders.Endpoint, "guardrail.dev/guard-verification": "verified"})
	createPod(t, claimed)

	snapshotOf := func(p *corev1.Pod) (cp.Snapshot, string) {
		t.Helper()
		status, body := poll(t, token(t, p, guardv1.Audience), cp.SubscribeRequest{})
		if status != http.StatusOK {
			t.Fatalf("pod %s: subscription answered %d", p.Name, status)
		}
		var s cp.Snapshot
		must(t, json.Unmarshal(body, &s))
		return s, string(body)
	}
	got, body := snapshotOf(traced)
	if got.Tracing == nil || got.Tracing.Endpoint != tracingHeaders.Endpoint || got.Tracing.Headers["Authorization"] != "Bearer "+otlpCanary+"-only" {
		t.Fatalf("the guard tracing to %s got no headers for it (tracing %t)", tracingHeaders.Endpoint, got.Tracing != nil)
	}
	if !strings.Contains(body, otlpCanary) {
		t.Fatal("the traced guard's snapshot does not carry the headers")
	}
	for _, p := range []*corev1.Pod{untraced, earlier, claimed} {
		s, body := snapshotOf(p)
		if s.Tracing != nil || strings.Contains(body, otlpCanary) {
			t.Errorf("pod %s, whose guard does not trace to %s, got the collector's headers", p.Name, tracingHeaders.Endpoint)
		}
		if len(s.Guardrails) != len(got.Guardrails) || len(s.Guardrails) == 0 {
			t.Errorf("pod %s got %d Guardrails, the traced guard %d: the policy must not depend on tracing", p.Name, len(s.Guardrails), len(got.Guardrails))
		}
	}
}
