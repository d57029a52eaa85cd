package spec_test

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// Objects stored while the specs held apimachinery's Duration and IntOrString must decode
// into the spec's own types, and the operator's writes must read back there: both ways,
// the same JSON gives the same value or the same refusal.
func TestDurationHasTheWireFormOfMetav1Duration(t *testing.T) {
	for _, in := range []string{`"1m30s"`, `"500ms"`, `"0s"`, `"-2h"`, `"1.5h"`, `"3 seconds"`, `""`, `12`, `"9999999999h"`, `true`} {
		var theirs metav1.Duration
		var ours spec.Duration
		errTheirs := json.Unmarshal([]byte(in), &theirs)
		errOurs := json.Unmarshal([]byte(in), &ours)
		if (errTheirs == nil) != (errOurs == nil) {
			t.Errorf("%s: metav1.Duration error %v, spec.Duration error %v", in, errTheirs, errOurs)
			continue
		}
		if errOurs != nil {
			continue
		}
		if ours.Duration != theirs.Duration {
			t.Errorf("%s: decoded %v, metav1.Duration %v", in, ours.Duration, theirs.Duration)
		}
		a, _ := json.Marshal(ours)
		b, _ := json.Marshal(theirs)
		if string(a) != string(b) {
			t.Errorf("%s: encodes as %s, metav1.Duration as %s", in, a, b)
		}
	}
}

func TestIntOrStringHasTheWireFormOfIntstr(t *testing.T) {
	for _, in := range []string{`0`, `300`, `-1`, `2147483647`, `2147483648`, `"Unbounded"`, `"300"`, `""`, `1.5`, `true`, `{}`} {
		var theirs intstr.IntOrString
		var ours spec.IntOrString
		errTheirs := json.Unmarshal([]byte(in), &theirs)
		errOurs := json.Unmarshal([]byte(in), &ours)
		if (errTheirs == nil) != (errOurs == nil) {
			t.Errorf("%s: intstr error %v, spec error %v", in, errTheirs, errOurs)
			continue
		}
		if errOurs != nil {
			continue
		}
		if int64(ours.Type) != int64(theirs.Type) || ours.IntVal != theirs.IntVal || ours.StrVal != theirs.StrVal {
			t.Errorf("%s: decoded %+v, intstr %+v", in, ours, theirs)
		}
		a, _ := json.Marshal(ours)
		b, _ := json.Marshal(theirs)
		if string(a) != string(b) || ours.String() != theirs.String() {
			t.Errorf("%s: encodes as %s (%s), intstr as %s (%s)", in, a, ours.String(), b, theirs.String())
		}
	}
	if _, err := json.Marshal(spec.IntOrString{Type: 7}); err == nil {
		t.Error("an IntOrString of neither type encoded without an error")
	}
}
