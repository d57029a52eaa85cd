package guardrail

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policyreconciler"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/policystatus"
	"github.com/guardrail-dev/guardrail-operator/controllers/internal/status"
)

// Step tests: each step of a reconcile on a fake client, without an apiserver. The
// envtest specs in package controllers run the whole reconciler against a real one.

type scope = policyreconciler.GuardrailScope[*v1alpha1.Guardrail, *v1alpha1.Classifier]

func stepScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func builtinClassifier(gen int64, conds ...metav1.Condition) *v1alpha1.Classifier {
	c := &v1alpha1.Classifier{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pii", Generation: gen},
		Spec: v1alpha1.ClassifierSpec{
			Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII}},
		},
	}
	c.Status.ObservedGeneration = gen
	c.Status.Conditions = conds
	return c
}

func condition(t string, s metav1.ConditionStatus, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
}

func blockingGuardrail(classifier string, categories ...string) *v1alpha1.Guardrail {
	one := v1alpha1.Score(1)
	return &v1alpha1.Guardrail{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "no-pii", Generation: 4},
		Spec: v1alpha1.GuardrailSpec{
			Mode:          v1alpha1.ModeEnforce,
			ClassifierRef: v1alpha1.LocalObjectReference{Name: classifier},
			Categories:    categories,
			Threshold:     &one,
			Action:        v1alpha1.ActionBlock,
			Reason:        "Blocked by policy",
		},
	}
}

func TestReconcileClassifierWaitsStallsOrResolves(t *testing.T) {
	for _, tc := range []struct {
		name       string
		classifier *v1alpha1.Classifier // nil: none exists
		requeue    bool
		terminal   bool
		reason     string // of ClassifierResolved, False; empty: the step resolved it
		inMessage  string
	}{
		{name: "a Classifier that does not exist is waited for", requeue: true,
			reason: v1alpha1.ReasonClassifierNotFound, inMessage: "does not exist in namespace shop"},
		{name: "a Classifier still reconciling is waited for",
			classifier: builtinClassifier(2, condition(v1alpha1.ConditionReady, metav1.ConditionFalse, "Progressing", "", 2)),
			requeue:    true, reason: v1alpha1.ReasonClassifierNotReady, inMessage: "it is reconciling"},
		{name: "a Ready condition of an older generation says nothing about the current spec",
			classifier: builtinClassifier(3, condition(v1alpha1.ConditionReady, metav1.ConditionTrue, "Succeeded", "ok", 2)),
			requeue:    true, reason: v1alpha1.ReasonClassifierNotReady},
		{name: "a Stalled Classifier stalls the Guardrail and names why",
			classifier: builtinClassifier(2, condition(v1alpha1.ConditionStalled, metav1.ConditionTrue, "InvalidSpec", "spec.webhook.url: bad", 2)),
			terminal:   true, reason: v1alpha1.ReasonClassifierStalled, inMessage: "Classifier pii is Stalled (InvalidSpec): spec.webhook.url: bad"},
		{name: "a Ready Classifier of the current generation is resolved",
			classifier: builtinClassifier(2, condition(v1alpha1.ConditionReady, metav1.ConditionTrue, "Succeeded", "ok", 2))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(stepScheme(t))
			if tc.classifier != nil {
				b = b.WithObjects(tc.classifier)
			}
			r := &Reconciler{Client: b.Build()}
			s := &scope{Obj: blockingGuardrail("pii")}
			res, err := r.ResolveClassifier(context.Background(), s)
			if got := res.RequeueAfter == policystatus.WaitInterval; got != tc.requeue {
				t.Errorf("requeue after %v, want a requeue: %v", res.RequeueAfter, tc.requeue)
			}
			if got := errors.Is(err, reconcile.TerminalError(nil)); got != tc.terminal {
				t.Errorf("error %v, want terminal: %v", err, tc.terminal)
			}
			if !tc.terminal && err != nil {
				t.Fatalf("error %v", err)
			}
			resolved := status.Get(s.Obj, v1alpha1.ConditionClassifierResolved)
			if tc.reason == "" {
				if s.Classifier == nil || resolved != nil {
					t.Fatalf("not resolved: classifier %v, condition %+v", s.Classifier, resolved)
				}
				return
			}
			if resolved == nil || resolved.Status != metav1.ConditionFalse || resolved.Reason != tc.reason {
				t.Fatalf("ClassifierResolved %+v, want False/%s", resolved, tc.reason)
			}
			if !strings.Contains(resolved.Message, tc.inMessage) {
				t.Errorf("message %q does not say %q", resolved.Message, tc.inMessage)
			}
			if s.Classifier != nil {
				t.Error("an unresolved Classifier reached the next step")
			}
			if tc.terminal {
				if st := status.Get(s.Obj, v1alpha1.ConditionStalled); st == nil || st.Status != metav1.ConditionTrue {
					t.Errorf("Stalled %+v, want True", st)
				}
			} else if rc := status.Get(s.Obj, v1alpha1.ConditionReconciling); rc == nil || rc.Status != metav1.ConditionTrue {
				t.Errorf("Reconciling %+v, want True while waiting", rc)
			}
		})
	}
}

func TestReconcileCompileStallsAGuardrailThatDoesNotFitItsClassifier(t *testing.T) {
	ready := builtinClassifier(2, condition(v1alpha1.ConditionReady, metav1.ConditionTrue, "Succeeded", "ok", 2))
	r := &Reconciler{}

	s := &scope{Obj: blockingGuardrail("pii", "email"), Classifier: ready}
	if _, err := r.Compile(context.Background(), s); err != nil || s.Compiled == nil {
		t.Fatalf("a Guardrail on a category its Classifier has: error %v, compiled %v", err, s.Compiled)
	}
	if c := status.Get(s.Obj, v1alpha1.ConditionClassifierResolved); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ClassifierResolved %+v, want True", c)
	}

	s = &scope{Obj: blockingGuardrail("pii", "no-such-category"), Classifier: ready}
	_, err := r.Compile(context.Background(), s)
	if !errors.Is(err, reconcile.TerminalError(nil)) || s.Compiled != nil {
		t.Fatalf("error %v, compiled %v: want a terminal error and nothing compiled", err, s.Compiled)
	}
	c := status.Get(s.Obj, v1alpha1.ConditionClassifierResolved)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonClassifierMismatch ||
		!strings.Contains(c.Message, "no-such-category") {
		t.Errorf("ClassifierResolved %+v, want False/%s naming the category", c, v1alpha1.ReasonClassifierMismatch)
	}
	if st := status.Get(s.Obj, v1alpha1.ConditionStalled); st == nil || st.Reason != v1alpha1.ReasonClassifierMismatch {
		t.Errorf("Stalled %+v, want the mismatch", st)
	}
}

func TestInEffectSaysTheModeAndWhatAStreamMayLetThrough(t *testing.T) {
	ready := builtinClassifier(2, condition(v1alpha1.ConditionReady, metav1.ConditionTrue, "Succeeded", "ok", 2))
	inEffect := func(g *v1alpha1.Guardrail) string {
		t.Helper()
		s := &scope{Obj: g, Classifier: ready}
		if _, err := (&Reconciler{}).Compile(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return policystatus.InEffect(g.Generation, s.Compiled)
	}
	g := blockingGuardrail("pii")
	if got := inEffect(g); got != "Generation 4 is in effect in Enforce mode" {
		t.Errorf("Enforce: %q", got)
	}
	g.Spec.Mode = v1alpha1.ModeReport
	if got := inEffect(g); !strings.Contains(got, "Report mode: decisions are recorded, content is left untouched") {
		t.Errorf("Report: %q", got)
	}
}
