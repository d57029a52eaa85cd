package labels

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	k8sfield "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/field"
)

// toMeta is the selector as apimachinery's type, as the operator converts it.
var toMeta = v1alpha1.LabelSelectorToMetaV1

var (
	keys   = []string{"tier", "app.kubernetes.io/name", "Bad Key", "", "a/b/c", "-x", "example.com/", "x/" + strings.Repeat("a", 64)}
	values = []spec.LabelValue{"web", "", "db", "bad value", "-v", "v.v_v-v"}
	ops    = []spec.LabelSelectorOperator{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "in", ""}
)

// selectors returns hand-written selectors and random ones drawn from the pools above.
func selectors() []*spec.LabelSelector {
	req := func(k string, op spec.LabelSelectorOperator, vs ...spec.LabelValue) spec.LabelSelectorRequirement {
		return spec.LabelSelectorRequirement{Key: k, Operator: op, Values: vs}
	}
	sels := []*spec.LabelSelector{
		nil, {}, {MatchLabels: map[string]spec.LabelValue{}},
		{MatchLabels: map[string]spec.LabelValue{"tier": "web"}},
		{MatchLabels: map[string]spec.LabelValue{"tier": "web", "app.kubernetes.io/name": "shop"}},
		{MatchLabels: map[string]spec.LabelValue{"Bad Key": "web"}},
		{MatchLabels: map[string]spec.LabelValue{"tier": "bad value"}},
		{MatchLabels: map[string]spec.LabelValue{"Bad Key": "bad value"}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("tier", "In")}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("tier", "In", "web", "db")}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("tier", "NotIn", "web")}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("tier", "Exists")}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("tier", "Exists", "web")}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("tier", "DoesNotExist")}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("tier", "Gt", "1")}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("Bad Key", "In", "bad value", "-v")}},
		{MatchExpressions: []spec.LabelSelectorRequirement{req("", "Exists"), req("a/b/c", "NotIn")}},
		{MatchLabels: map[string]spec.LabelValue{"tier": "web"},
			MatchExpressions: []spec.LabelSelectorRequirement{req("tier", "NotIn", "db"), req("env", "DoesNotExist")}},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		s := &spec.LabelSelector{}
		if r.IntN(2) == 0 {
			s.MatchLabels = map[string]spec.LabelValue{}
			// At most one entry, so that apimachinery's map order does not matter.
			if r.IntN(3) > 0 {
				s.MatchLabels[keys[r.IntN(len(keys))]] = values[r.IntN(len(values))]
			}
		}
		for range r.IntN(3) {
			e := req(keys[r.IntN(len(keys))], ops[r.IntN(len(ops))])
			for range r.IntN(3) {
				e.Values = append(e.Values, values[r.IntN(len(values))])
			}
			s.MatchExpressions = append(s.MatchExpressions, e)
		}
		sels = append(sels, s)
	}
	return sels
}

var podLabelSets = []Set{
	nil, {}, {"tier": "web"}, {"tier": "db"}, {"tier": ""}, {"env": "prod"}, {"tier": "web", "env": "prod"},
	{"app.kubernetes.io/name": "shop", "tier": "web"}, {"Bad Key": "web"},
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func messages[E interface{ Error() string }](errs []E) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}

// Validate, SelectorFrom and Matches agree with ValidateLabelSelector,
// LabelSelectorAsSelector and Selector.Matches: the same errors, in the same order (at
// most one matchLabels entry), and the same matches.
func TestSelectorsMatchApimachinery(t *testing.T) {
	valid := 0
	for _, sel := range selectors() {
		meta := toMeta(sel)
		ours := Validate(sel, field.NewPath("spec", "selector"))
		theirs := metav1validation.ValidateLabelSelector(meta, metav1validation.LabelSelectorValidationOptions{}, k8sfield.NewPath("spec", "selector"))
		if len(ours) != len(theirs) || errString(ours.ToAggregate()) != errString(theirs.ToAggregate()) {
			t.Errorf("Validate(%+v):\n ours   %v\n theirs %v", sel, ours.ToAggregate(), theirs.ToAggregate())
		}
		os, oerr := SelectorFrom(sel)
		ts, terr := metav1.LabelSelectorAsSelector(meta)
		if errString(oerr) != errString(terr) {
			t.Errorf("SelectorFrom(%+v):\n ours   %v\n theirs %v", sel, oerr, terr)
			continue
		}
		if len(ours) == 0 && oerr != nil {
			t.Errorf("%+v validates but does not parse: %v", sel, oerr)
		}
		if oerr != nil {
			continue
		}
		valid++
		for _, set := range podLabelSets {
			if o, th := os.Matches(set), ts.Matches(k8slabels.Set(set)); o != th {
				t.Errorf("%+v matches %v: ours %v, theirs %v", sel, set, o, th)
			}
		}
	}
	if valid < 100 {
		t.Errorf("only %d selectors parse", valid)
	}
}

// With several invalid matchLabels entries, the errors are apimachinery's, in key order.
func TestSeveralInvalidMatchLabels(t *testing.T) {
	sel := &spec.LabelSelector{MatchLabels: map[string]spec.LabelValue{"Bad Key": "web", "tier": "bad value", "-x": "-v"}}
	ours := Validate(sel, field.NewPath("spec", "selector"))
	theirs := metav1validation.ValidateLabelSelector(toMeta(sel), metav1validation.LabelSelectorValidationOptions{}, k8sfield.NewPath("spec", "selector"))
	if !reflect.DeepEqual(messages(ours), messages(theirs)) {
		t.Errorf("ours %v\ntheirs %v", messages(ours), messages(theirs))
	}
	again := Validate(sel, field.NewPath("spec", "selector"))
	for range 20 {
		if errString(again.ToAggregate()) != errString(ours.ToAggregate()) {
			t.Fatal("the order changes between calls")
		}
	}
}

// ParseSet reads --pod-labels as ConvertSelectorToLabelsMap does.
func TestParseSetMatchesApimachinery(t *testing.T) {
	for _, s := range []string{
		"", "tier=web", "tier=web,env=prod", " tier = web , env=prod ", "tier=", "tier", "tier==web", "a=b=c",
		"tier=web,", ",", "Bad Key=web", "tier=bad value", "app.kubernetes.io/name=shop", "a/b/c=d", "=web",
		"tier=web,tier=db", "tier=-v", "x/y=z,Bad=",
	} {
		ours, oerr := ParseSet(s)
		theirs, terr := k8slabels.ConvertSelectorToLabelsMap(s)
		if errString(oerr) != errString(terr) || !reflect.DeepEqual(map[string]string(ours), map[string]string(theirs)) {
			t.Errorf("ParseSet(%q):\n ours   %v %v\n theirs %v %v", s, ours, oerr, theirs, terr)
		}
	}
}
