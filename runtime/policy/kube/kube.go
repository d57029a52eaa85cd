// Package kube is the operator's side of the policy compiler: it converts the operator's
// API objects (api/v1alpha1, built on apimachinery) into the guard's copy of them
// (runtime/policy/v1alpha1), which policy.Compile and the control-plane snapshot take. The
// guard never links this package, so it links no apimachinery package.
//
// The conversion is a JSON round trip: the copy has exactly the API's JSON, every field
// included (runtime/policy/v1alpha1's tests hold it to that), so the round trip loses
// nothing and needs no upkeep when a field is added to both.
package kube

import (
	"encoding/json"
	"fmt"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/v1alpha1"
)

// Classifier returns the guard's copy of c.
func Classifier(c *api.Classifier) v1alpha1.Classifier {
	var out v1alpha1.Classifier
	convert(c, &out)
	return out
}

// Guardrail returns the guard's copy of g.
func Guardrail(g *api.Guardrail) v1alpha1.Guardrail {
	var out v1alpha1.Guardrail
	convert(g, &out)
	return out
}

// CompileClassifier is policy.CompileClassifier of c.
func CompileClassifier(c *api.Classifier, token string) (*policy.Classifier, error) {
	m := Classifier(c)
	return policy.CompileClassifier(&m, token)
}

// CompileGuardrail is policy.CompileGuardrail of g.
func CompileGuardrail(g *api.Guardrail, c *policy.Classifier) (*policy.Guardrail, error) {
	m := Guardrail(g)
	return policy.CompileGuardrail(&m, c)
}

// convert copies from into to through JSON. It cannot fail: every API object marshals, and
// the copy decodes all the JSON the API's types encode (as the tests of both packages
// hold); a failure is a programming error, as in policy's own version hash.
func convert(from, to any) {
	b, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(b, to)
	}
	if err != nil {
		panic(fmt.Sprintf("policy/kube: converting %T: %v", from, err))
	}
}
