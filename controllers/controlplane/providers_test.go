package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// keylessFixture is a namespace labelled keyless=<its name> and four ModelProviders with
// credentials in the operator's namespace: two that select it (-a, -b), one that selects
// no namespace of this test (-c) and one that selects it with a URL on loopback (-local).
// It returns the namespace and the providers' name prefix.
func keylessFixture(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	ns := fixture(t)
	nsObj := &corev1.Namespace{}
	must(t, k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj))
	nsObj.Labels["keyless"] = ns
	must(t, k8s.Update(ctx, nsObj))
	prefix := ns
	for _, p := range []struct{ suffix, selects, url string }{
		{"-a", ns, "https://llm.example/v1"},
		{"-b", ns, "https://llm.example/v1"},
		{"-c", "nobody", "https://llm.example/v1"},
		// On the pod's own host, where any of its containers could listen for the key.
		{"-local", ns, "http://127.0.0.1:8080/v1"},
	} {
		name := prefix + p.suffix
		must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: name},
			Data: map[string][]byte{"apiKey": []byte(canary + "-provider-" + name)}}))
		must(t, k8s.Create(ctx, &v1alpha1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.ModelProviderSpec{
				API: v1alpha1.ProviderAPIOpenAI, URL: p.url,
				CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: name, Key: "apiKey"},
				NamespaceSelector:    &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"keyless": v1alpha1.LabelValue(p.selects)}},
				Headers:              []v1alpha1.ProviderHeader{{Name: "OpenAI-Project", Value: "proj_" + p.suffix[1:]}},
			}}))
		t.Cleanup(func() {
			_ = k8s.Delete(context.Background(), &v1alpha1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: name}})
		})
	}
	return ns, prefix
}

// keylessPod creates a guard pod whose guard was injected for providers (--provider
// flags), with extra annotations on the pod.
func keylessPod(t *testing.T, ns, name string, annotations map[string]string, providers ...string) *corev1.Pod {
	t.Helper()
	return createPod(t, guardedPod(ns, name, map[string]string{"app": "web"}, annotations, providers...))
}

// providersOf waits until a subscription of tok answers a snapshot holding want providers
// (or the deadline passes) and returns the last snapshot and its bytes.
func providersOf(t *testing.T, tok string, want int) (cp.Snapshot, []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body := poll(t, tok, cp.SubscribeRequest{})
		if status != http.StatusOK {
			t.Fatalf("subscription answered %d: %s", status, body)
		}
		var s cp.Snapshot
		must(t, json.Unmarshal(body, &s))
		if len(s.Providers) == want || time.Now().After(deadline) {
			return s, body
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A guard receives the credential of a provider only when its own flags (the injector's)
// name it and the provider selects the pod's namespace: not another provider's, not one
// that selects other namespaces, and not by an annotation the tenant writes.
func TestAGuardGetsOnlyTheProvidersItWasInjectedForAndMayUse(t *testing.T) {
	ns, prefix := keylessFixture(t)

	p := keylessPod(t, ns, "keyless-1", nil, prefix+"-a", prefix+"-c", prefix+"-local")
	s, body := providersOf(t, token(t, p, guardv1.Audience), 1)
	if len(s.Providers) != 1 || s.Providers[0].Name != prefix+"-a" {
		t.Fatalf("a guard injected for %[1]s-a, %[1]s-c (which does not select its namespace) and %[1]s-local (on loopback) got providers %[2]v, want only -a", prefix, names(s.Providers))
	}
	got := s.Providers[0]
	if got.Credential != canary+"-provider-"+prefix+"-a" || got.API != guardv1.ProviderAPIOpenAI || got.URL != "https://llm.example/v1" ||
		got.Headers["OpenAI-Project"] != "proj_a" {
		t.Errorf("provider %s-a arrived as %+v (credential elided), want its spec and credential", prefix, withoutCredential(got))
	}
	for _, other := range []string{prefix + "-b", prefix + "-c", prefix + "-local"} {
		if bytes.Contains(body, []byte(canary+"-provider-"+other)) {
			t.Errorf("the snapshot holds the credential of %s, which the guard was not given", other)
		}
	}

	// No flag: no provider, however the pod is annotated (the annotation the manager's
	// cache uses is dropped by its transform, and the spec names nothing).
	forged := keylessPod(t, ns, "forged-1", map[string]string{guards.AnnotationGuardProviders: prefix + "-b"})
	status, body := waitSnapshot(t, token(t, forged, guardv1.Audience))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if bytes.Contains(body, []byte(canary+"-provider-")) || bytes.Contains(body, []byte(`"providers"`)) {
		t.Errorf("a pod whose guard names no provider got provider credentials by annotating itself: %s", redact(body))
	}
}

// Rotating a provider's Secret, or moving the namespace out of its namespaceSelector,
// reaches a subscribed guard as a new snapshot version.
func TestProviderRotationAndRevocationReachTheGuard(t *testing.T) {
	ns, prefix := keylessFixture(t)
	ctx := context.Background()
	p := keylessPod(t, ns, "keyless-1", nil, prefix+"-b")
	tok := token(t, p, guardv1.Audience)
	first, _ := providersOf(t, tok, 1)
	if len(first.Providers) != 1 {
		t.Fatalf("the guard did not get provider %s-b", prefix)
	}

	sec := &corev1.Secret{}
	must(t, k8s.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: prefix + "-b"}, sec))
	sec.Data["apiKey"] = []byte(canary + "-rotated-" + prefix)
	must(t, k8s.Update(ctx, sec))
	status, body := poll(t, tok, cp.SubscribeRequest{Running: first.Version})
	deadline := time.Now().Add(20 * time.Second)
	for status == http.StatusNoContent && time.Now().Before(deadline) {
		status, body = poll(t, tok, cp.SubscribeRequest{Running: first.Version})
	}
	var rotated cp.Snapshot
	if status != http.StatusOK {
		t.Fatalf("after the rotation the subscription answered %d", status)
	}
	must(t, json.Unmarshal(body, &rotated))
	if len(rotated.Providers) != 1 || rotated.Providers[0].Credential != canary+"-rotated-"+prefix {
		t.Fatalf("after the rotation the guard got %+v, want the rotated credential", len(rotated.Providers))
	}
	if rotated.Version == first.Version {
		t.Errorf("a rotation kept the snapshot version %s", first.Version)
	}

	nsObj := &corev1.Namespace{}
	must(t, k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj))
	nsObj.Labels["keyless"] = "revoked"
	must(t, k8s.Update(ctx, nsObj))
	revoked, body := providersOf(t, tok, 0)
	if len(revoked.Providers) != 0 || bytes.Contains(body, []byte(canary+"-rotated-")) {
		t.Errorf("a namespace the provider no longer selects still gets it")
	}
}

func withoutCredential(p cp.Provider) cp.Provider { p.Credential = "…"; return p }

func names(ps []cp.Provider) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// redact hides the canaries of a snapshot printed in a failure.
func redact(b []byte) string { return string(bytes.ReplaceAll(b, []byte(canary), []byte("…"))) }
