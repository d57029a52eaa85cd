package policykube

import (
	"bytes"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// The guard reads an API object as the apiserver or `kubectl get -o json` writes it,
// metadata it does not use and status included, into exactly what the operator sends it:
// the same metadata it reads and the same spec, every field of it.
func TestTheGuardReadsWhatTheAPIWrites(t *testing.T) {
	f := randfill.NewWithSeed(7).NilChance(0.2).NumElements(0, 3).Funcs(
		func(fs *metav1.FieldsV1, c randfill.Continue) { fs.SetRawBytes([]byte(`{"f:spec":{}}`)) },
		func(v *spec.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = spec.FromInt32(c.Int31())
			} else {
				*v = spec.FromString(c.String(0))
			}
		},
	)
	check := func(obj, sent any, read func([]byte) (any, error)) {
		t.Helper()
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		got, err := read(b)
		if err != nil {
			t.Fatalf("the guard refused the API's JSON: %v\n%s", err, b)
		}
		ja, _ := json.Marshal(got)
		jb, _ := json.Marshal(sent)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("read differs from sent:\n %s\n %s", ja, jb)
		}
	}
	for range 200 {
		var c api.Classifier
		f.Fill(&c)
		sent := Classifier(&c)
		sent.APIVersion, sent.Kind, sent.Annotations = c.APIVersion, c.Kind, c.Annotations // annotations are read from files, not sent
		check(&c, sent, func(b []byte) (any, error) {
			var o policy.ClassifierObject
			return o, json.Unmarshal(b, &o)
		})
		var g api.Guardrail
		f.Fill(&g)
		sentG := Guardrail(&g)
		sentG.APIVersion, sentG.Kind, sentG.Annotations = g.APIVersion, g.Kind, g.Annotations
		check(&g, sentG, func(b []byte) (any, error) {
			var o policy.GuardrailObject
			return o, json.Unmarshal(b, &o)
		})
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
