package modelprovider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// Reconciles on a fake client: the whole reconciler without an apiserver; the envtest
// suite of this package runs it in the manager against a real one.

const operatorNS = "guardrail-system"

// secretValue is a credential: it must appear in no status field.
const secretValue = "sk-fake-credential-7f3a"

func reconcileOnce(t *testing.T, mp *v1alpha1.ModelProvider, objs ...client.Object) *v1alpha1.ModelProvider {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	cl := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.ModelProvider{}).
		WithIndex(&corev1.Pod{}, IndexPodProviders, PodProviders).
		WithObjects(append(objs, mp)...).Build()
	r := &Reconciler{Client: cl, APIReader: cl, OperatorNamespace: operatorNS}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(mp)}); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ModelProvider{}
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(mp), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func provider(mutate ...func(*v1alpha1.ModelProvider)) *v1alpha1.ModelProvider {
	mp := &v1alpha1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: "openai", Generation: 1}, Spec: validSpec()}
	for _, m := range mutate {
		m(mp)
	}
	return mp
}

func credentialSecret(ns string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "openai-key"}, Data: map[string][]byte{"apiKey": []byte(secretValue)}}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// cachedPod is a pod as the manager's cache holds it: trimmed, its guard verified or not,
// and the providers its guard uses.
func cachedPod(ns, name string, phase corev1.PodPhase, verified bool, providers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: corev1.PodStatus{Phase: phase}}
	var err error
	if !verified {
		err = errNotTheGuard
	}
	guards.SetGuardVerification(p, err)
	guards.SetGuardProviders(p, providers)
	return p
}

type notTheGuard struct{}

func (notTheGuard) Error() string { return "the guard's image is not the operator's" }

var errNotTheGuard error = notTheGuard{}

func TestModelProviderReconcile(t *testing.T) {
	t.Run("a Secret of the same name in a tenant's namespace is not read", func(t *testing.T) {
		got := reconcileOnce(t, provider(), credentialSecret("tenant"))
		c := status.Get(got, v1alpha1.ConditionCredentialsResolved)
		if c == nil || c.Reason != v1alpha1.ReasonSecretNotFound || !strings.Contains(c.Message, "namespace guardrail-system") {
			t.Fatalf("CredentialsResolved %+v, want SecretNotFound in namespace guardrail-system", c)
		}
		if r := status.Get(got, v1alpha1.ConditionReconciling); r == nil || r.Status != metav1.ConditionTrue {
			t.Fatalf("Reconciling %+v, want True while waiting for the Secret", r)
		}
	})
	t.Run("an empty value under the key does not resolve", func(t *testing.T) {
		empty := credentialSecret(operatorNS)
		empty.Data["apiKey"] = nil
		got := reconcileOnce(t, provider(), empty)
		if c := status.Get(got, v1alpha1.ConditionCredentialsResolved); c == nil || c.Reason != v1alpha1.ReasonSecretKeyNotFound {
			t.Fatalf("CredentialsResolved %+v, want SecretKeyNotFound", c)
		}
	})
	t.Run("the Secret of the operator's namespace makes it Ready, and its value is nowhere in status", func(t *testing.T) {
		got := reconcileOnce(t, provider(), credentialSecret(operatorNS))
		if r := status.Get(got, v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			t.Fatalf("Ready %+v", r)
		}
		if got.Status.ObservedGeneration != 1 {
			t.Fatalf("observedGeneration %d, want 1", got.Status.ObservedGeneration)
		}
		assertNoCredential(t, got)
	})
	t.Run("a loopback URL stalls it naming spec.url", func(t *testing.T) {
		got := reconcileOnce(t, provider(func(mp *v1alpha1.ModelProvider) { mp.Spec.URL = "http://localhost:9000/v1" }), credentialSecret(operatorNS))
		s := status.Get(got, v1alpha1.ConditionStalled)
		if s == nil || s.Status != metav1.ConditionTrue || s.Reason != v1alpha1.ReasonInvalidSpec || !strings.HasPrefix(s.Message, "spec.url: ") {
			t.Fatalf("Stalled %+v, want InvalidSpec naming spec.url", s)
		}
		if r := status.Get(got, v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
			t.Fatalf("Ready %+v, want False", r)
		}
	})
	t.Run("it counts the running pods whose verified guard uses it in the namespaces it selects", func(t *testing.T) {
		mp := provider(func(mp *v1alpha1.ModelProvider) {
			mp.Spec.NamespaceSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"keyless": "true"}}
		})
		got := reconcileOnce(t, mp, credentialSecret(operatorNS),
			namespace("shop", map[string]string{"keyless": "true"}), namespace("blog", map[string]string{"keyless": "true"}),
			namespace("other", nil),
			cachedPod("shop", "web-1", corev1.PodRunning, true, "openai"),
			cachedPod("shop", "web-2", corev1.PodRunning, true, "anthropic", "openai"),
			cachedPod("blog", "web-1", corev1.PodRunning, true, "openai"),
			cachedPod("shop", "pending", corev1.PodPending, true, "openai"),
			cachedPod("shop", "forged", corev1.PodRunning, false, "openai"),
			cachedPod("shop", "other-provider", corev1.PodRunning, true, "anthropic"),
			cachedPod("other", "not-selected", corev1.PodRunning, true, "openai"),
		)
		if got.Status.Pods != 3 || got.Status.Namespaces != 2 {
			t.Fatalf("status.pods %d, status.namespaces %d; want 3 and 2", got.Status.Pods, got.Status.Namespaces)
		}
	})
}

// assertNoCredential fails when the credential appears anywhere in mp's status.
func assertNoCredential(t *testing.T, mp *v1alpha1.ModelProvider) {
	t.Helper()
	raw, err := json.Marshal(mp.Status)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secretValue) {
		t.Fatalf("the credential is in status: %s", raw)
	}
}
