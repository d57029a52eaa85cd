package kube

import (
	"bytes"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Converted objects carry all of the API objects: their JSON is the API's.
func TestConversionKeepsEveryField(t *testing.T) {
	f := randfill.NewWithSeed(7).NilChance(0.2).NumElements(0, 3).Funcs(
		func(fs *metav1.FieldsV1, c randfill.Continue) { fs.SetRawBytes([]byte(`{"f:spec":{}}`)) },
	)
	same := func(a, b any) {
		t.Helper()
		ja, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		jb, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ja, jb) {
			t.Fatalf("converted JSON differs:\n %s\n %s", ja, jb)
		}
	}
	for range 200 {
		var c api.Classifier
		f.Fill(&c)
		same(&c, Classifier(&c))
		var g api.Guardrail
		f.Fill(&g)
		same(&g, Guardrail(&g))
	}
}

// The compile helpers compile the converted objects: the same results and messages.
func TestCompileHelpers(t *testing.T) {
	one := api.Score(1)
	c := &api.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pii", Generation: 2},
		Spec: api.ClassifierSpec{Builtin: &api.BuiltinBackend{Packs: []api.BuiltinPack{api.PackPII}}}}
	cc, err := CompileClassifier(c, "")
	if err != nil || cc.Key != "ns/pii" || cc.Generation != 2 || len(cc.Categories) == 0 {
		t.Fatalf("CompileClassifier = %+v, %v", cc, err)
	}
	g := &api.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"},
		Spec: api.GuardrailSpec{Mode: "Sometimes", ClassifierRef: api.LocalObjectReference{Name: "pii"},
			Threshold: &one, Action: api.ActionRedact, Reason: "no",
			Selector: &api.LabelSelector{MatchLabels: map[string]api.LabelValue{"tier": "bad value"}}}}
	_, err = CompileGuardrail(g, cc)
	perr, ok := err.(*policy.Error)
	const want = `[spec.mode: Unsupported value: "Sometimes": supported values: "Enforce", "Report", ` +
		`spec.selector.matchLabels: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]`
	if !ok || perr.Reason != api.ReasonInvalidSpec || perr.Message() != want {
		t.Fatalf("CompileGuardrail error = %#v\n want %s", err, want)
	}
}
