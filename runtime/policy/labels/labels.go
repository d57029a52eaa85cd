// Package labels validates the label selector of a Guardrail and matches it against a
// pod's labels, with the rules and the messages of apimachinery's
// metav1validation.ValidateLabelSelector, metav1.LabelSelectorAsSelector and
// labels.ConvertSelectorToLabelsMap, which the guard does not link. Differential tests
// hold each to apimachinery's results and messages.
//
// One deliberate difference: apimachinery walks matchLabels in Go's random map order, so
// several invalid entries were reported in a different order from one call to the next;
// here they are reported in key order, one of those orders, always the same.
package labels

import (
	"fmt"
	"slices"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/field"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/validation"
)

// Set is a pod's labels.
type Set map[string]string

// ParseSet reads labels written k=v,k2=v2 (the guard's --pod-labels), as
// labels.ConvertSelectorToLabelsMap does: keys and values are trimmed and validated; an
// empty string is no labels.
func ParseSet(s string) (Set, error) {
	set := Set{}
	if s == "" {
		return set, nil
	}
	for _, pair := range strings.Split(s, ",") {
		kv := strings.Split(pair, "=")
		if len(kv) != 2 {
			return set, fmt.Errorf("invalid selector: %s", kv)
		}
		key := strings.TrimSpace(kv[0])
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			// apimachinery names no field here: its path is nil.
			return set, field.Invalid(nil, key, strings.Join(msgs, "; "))
		}
		value := strings.TrimSpace(kv[1])
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return set, field.Invalid((*field.Path)(nil).Key(key), value, strings.Join(msgs, "; "))
		}
		set[key] = value
	}
	return set, nil
}

// Validate checks a selector as metav1validation.ValidateLabelSelector does with default
// options: label keys and values, operators, and the values each operator takes. p is the
// selector's path. A nil selector is valid.
func Validate(sel *spec.LabelSelector, p *field.Path) field.ErrorList {
	if sel == nil {
		return nil
	}
	var errs field.ErrorList
	ml := p.Child("matchLabels")
	for _, k := range sortedKeys(sel.MatchLabels) {
		errs = append(errs, invalidEach(ml, k, validation.IsQualifiedName(k))...)
		v := string(sel.MatchLabels[k])
		errs = append(errs, invalidEach(ml, v, validation.IsValidLabelValue(v))...)
	}
	for i, e := range sel.MatchExpressions {
		ep := p.Child("matchExpressions").Index(i)
		switch e.Operator {
		case spec.LabelSelectorOpIn, spec.LabelSelectorOpNotIn:
			if len(e.Values) == 0 {
				errs = append(errs, field.Required(ep.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case spec.LabelSelectorOpExists, spec.LabelSelectorOpDoesNotExist:
			if len(e.Values) > 0 {
				errs = append(errs, field.Forbidden(ep.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		default:
			errs = append(errs, field.Invalid(ep.Child("operator"), e.Operator, "not a valid selector operator"))
		}
		errs = append(errs, invalidEach(ep.Child("key"), e.Key, validation.IsQualifiedName(e.Key))...)
		for j, v := range e.Values {
			errs = append(errs, invalidEach(ep.Child("values").Index(j), string(v), validation.IsValidLabelValue(string(v)))...)
		}
	}
	return errs
}

// invalidEach is one Invalid error per message.
func invalidEach(p *field.Path, value string, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(p, value, m))
	}
	return errs
}

func sortedKeys(m map[string]spec.LabelValue) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Selector is a parsed label selector.
type Selector struct {
	// nothing is the selector of a nil LabelSelector: it matches no pod.
	nothing bool
	reqs    []requirement
}

type requirement struct {
	key    string
	op     spec.LabelSelectorOperator // matchLabels entries are In with one value
	values []string
}

// SelectorFrom parses a selector as metav1.LabelSelectorAsSelector does: nil matches
// nothing, an empty selector everything. What Validate accepts always parses; the errors
// are apimachinery's, for a selector that was not validated.
func SelectorFrom(sel *spec.LabelSelector) (Selector, error) {
	if sel == nil {
		return Selector{nothing: true}, nil
	}
	var s Selector
	for _, k := range sortedKeys(sel.MatchLabels) {
		v := string(sel.MatchLabels[k])
		if err := checkRequirement(k, spec.LabelSelectorOpIn, []string{v}, true); err != nil {
			return Selector{}, err
		}
		s.reqs = append(s.reqs, requirement{key: k, op: spec.LabelSelectorOpIn, values: []string{v}})
	}
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case spec.LabelSelectorOpIn, spec.LabelSelectorOpNotIn, spec.LabelSelectorOpExists, spec.LabelSelectorOpDoesNotExist:
		default:
			return Selector{}, fmt.Errorf("%q is not a valid label selector operator", e.Operator)
		}
		values := make([]string, len(e.Values))
		for i, v := range e.Values {
			values[i] = string(v)
		}
		if len(values) == 0 {
			values = nil
		}
		if err := checkRequirement(e.Key, e.Operator, values, false); err != nil {
			return Selector{}, err
		}
		s.reqs = append(s.reqs, requirement{key: e.Key, op: e.Operator, values: values})
	}
	return s, nil
}

// checkRequirement validates one requirement as labels.NewRequirement does (its paths
// are relative: key, values[i][key]).
func checkRequirement(key string, op spec.LabelSelectorOperator, values []string, equals bool) error {
	var errs field.ErrorList
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("key"), key, strings.Join(msgs, "; ")))
	}
	vp := field.NewPath("values")
	switch {
	case equals:
		// matchLabels: always one value.
	case op == spec.LabelSelectorOpIn || op == spec.LabelSelectorOpNotIn:
		if len(values) == 0 {
			errs = append(errs, field.Invalid(vp, values, "for 'in', 'notin' operators, values set can't be empty"))
		}
	default:
		if len(values) != 0 {
			errs = append(errs, field.Invalid(vp, values, "values set must be empty for exists and does not exist"))
		}
	}
	for i, v := range values {
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vp.Index(i).Key(key), v, strings.Join(msgs, "; ")))
		}
	}
	return errs.ToAggregate()
}

// Matches reports whether labels meet every requirement of the selector.
func (s Selector) Matches(labels Set) bool {
	if s.nothing {
		return false
	}
	for _, r := range s.reqs {
		v, has := labels[r.key]
		switch r.op {
		case spec.LabelSelectorOpIn:
			if !has || !slices.Contains(r.values, v) {
				return false
			}
		case spec.LabelSelectorOpNotIn:
			if has && slices.Contains(r.values, v) {
				return false
			}
		case spec.LabelSelectorOpExists:
			if !has {
				return false
			}
		case spec.LabelSelectorOpDoesNotExist:
			if has {
				return false
			}
		}
	}
	return true
}
