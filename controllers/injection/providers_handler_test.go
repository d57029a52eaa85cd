package injection

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestHandlerGivesAKeylessPodItsNamespacesProvider(t *testing.T) {
	h := newKeylessTestHandler(t, enabledNS, providerDefault("openai-prod"))
	req := podRequest(t, newPod())
	resp := h.Handle(context.Background(), req)
	if !resp.Allowed || len(resp.Patch) == 0 {
		t.Fatalf("allowed=%v patch=%s", resp.Allowed, resp.Patch)
	}
	pod := applyPatch(t, req, resp)
	if got := providerFlags(guardOf(pod)); !slices.Equal(got, []string{"--provider=openai-prod"}) {
		t.Fatalf("the guard's provider flags: %v", got)
	}
	if v, _ := envValue(&pod.Spec.Containers[0], "OPENAI_API_KEY"); v != guardv1.PlaceholderAPIKey {
		t.Fatalf("the app's OPENAI_API_KEY = %q", v)
	}
}

func TestHandlerReadsAProviderTheCacheHasNotSeenFromTheAPIServer(t *testing.T) {
	h := newKeylessTestHandler(t, enabledNS, nil)
	h.APIReader = h.Providers
	h.Providers = fake.NewClientBuilder().WithScheme(h.Providers.(client.Client).Scheme()).Build() // a cache that has not seen it
	req := podRequest(t, newPod(withProvider("anthropic-prod")))
	resp := h.Handle(context.Background(), req)
	if !resp.Allowed || !slices.Equal(providerFlags(guardOf(applyPatch(t, req, resp))), []string{"--provider=anthropic-prod"}) {
		t.Fatalf("allowed=%v result=%v", resp.Allowed, resp.Result)
	}
}

func TestHandlerDeniesAPodAskingForAProviderItCannotUse(t *testing.T) {
	for name, nsLabels := range map[string]map[string]string{"enabled": enabledNS, "required": requiredNS} {
		t.Run("in a namespace labelled "+name, func(t *testing.T) {
			h := newKeylessTestHandler(t, nsLabels, nil)
			h.FailClosed = name == "required"
			resp := h.Handle(context.Background(), podRequest(t, newPod(withProvider("ml-only"))))
			if resp.Allowed || !strings.Contains(resp.Result.Message, "ModelProvider ml-only does not serve namespace apps") {
				t.Fatalf("allowed=%v message=%q", resp.Allowed, resp.Result.Message)
			}
		})
	}
}

func TestHandlerThatCannotReadAProviderFailsAsItsEntryDoes(t *testing.T) {
	failing := func(h *Handler) {
		h.Providers = fake.NewClientBuilder().WithScheme(h.Providers.(client.Client).Scheme()).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errors.New("the cache is not synced")
			},
		}).Build()
	}
	t.Run("behind an entry that fails open the pod is admitted without a guard, with a warning", func(t *testing.T) {
		h := newKeylessTestHandler(t, enabledNS, nil)
		failing(h)
		resp := h.Handle(context.Background(), podRequest(t, newPod(withProvider("openai-prod"))))
		if !resp.Allowed || len(resp.Patch) != 0 || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "model providers") {
			t.Fatalf("allowed=%v patch=%s warnings=%v", resp.Allowed, resp.Patch, resp.Warnings)
		}
	})
	t.Run("behind the required entry the pod is refused", func(t *testing.T) {
		h := newKeylessTestHandler(t, requiredNS, nil)
		h.FailClosed = true
		failing(h)
		if resp := h.Handle(context.Background(), podRequest(t, newPod(withProvider("openai-prod")))); resp.Allowed {
			t.Fatal("admitted")
		}
	})
	t.Run("a pod that asks for no provider reads none", func(t *testing.T) {
		h := newKeylessTestHandler(t, requiredNS, nil)
		h.FailClosed = true
		failing(h)
		if resp := h.Handle(context.Background(), podRequest(t, newPod())); !resp.Allowed || len(resp.Patch) == 0 {
			t.Fatalf("allowed=%v", resp.Allowed)
		}
	})
}
