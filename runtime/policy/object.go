package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// Object is a Classifier or a Guardrail as the compiler reads it: the envelope of the API
// object (apiVersion, kind, the metadata the guard uses) around its spec, which is the
// API's own type (api/v1alpha1/spec). The guard decodes policy files and control-plane
// snapshots into Objects; the operator builds them from its api/v1alpha1 objects
// (internal/policykube). Status is the operator's and is never read.
//
// Decoding is strict on the spec and only there: an unknown or misspelled field of the
// spec is refused (the guard must not silently ignore a rule it does not know, from a
// file as from a newer operator), an unknown top-level field is refused too, while the
// metadata keeps only what the guard reads (labels, managedFields and the other fields
// `kubectl get -o yaml` prints are accepted and dropped) and status is skipped.
type Object[S any] struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	ObjectMeta `json:"metadata"`
	Spec       S `json:"spec"`
}

// ClassifierObject is a Classifier.
type ClassifierObject = Object[spec.ClassifierSpec]

// GuardrailObject is a Guardrail.
type GuardrailObject = Object[spec.GuardrailSpec]

// ObjectMeta is the metadata the guard reads of an object.
type ObjectMeta struct {
	Name       string `json:"name,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	UID        string `json:"uid,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	// Annotations carry the guard's standalone settings (the credentials-env annotation of
	// a Classifier in a policy file); the operator does not send them.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Key returns namespace/name.
func (m *ObjectMeta) Key() string { return Key(m.Namespace, m.Name) }

// UnmarshalJSON decodes the envelope, strictly on the spec (see Object).
func (o *Object[S]) UnmarshalJSON(b []byte) error {
	var env struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   json.RawMessage `json:"metadata"`
		Spec       json.RawMessage `json:"spec"`
		Status     json.RawMessage `json:"status"` // the operator's: skipped
	}
	if err := strict(b, &env); err != nil {
		return err
	}
	var out Object[S]
	out.APIVersion, out.Kind = env.APIVersion, env.Kind
	if len(env.Metadata) > 0 {
		if err := json.Unmarshal(env.Metadata, &out.ObjectMeta); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
	}
	if len(env.Spec) > 0 {
		if err := strict(env.Spec, &out.Spec); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
	}
	*o = out
	return nil
}

// strict decodes one JSON value into v, refusing unknown fields and trailing data.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
