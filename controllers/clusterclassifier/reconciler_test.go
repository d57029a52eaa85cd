package clusterclassifier

import (
	"context"
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
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// Reconciles on a fake client: the whole reconciler, without an apiserver; the envtest
// suite of controllers/clusterguardrail runs it against a real one.

func reconcileOnce(t *testing.T, c *v1alpha1.ClusterClassifier, objs ...client.Object) *v1alpha1.ClusterClassifier {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	cl := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.ClusterClassifier{}).
		WithObjects(append(objs, c)...).Build()
	r := &Reconciler{Client: cl, APIReader: cl, OperatorNamespace: "guardrail-system"}
	// Twice: the first adds the in-use finalizer, whose write makes its status patch stale
	// (it is retried at once, as here).
	for range 2 {
		_, _ = r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
	}
	got := &v1alpha1.ClusterClassifier{}
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestClusterClassifierReconcile(t *testing.T) {
	remote := func() *v1alpha1.ClusterClassifier {
		return &v1alpha1.ClusterClassifier{ObjectMeta: metav1.ObjectMeta{Name: "judge", Generation: 1},
			Spec: v1alpha1.ClassifierSpec{
				Moderation:           &v1alpha1.ModerationBackend{URL: "https://moderation.example/v1/moderations"},
				Categories:           []v1alpha1.Category{{ID: "violence"}},
				CredentialsSecretRef: &v1alpha1.SecretKeyReference{Name: "judge", Key: "apiKey"},
			}}
	}
	secret := func(ns string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge"}, Data: map[string][]byte{"apiKey": []byte("k")}}
	}
	t.Run("a Secret of the same name in a tenant's namespace is not read", func(t *testing.T) {
		got := reconcileOnce(t, remote(), secret("tenant"))
		c := status.Get(got, v1alpha1.ConditionCredentialsResolved)
		if c == nil || c.Reason != v1alpha1.ReasonSecretNotFound || !strings.Contains(c.Message, "namespace guardrail-system") {
			t.Fatalf("CredentialsResolved %+v, want SecretNotFound in namespace guardrail-system", c)
		}
	})
	t.Run("the Secret of the operator's namespace resolves it and it is Ready", func(t *testing.T) {
		got := reconcileOnce(t, remote(), secret("guardrail-system"))
		if r := status.Get(got, v1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			t.Fatalf("Ready %+v", r)
		}
		if got.Status.Backend != "moderation" || len(got.Status.Categories) != 1 {
			t.Fatalf("status %+v", got.Status)
		}
	})
	t.Run("an invalid pattern stalls it naming the field", func(t *testing.T) {
		c := &v1alpha1.ClusterClassifier{ObjectMeta: metav1.ObjectMeta{Name: "bad", Generation: 1},
			Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{
				Patterns: []v1alpha1.PatternRule{{Category: "ids", Regex: "EMP-[0-9"}}}}}
		got := reconcileOnce(t, c)
		s := status.Get(got, v1alpha1.ConditionStalled)
		if s == nil || s.Status != metav1.ConditionTrue || !strings.Contains(s.Message, "spec.builtin.patterns[0]") {
			t.Fatalf("Stalled %+v, want one naming spec.builtin.patterns[0]", s)
		}
	})
	t.Run("it counts the ClusterGuardrails that reference it", func(t *testing.T) {
		g := &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: "uses-judge"},
			Spec: v1alpha1.ClusterGuardrailSpec{GuardrailSpec: v1alpha1.GuardrailSpec{ClassifierRef: v1alpha1.LocalObjectReference{Name: "judge"}}}}
		if got := reconcileOnce(t, remote(), secret("guardrail-system"), g); got.Status.Guardrails != 1 {
			t.Fatalf("status.guardrails %d, want 1", got.Status.Guardrails)
		}
	})
}

// Deleting a ClusterClassifier waits for the ClusterGuardrails that use it, as a
// Classifier's deletion waits for its Guardrails.
func TestDeletingAClusterClassifierWaitsForItsUsers(t *testing.T) {
	now := metav1.Now()
	deleting := func() *v1alpha1.ClusterClassifier {
		return &v1alpha1.ClusterClassifier{ObjectMeta: metav1.ObjectMeta{Name: "judge", Generation: 2, DeletionTimestamp: &now,
			Finalizers: []string{v1alpha1.InUseProtectionFinalizer}},
			Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII}}}}
	}
	user := &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: "uses-judge"},
		Spec: v1alpha1.ClusterGuardrailSpec{GuardrailSpec: v1alpha1.GuardrailSpec{ClassifierRef: v1alpha1.LocalObjectReference{Name: "judge"}}}}
	got := reconcileOnce(t, deleting(), user)
	if c := status.Get(got, v1alpha1.ConditionInUse); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "uses-judge") {
		t.Fatalf("InUse %+v, want one naming uses-judge", c)
	}

	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	cl := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.ClusterClassifier{}).WithObjects(deleting()).Build()
	r := &Reconciler{Client: cl, APIReader: cl, OperatorNamespace: "guardrail-system"}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "judge"}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "judge"}, &v1alpha1.ClusterClassifier{}); err == nil {
		t.Fatal("an unused ClusterClassifier being deleted kept its finalizer")
	}
}
