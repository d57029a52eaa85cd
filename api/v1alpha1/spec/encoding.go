package spec

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// Duration is a time.Duration that reads and writes JSON as a Go duration string such as
// 1m30s: the wire form of apimachinery's metav1.Duration, so objects stored by earlier
// versions of the operator decode unchanged.
// +kubebuilder:validation:Type=string
type Duration struct {
	time.Duration
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a duration string, as time.ParseDuration parses it.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = parsed
	return nil
}

// IntOrStringType says which value of an IntOrString is set.
type IntOrStringType int64

// IntOrString types.
const (
	// Int: IntVal is set.
	Int IntOrStringType = iota
	// String: StrVal is set.
	String
)

// IntOrString is an integer or a string, in JSON a number or a string: the wire form of
// apimachinery's intstr.IntOrString. A field of this type carries the markers
// +kubebuilder:validation:Schemaless and +kubebuilder:validation:XIntOrString, which give
// it the schema controller-gen gives intstr.IntOrString.
type IntOrString struct {
	Type   IntOrStringType `json:"-"`
	IntVal int32           `json:"-"`
	StrVal string          `json:"-"`
}

// FromInt32 returns an IntOrString holding v.
func FromInt32(v int32) IntOrString { return IntOrString{Type: Int, IntVal: v} }

// FromString returns an IntOrString holding v.
func FromString(v string) IntOrString { return IntOrString{Type: String, StrVal: v} }

// String is the string, or the integer in decimal.
func (v *IntOrString) String() string {
	if v == nil {
		return "<nil>"
	}
	if v.Type == String {
		return v.StrVal
	}
	return strconv.Itoa(int(v.IntVal))
}

// MarshalJSON writes a number or a string.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	switch v.Type {
	case Int:
		return json.Marshal(v.IntVal)
	case String:
		return json.Marshal(v.StrVal)
	}
	return nil, errors.New("IntOrString: neither an integer nor a string")
}

// UnmarshalJSON reads a string when the JSON is one, else a 32-bit integer.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.Type = String
		return json.Unmarshal(b, &v.StrVal)
	}
	v.Type = Int
	return json.Unmarshal(b, &v.IntVal)
}
