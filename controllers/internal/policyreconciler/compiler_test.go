package policyreconciler

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

func pii(gen int64) *v1alpha1.Classifier {
	return &v1alpha1.Classifier{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pii", UID: "c-1", Generation: gen},
		Spec:       v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII}}},
	}
}

func blocking(gen int64, mode v1alpha1.Mode) *v1alpha1.Guardrail {
	one := v1alpha1.Score(1)
	return &v1alpha1.Guardrail{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "no-pii", UID: "g-1", Generation: gen},
		Spec: v1alpha1.GuardrailSpec{Mode: mode, ClassifierRef: v1alpha1.LocalObjectReference{Name: "pii"},
			Threshold: &one, Action: v1alpha1.ActionBlock, Reason: "Blocked by policy"},
	}
}

// A policy is compiled once per generation of it and of its classifier.
func TestCompilerCompilesOncePerGeneration(t *testing.T) {
	cc := NewCompiler()
	compile := func(g *v1alpha1.Guardrail, c *v1alpha1.Classifier) *policy.Guardrail {
		t.Helper()
		cm, gm := policykube.Classifier(c), policykube.Guardrail(g)
		compiled, err := cc.Classifier(&cm)
		if err != nil {
			t.Fatal(err)
		}
		out, err := cc.Guardrail(&gm, &cm, compiled)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := compile(blocking(1, v1alpha1.ModeEnforce), pii(1))
	if again := compile(blocking(1, v1alpha1.ModeEnforce), pii(1)); again != first {
		t.Error("the same generations were compiled twice")
	}
	report := compile(blocking(2, v1alpha1.ModeReport), pii(1))
	if report == first || report.Mode != policy.ModeReport {
		t.Errorf("a new generation of the guardrail: %+v", report)
	}
	if again := compile(blocking(2, v1alpha1.ModeReport), pii(2)); again == report {
		t.Error("a new generation of the classifier was not compiled")
	}
	cc.Forget("Guardrail", types.NamespacedName{Namespace: "shop", Name: "no-pii"})
	cc.Forget("Classifier", types.NamespacedName{Namespace: "shop", Name: "pii"})
	if len(cc.guardrails) != 0 || len(cc.classifiers) != 0 {
		t.Errorf("kept after Forget: %d guardrails, %d classifiers", len(cc.guardrails), len(cc.classifiers))
	}
}

// A compile error is kept too, and judging it (with a local backend URL added) does not
// change it: the next reconcile judges the compiler's error again, not one that grew.
func TestASharedCompileErrorIsNotChanged(t *testing.T) {
	cc := NewCompiler()
	c := &v1alpha1.Classifier{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "judge", UID: "c-2", Generation: 1},
		Spec:       v1alpha1.ClassifierSpec{Webhook: &v1alpha1.WebhookBackend{URL: "http://127.0.0.1/"}},
	}
	m := policykube.Classifier(c)
	_, fresh := policy.CompileClassifier(&m, "")
	for range 2 {
		compiled, err := cc.Classifier(&m)
		if err == nil {
			t.Fatal("a webhook classifier without categories compiled")
		}
		if got, want := len(err.(*policy.Error).Errs), len(fresh.(*policy.Error).Errs); got != want {
			t.Fatalf("the kept error has %d errors, the compiler's %d", got, want)
		}
		_, _ = policystatus.CheckSpec(c, &c.Status, &m, compiled, err, false)
		if msg := status.Get(c, v1alpha1.ConditionStalled).Message; !strings.Contains(msg, "is a loopback address") ||
			!strings.Contains(msg, "spec.categories") {
			t.Errorf("Stalled message %q", msg)
		}
	}
}
