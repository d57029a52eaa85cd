// Package field names the offending fields of a policy object in compile errors. It is the
// guard's own form of the part of k8s.io/apimachinery/pkg/util/validation/field the
// compiler uses — paths, the six error constructors and the aggregate message — so that
// the guard links no apimachinery package while the operator shows, in status conditions,
// the very messages it showed when the compiler used apimachinery's package: a
// differential test holds every constructor, value type and list length to apimachinery's
// output byte for byte.
package field

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Path is the path of a field: names joined by dots, indices and map keys in brackets
// (spec.rules[name].expression). Its methods accept a nil *Path as the empty path.
type Path struct {
	// name of the field, or "" when this element is a subscript.
	name string
	// subscript (an index or a map key) of the parent when name is "".
	subscript string
	parent    *Path
}

// NewPath returns the path of name followed by more names.
func NewPath(name string, more ...string) *Path {
	p := &Path{name: name}
	for _, n := range more {
		p = &Path{name: n, parent: p}
	}
	return p
}

// Child returns p followed by name and more names.
func (p *Path) Child(name string, more ...string) *Path {
	c := &Path{name: name, parent: p}
	for _, n := range more {
		c = &Path{name: n, parent: c}
	}
	return c
}

// Index returns p subscripted by index i.
func (p *Path) Index(i int) *Path { return &Path{subscript: strconv.Itoa(i), parent: p} }

// Key returns p subscripted by a map key, printed as is.
func (p *Path) Key(key string) *Path { return &Path{subscript: key, parent: p} }

// String returns the path as written in messages; a nil path prints as <nil>.
func (p *Path) String() string {
	if p == nil {
		return "<nil>"
	}
	var elems []*Path
	for e := p; e != nil; e = e.parent {
		elems = append(elems, e)
	}
	var b strings.Builder
	for i := len(elems) - 1; i >= 0; i-- {
		e := elems[i]
		switch {
		case e.name == "":
			// An element without a name is a subscript, even a Child("") one.
			b.WriteString("[" + e.subscript + "]")
		case e.parent != nil:
			b.WriteString("." + e.name)
		default:
			b.WriteString(e.name)
		}
	}
	return b.String()
}

// ErrorType is the kind of a field error. The values are apimachinery's.
type ErrorType string

// Error types.
const (
	ErrorTypeNotFound     ErrorType = "FieldValueNotFound"
	ErrorTypeRequired     ErrorType = "FieldValueRequired"
	ErrorTypeDuplicate    ErrorType = "FieldValueDuplicate"
	ErrorTypeInvalid      ErrorType = "FieldValueInvalid"
	ErrorTypeNotSupported ErrorType = "FieldValueNotSupported"
	ErrorTypeForbidden    ErrorType = "FieldValueForbidden"
)

// String is the type as it reads in a message.
func (t ErrorType) String() string {
	switch t {
	case ErrorTypeNotFound:
		return "Not found"
	case ErrorTypeRequired:
		return "Required value"
	case ErrorTypeDuplicate:
		return "Duplicate value"
	case ErrorTypeInvalid:
		return "Invalid value"
	case ErrorTypeNotSupported:
		return "Unsupported value"
	case ErrorTypeForbidden:
		return "Forbidden"
	}
	return fmt.Sprintf("<unknown error %q>", string(t))
}

// OmitValueType is the value of an error whose message leaves the value out.
type OmitValueType struct{}

// Error is one field error.
type Error struct {
	Type ErrorType
	// Field is the path of the field.
	Field string
	// BadValue is the offending value (OmitValueType{} to leave it out of the message).
	BadValue any
	// Detail says what is wrong, or is empty.
	Detail string
}

// Error returns "<field>: <body>".
func (e *Error) Error() string { return e.Field + ": " + e.ErrorBody() }

// ErrorBody is the message without the field: the type, the value for the types that
// carry one, and the detail.
func (e *Error) ErrorBody() string {
	s := e.Type.String()
	switch e.Type {
	case ErrorTypeInvalid, ErrorTypeNotSupported, ErrorTypeNotFound, ErrorTypeDuplicate:
		if _, omit := e.BadValue.(OmitValueType); !omit {
			s += ": " + formatValue(e.BadValue)
		}
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// formatValue prints a value as apimachinery does: sized numbers and booleans plainly, a
// string quoted by Go, anything else (int, named string types, slices) as JSON.
func formatValue(v any) string {
	switch v := v.(type) {
	case int64, int32, float64, float32, bool:
		return fmt.Sprint(v)
	case string:
		return strconv.Quote(v)
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%#v", v)
}

// Invalid is a value that is wrong.
func Invalid(p *Path, value any, detail string) *Error {
	return &Error{Type: ErrorTypeInvalid, Field: p.String(), BadValue: value, Detail: detail}
}

// Required is a missing value.
func Required(p *Path, detail string) *Error {
	return &Error{Type: ErrorTypeRequired, Field: p.String(), BadValue: "", Detail: detail}
}

// Forbidden is a value that must not be set.
func Forbidden(p *Path, detail string) *Error {
	return &Error{Type: ErrorTypeForbidden, Field: p.String(), BadValue: "", Detail: detail}
}

// NotFound is a reference to something that does not exist.
func NotFound(p *Path, value any) *Error {
	return &Error{Type: ErrorTypeNotFound, Field: p.String(), BadValue: value}
}

// Duplicate is a value that must be unique and is not.
func Duplicate(p *Path, value any) *Error {
	return &Error{Type: ErrorTypeDuplicate, Field: p.String(), BadValue: value}
}

// NotSupported is a value outside an enumeration; valid lists the supported values.
func NotSupported[T ~string](p *Path, value any, valid []T) *Error {
	detail := ""
	if len(valid) > 0 {
		quoted := make([]string, len(valid))
		for i, v := range valid {
			quoted[i] = strconv.Quote(fmt.Sprint(v))
		}
		detail = "supported values: " + strings.Join(quoted, ", ")
	}
	return &Error{Type: ErrorTypeNotSupported, Field: p.String(), BadValue: value, Detail: detail}
}

// ErrorList is a list of field errors.
type ErrorList []*Error

// ToAggregate returns the list as one error, or nil when it is empty. Errors with the same
// message count once; one error prints as itself, several as "[first, second]".
func (list ErrorList) ToAggregate() error {
	var msgs []string
	seen := map[string]bool{}
	for _, e := range list {
		if e == nil {
			continue
		}
		m := e.Error()
		if seen[m] {
			continue
		}
		seen[m] = true
		msgs = append(msgs, m)
	}
	switch len(msgs) {
	case 0:
		return nil
	case 1:
		return aggregate(msgs[0])
	}
	return aggregate("[" + strings.Join(msgs, ", ") + "]")
}

// aggregate is the message of a list of field errors.
type aggregate string

func (a aggregate) Error() string { return string(a) }
