package v1alpha1_test

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// The manager's informers decode every stored object into these Go types: a value the
// schema accepts but a Go decoder refuses (a duration "3 seconds", an int32 above 2^31)
// makes the list of the whole kind fail, and no object of that kind in any namespace is
// reconciled until it is deleted. A value the controller parses later (a label selector)
// stalls only its object, but belongs in the schema too: refused at apply time, not
// discovered later. This test walks the API types alongside the generated CRD schemas and
// fails when a field of such a type has no schema rule that refuses what Go cannot use.
func TestSchemaRefusesWhatGoCannotDecode(t *testing.T) {
	for _, kind := range []struct {
		crd string
		obj any
	}{
		{"guardrail.dev_guardrails.yaml", v1alpha1.Guardrail{}},
		{"guardrail.dev_classifiers.yaml", v1alpha1.Classifier{}},
	} {
		t.Run(kind.crd, func(t *testing.T) {
			schema := loadSchema(t, kind.crd)
			w := &walker{t: t, checked: map[string]int{}}
			typ := reflect.TypeOf(kind.obj)
			for _, f := range []string{"Spec", "Status"} {
				sf, _ := typ.FieldByName(f)
				name := jsonName(sf)
				w.walk(name, sf.Type, child(t, schema, "properties", name))
			}
			t.Logf("checked fields: %v", w.checked)
			if w.checked["duration"] == 0 {
				t.Errorf("no metav1.Duration field was found: the walk is broken")
			}
		})
	}
}

// kubectl explain wraps descriptions itself: a hard line break copied from a Go comment
// shows up in the middle of its lines. make manifests rewraps them (hack/crd-descriptions).
func TestDescriptionsHaveNoHardLineBreaks(t *testing.T) {
	for _, file := range []string{"guardrail.dev_guardrails.yaml", "guardrail.dev_classifiers.yaml"} {
		var visit func(path string, v any)
		visit = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, c := range v {
					if d, ok := c.(string); ok && k == "description" {
						lines := strings.Split(d, "\n")
						for i := 0; i+1 < len(lines); i++ {
							if lines[i] != "" && lines[i+1] != "" && !strings.HasPrefix(lines[i+1], "- ") {
								t.Errorf("%s: %s: description breaks a paragraph after %q", file, path, lines[i])
								break
							}
						}
						continue
					}
					visit(path+"."+k, c)
				}
			case []any:
				for _, c := range v {
					visit(path+"[*]", c)
				}
			}
		}
		visit("", loadSchema(t, file))
	}
}

var (
	durationType      = reflect.TypeFor[metav1.Duration]()
	specDurationType  = reflect.TypeFor[spec.Duration]()
	timeType          = reflect.TypeFor[metav1.Time]()
	metaSelectorType  = reflect.TypeFor[metav1.LabelSelector]()
	selectorType      = reflect.TypeFor[v1alpha1.LabelSelector]()
	labelValueType    = reflect.TypeFor[v1alpha1.LabelValue]()
	selectorReqType   = reflect.TypeFor[v1alpha1.LabelSelectorRequirement]()
	intOrStringType   = reflect.TypeFor[intstr.IntOrString]()
	specIntOrString   = reflect.TypeFor[spec.IntOrString]()
	quantityType      = reflect.TypeFor[resource.Quantity]()
	rawExtensionTypes = []string{"k8s.io/apimachinery/pkg/runtime.RawExtension", "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON"}
)

type walker struct {
	t       *testing.T
	checked map[string]int
}

func (w *walker) walk(path string, typ reflect.Type, schema map[string]any) {
	t := w.t
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ {
	case durationType, specDurationType:
		w.checked["duration"]++
		// cel-go's duration() is time.ParseDuration, metav1.Duration's decoder: a rule that
		// calls it, after a pattern that bounds the value (no overflow error), is the check.
		if !hasRule(schema, "self.matches(", "") || schema["maxLength"] == nil {
			t.Errorf("%s is a metav1.Duration without a maxLength and a CEL rule matching the duration syntax: "+
				"add +kubebuilder:validation:XValidation (see spec.timeout)", path)
		}
		if strings.HasPrefix(path, "spec.") && !hasRule(schema, "duration(self) > duration('0s')", "") {
			t.Errorf("%s is a metav1.Duration of the spec without a rule requiring it to be positive", path)
		}
		return
	case timeType:
		w.checked["time"]++
		if schema["format"] != "date-time" {
			t.Errorf("%s is a metav1.Time without format date-time", path)
		}
		return
	case metaSelectorType:
		t.Errorf("%s is a metav1.LabelSelector, whose schema checks neither operators nor keys nor values: "+
			"use v1alpha1.LabelSelector", path)
		return
	case intOrStringType, specIntOrString:
		w.checked["int-or-string"]++
		if schema["x-kubernetes-int-or-string"] != true || !hasRule(schema, "type(self) == string", "") {
			t.Errorf("%s is an IntOrString without a CEL rule for its string and integer forms", path)
		}
		return
	case quantityType:
		w.checked["quantity"]++
		if !hasRule(schema, "isQuantity(self)", "") {
			t.Errorf("%s is a resource.Quantity without an isQuantity(self) rule", path)
		}
		return
	case selectorType:
		w.checked["selector"]++
		labels := child(t, schema, "properties", "matchLabels")
		if !hasRule(labels, "format.qualifiedName()", "") || labels["maxProperties"] == nil {
			t.Errorf("%s.matchLabels checks neither its keys nor its size", path)
		}
	case selectorReqType:
		if !hasRule(schema, "'In', 'NotIn'", ".values") || !hasRule(schema, "'Exists', 'DoesNotExist'", ".values") {
			t.Errorf("%s does not tie values to the operator", path)
		}
		if !hasRule(child(t, schema, "properties", "key"), "format.qualifiedName()", "") {
			t.Errorf("%s.key is not checked as a label key", path)
		}
		if len(enum(child(t, schema, "properties", "operator"))) != 4 {
			t.Errorf("%s.operator is not an enum of In, NotIn, Exists and DoesNotExist", path)
		}
	case labelValueType:
		w.checked["label-value"]++
		if !hasRule(schema, "format.labelValue()", "") {
			t.Errorf("%s is a label value without a format.labelValue() rule", path)
		}
		return
	}
	if slices.Contains(rawExtensionTypes, typ.PkgPath()+"."+typ.Name()) {
		t.Errorf("%s holds free-form JSON that no schema describes", path)
		return
	}

	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name := jsonName(f)
			if name == "" { // inlined
				w.walk(path, f.Type, schema)
				continue
			}
			if name == "-" {
				continue
			}
			w.walk(path+"."+name, f.Type, child(t, schema, "properties", name))
		}
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 { // []byte is base64 in JSON
			w.checked["bytes"]++
			if schema["format"] != "byte" {
				t.Errorf("%s is []byte without format byte", path)
			}
			return
		}
		w.walk(path+"[*]", typ.Elem(), child(t, schema, "items"))
	case reflect.Map:
		w.walk(path+"[*]", typ.Elem(), child(t, schema, "additionalProperties"))
	case reflect.Int32:
		// encoding/json refuses a number outside int32: the schema must bound it.
		w.checked["int32"]++
		lo, hasLo := schema["minimum"].(float64)
		hi, hasHi := schema["maximum"].(float64)
		if !hasLo || lo < math.MinInt32 || (hasHi && hi > math.MaxInt32) {
			t.Errorf("%s is an int32 without a minimum (and a maximum within int32)", path)
		}
		if !hasHi && strings.HasPrefix(path, "spec.") {
			t.Errorf("%s is an int32 of the spec without a maximum", path)
		}
	case reflect.Float32, reflect.Float64:
		if schema["minimum"] == nil || schema["maximum"] == nil {
			if strings.HasPrefix(path, "spec.") {
				t.Errorf("%s is a number of the spec without bounds", path)
			}
		}
	}
}

func loadSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	versions, _ := child(t, crd, "spec")["versions"].([]any)
	if len(versions) != 1 {
		t.Fatalf("%s: want one version, got %d", file, len(versions))
	}
	return child(t, versions[0], "schema", "openAPIV3Schema")
}

// child follows keys through nested maps; it fails the test when one is missing, which
// means the Go types and the generated schema disagree (run make manifests).
func child(t *testing.T, m any, keys ...string) map[string]any {
	t.Helper()
	cur := m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("schema: %q is not an object", k)
		}
		cur, ok = mm[k]
		if !ok {
			t.Fatalf("schema has no %q: is config/crd/bases stale? run make manifests", k)
		}
	}
	out, ok := cur.(map[string]any)
	if !ok {
		t.Fatalf("schema: %v is not an object", keys)
	}
	return out
}

// hasRule reports whether schema has an x-kubernetes-validations rule containing text,
// reported at fieldPath ("" for the node itself).
func hasRule(schema map[string]any, text, fieldPath string) bool {
	rules, _ := schema["x-kubernetes-validations"].([]any)
	for _, r := range rules {
		rule := r.(map[string]any)
		fp, _ := rule["fieldPath"].(string)
		if strings.Contains(rule["rule"].(string), text) && fp == fieldPath {
			return true
		}
	}
	return false
}

func enum(schema map[string]any) []any {
	e, _ := schema["enum"].([]any)
	return e
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	return name
}
