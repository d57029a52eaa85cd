package controllers_test

import (
	"os"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
)

// Typed fixtures for behaviour tests, built with functional options.

type classifierOpt func(*v1alpha1.Classifier)

func newClassifier(ns, name string, opts ...classifierOpt) *v1alpha1.Classifier {
	c := &v1alpha1.Classifier{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ClassifierSpec{
			Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII}},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// withWebhook makes the classifier a webhook judge with the given questions and credentials.
func withWebhook(secret string, questions ...v1alpha1.Question) classifierOpt {
	return func(c *v1alpha1.Classifier) {
		c.Spec.Builtin = nil
		c.Spec.Webhook = &v1alpha1.WebhookBackend{URL: "https://judge.example.com/classify"}
		c.Spec.Questions = questions
		if secret != "" {
			c.Spec.CredentialsSecretRef = &v1alpha1.SecretKeyReference{Name: secret, Key: "apiKey"}
		}
	}
}

func choiceQuestion(id string, values ...string) v1alpha1.Question {
	q := v1alpha1.Question{ID: id, Type: v1alpha1.QuestionChoice}
	for _, v := range values {
		q.Criteria = append(q.Criteria, v1alpha1.Criterion{Value: v, Description: "The message is about " + v})
	}
	return q
}

type guardrailOpt func(*v1alpha1.Guardrail)

func newGuardrail(ns, name, classifier string, opts ...guardrailOpt) *v1alpha1.Guardrail {
	one := v1alpha1.Score(1)
	g := &v1alpha1.Guardrail{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.GuardrailSpec{
			Mode:          v1alpha1.ModeEnforce,
			ClassifierRef: v1alpha1.LocalObjectReference{Name: classifier},
			Threshold:     &one,
			Action:        v1alpha1.ActionBlock,
			Reason:        "Blocked by policy",
		},
	}
	for _, o := range opts {
		o(g)
	}
	return g
}

// withRule replaces category rules by one CEL rule.
func withRule(name, expr string) guardrailOpt {
	return func(g *v1alpha1.Guardrail) {
		g.Spec.Threshold, g.Spec.Action = nil, ""
		g.Spec.Rules = append(g.Spec.Rules, v1alpha1.Rule{Name: name, Expression: expr, Action: "Block"})
	}
}

func withCategories(ids ...string) guardrailOpt {
	return func(g *v1alpha1.Guardrail) { g.Spec.Categories = ids }
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// Unstructured fixtures for manifests the typed API cannot express (missing required
// fields, values outside the enums), built from a valid base by mutations.

type mutation func(obj map[string]any)

// set sets a dotted path (spec.streaming.holdBackChars) to v.
func set(path string, v any) mutation {
	return func(obj map[string]any) {
		parts := strings.Split(path, ".")
		if err := unstructured.SetNestedField(obj, v, parts...); err != nil {
			panic(err)
		}
	}
}

// unset removes a dotted path.
func unset(path string) mutation {
	return func(obj map[string]any) { unstructured.RemoveNestedField(obj, strings.Split(path, ".")...) }
}

func manifest(kind, ns, name string, spec map[string]any, muts ...mutation) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "guardrail.dev/v1alpha1",
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
	for _, m := range muts {
		m(u.Object)
	}
	return u
}

func classifierManifest(ns, name string, muts ...mutation) *unstructured.Unstructured {
	return manifest("Classifier", ns, name, map[string]any{
		"builtin": map[string]any{"packs": []any{"pii"}},
	}, muts...)
}

func guardrailManifest(ns, name string, muts ...mutation) *unstructured.Unstructured {
	return manifest("Guardrail", ns, name, map[string]any{
		"mode":          "Enforce",
		"classifierRef": map[string]any{"name": "pii"},
		"threshold":     0.5,
		"action":        "Block",
		"reason":        "Blocked by policy",
	}, muts...)
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }

type podOpt func(*corev1.Pod)

// newPod is a running pod's manifest with one app container; create it with createRunning.
func newPod(ns, name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withLabel(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func withAnnotation(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

// withGuard adds the guard as the injector renders it (the legacy shape, a regular
// container) and the injected label.
func withGuard() podOpt {
	return func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "app" // a projected token needs one; createRunning creates it
		injection.RenderGuard(p, testGuard, false, []byte("ca"))
	}
}

// guardLease is the Lease the control-plane server keeps for p's guard, renewed at renew,
// acknowledging the Guardrails of enforced (name=generation, comma separated).
func guardLease(p *corev1.Pod, enforced string, renew time.Time, duration int32) *coordinationv1.Lease {
	t := metav1.NewMicroTime(renew)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: guards.LeaseName(p.UID),
			Labels: map[string]string{guardv1.LabelLeasePodNamespace: p.Namespace},
			Annotations: map[string]string{guardv1.AnnotationLeasePod: p.Name, guardv1.AnnotationLeasePodUID: string(p.UID),
				guardv1.AnnotationEnforced: enforced}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(p.Namespace + "/" + p.Name), LeaseDurationSeconds: &duration, RenewTime: &t},
	}
}
