// Package intstr is the guard's copy of k8s.io/apimachinery/pkg/util/intstr's IntOrString:
// an integer or a string, with the same JSON.
package intstr

import (
	"encoding/json"
	"errors"
	"strconv"
)

// Type says which of an IntOrString's values is set.
type Type int64

// IntOrString types.
const (
	Int    Type = iota // IntVal is set.
	String             // StrVal is set.
)

// IntOrString is an integer or a string, in JSON a number or a string.
type IntOrString struct {
	Type   Type
	IntVal int32
	StrVal string
}

// FromInt32 returns an IntOrString holding an integer.
func FromInt32(v int32) IntOrString { return IntOrString{Type: Int, IntVal: v} }

// FromString returns an IntOrString holding a string.
func FromString(v string) IntOrString { return IntOrString{Type: String, StrVal: v} }

// String is the string, or the integer in decimal; "<nil>" for a nil pointer.
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
	return []byte{}, errors.New("impossible IntOrString.Type")
}

// UnmarshalJSON reads a string when the JSON is one, else a 32-bit integer.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if b[0] == '"' {
		v.Type = String
		return json.Unmarshal(b, &v.StrVal)
	}
	v.Type = Int
	return json.Unmarshal(b, &v.IntVal)
}
