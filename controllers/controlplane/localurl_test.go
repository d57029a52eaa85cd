package controlplane

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// A Classifier whose backend URL names the guard's own host or link (loopback, cloud
// metadata) is Stalled by its reconciler; it must not reach a guard either, where a
// tenant's listener beside the app would receive the prompts.
func TestALocalClassifierURLReachesNoGuard(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	threshold := v1alpha1.Score(0.5)
	objs := func(url string) *fake.ClientBuilder {
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(
			&v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "judge", Generation: 1},
				Spec: v1alpha1.ClassifierSpec{Webhook: &v1alpha1.WebhookBackend{URL: url},
					Categories: []v1alpha1.Category{{ID: "unsafe"}}}},
			&v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 1},
				Spec: v1alpha1.GuardrailSpec{ClassifierRef: v1alpha1.LocalObjectReference{Name: "judge"},
					Threshold: &threshold, Action: v1alpha1.ActionBlock}},
		)
	}
	for _, tc := range []struct {
		url        string
		allowLocal bool
		want       bool
	}{
		{"http://127.0.0.1:15080/judge", false, false},
		{"http://169.254.169.254/latest", false, false},
		{"http://judge.shop.svc:8080/judge", false, true},
		{"http://127.0.0.1:8080/judge", true, true},
	} {
		c := objs(tc.url).Build()
		b := &builder{cache: c, secrets: c, allowLocal: tc.allowLocal}
		_, compile, err := b.build(context.Background(), "shop", selection{labels: labels.Set{}})
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		got, err := compile(context.Background(), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if has := len(got.src.Classifiers) == 1; has != tc.want {
			t.Errorf("%s (allowLocal %v): distributed %v, want %v", tc.url, tc.allowLocal, has, tc.want)
		}
	}
}
