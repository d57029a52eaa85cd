package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// Policy files are built from the API types with small options and written as the YAML
// users `kubectl apply`, so the suite exercises the real policy-file path.

var typeMeta = func(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind}
}

// keywordClassifier is a built-in classifier reporting category for each of words.
func keywordClassifier(name, category string, words ...string) *v1alpha1.Classifier {
	return &v1alpha1.Classifier{TypeMeta: typeMeta("Classifier"), ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{
			Keywords: []v1alpha1.KeywordRule{{Category: category, Words: words}},
		}}}
}

// piiClassifier is the built-in PII pack (credit cards among them).
func piiClassifier(name string) *v1alpha1.Classifier {
	return &v1alpha1.Classifier{TypeMeta: typeMeta("Classifier"), ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII}}}}
}

// webhookClassifier is a remote webhook classifier scoring categories, with a 2s
// timeout and no retries; credentialsEnv, when set, names the variable holding its token.
func webhookClassifier(name, url, credentialsEnv string, categories ...string) *v1alpha1.Classifier {
	c := &v1alpha1.Classifier{TypeMeta: typeMeta("Classifier"), ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClassifierSpec{
			Webhook: &v1alpha1.WebhookBackend{URL: url},
			Timeout: &spec.Duration{Duration: 2 * time.Second},
			Retries: ptr[int32](0),
		}}
	for _, id := range categories {
		c.Spec.Categories = append(c.Spec.Categories, v1alpha1.Category{ID: id})
	}
	if credentialsEnv != "" {
		c.Annotations = map[string]string{"guardrail.dev/credentials-env": credentialsEnv}
		c.Spec.CredentialsSecretRef = &v1alpha1.SecretKeyReference{Name: "unused-standalone"}
	}
	return c
}

type guardrailOpt func(*v1alpha1.Guardrail)

// guardrail is an Enforce guardrail on classifier: Block at threshold 0.5, with the
// reason "<name> says no", on the phases given by an option (default Input and Output).
func guardrail(name, classifier string, opts ...guardrailOpt) *v1alpha1.Guardrail {
	g := &v1alpha1.Guardrail{TypeMeta: typeMeta("Guardrail"), ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GuardrailSpec{
			Mode: v1alpha1.ModeEnforce, ClassifierRef: v1alpha1.LocalObjectReference{Name: classifier},
			Threshold: ptr(v1alpha1.Score(0.5)), Action: v1alpha1.ActionBlock, Reason: name + " says no",
		}}
	for _, o := range opts {
		o(g)
	}
	return g
}

func phases(ps ...v1alpha1.Phase) guardrailOpt {
	return func(g *v1alpha1.Guardrail) { g.Spec.Phases = ps }
}

func action(a v1alpha1.Action) guardrailOpt {
	return func(g *v1alpha1.Guardrail) { g.Spec.Action = a }
}

func reason(r string) guardrailOpt {
	return func(g *v1alpha1.Guardrail) { g.Spec.Reason = r }
}

// streaming sets the cadence (0: every delta) and the hold-back in characters.
func streaming(every, holdBack int) guardrailOpt {
	return func(g *v1alpha1.Guardrail) {
		g.Spec.Streaming = &v1alpha1.StreamingSpec{
			EvaluateEveryChars: ptr(int32(every)),
			HoldBackChars:      ptr(spec.FromInt32(int32(holdBack))),
		}
	}
}

// timeout bounds each evaluation of the guardrail.
func timeout(d time.Duration) guardrailOpt {
	return func(g *v1alpha1.Guardrail) { g.Spec.Timeout = &spec.Duration{Duration: d} }
}

// policyFile writes objects as a multi-document YAML stream.
func policyFile(t *testing.T, objects ...any) string {
	t.Helper()
	docs := make([]string, 0, len(objects))
	for _, o := range objects {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n")
}

func ptr[T any](v T) *T { return &v }
