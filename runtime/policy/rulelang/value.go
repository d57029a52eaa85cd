package rulelang

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// kind is a runtime value's type.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt
	kUint
	kDouble
	kString
	kList
	kMap     // a map literal: *mapLit
	kAnswer  // an answer of the activation, by its key in answers (s)
	kAnswers // the answers variable
	kScores  // the scores variable
	kErr
)

var kindNames = [...]string{kNull: "null_type", kBool: "bool", kInt: "int", kUint: "uint", kDouble: "double",
	kString: "string", kList: "list", kMap: "map", kAnswer: "policy.Answer", kAnswers: "map", kScores: "map", kErr: "error"}

// value is a CEL value. Scalars live in n (bool, int64, uint64 and float64 bits) and s; lists,
// map literals and errors in o.
type value struct {
	k kind
	n uint64
	s string
	o any // []value for kList, *mapLit for kMap, error for kErr
}

func boolVal(b bool) value {
	if b {
		return value{k: kBool, n: 1}
	}
	return value{k: kBool}
}
func intVal(i int64) value      { return value{k: kInt, n: uint64(i)} }
func uintVal(u uint64) value    { return value{k: kUint, n: u} }
func doubleVal(f float64) value { return value{k: kDouble, n: math.Float64bits(f)} }
func stringVal(s string) value  { return value{k: kString, s: s} }
func listVal(l []value) value   { return value{k: kList, o: l} }
func errVal(err error) value    { return value{k: kErr, o: err} }

func (v value) b() bool       { return v.n != 0 }
func (v value) i() int64      { return int64(v.n) }
func (v value) f() float64    { return math.Float64frombits(v.n) }
func (v value) list() []value { return v.o.([]value) }
func (v value) err() error    { return v.o.(error) }

var (
	vTrue  = boolVal(true)
	vFalse = boolVal(false)
)

// Runtime errors, worded as cel-go words them.
var (
	errNoOverload    = errors.New("no such overload")
	errIntOverflow   = errors.New("integer overflow")
	errUintOverflow  = errors.New("unsigned integer overflow")
	errDivZero       = errors.New("division by zero")
	errModZero       = errors.New("modulus by zero")
	errNaNOrder      = errors.New("NaN values cannot be ordered")
	errCostExceeded  = errors.New("operation cancelled: actual cost limit exceeded")
	errNotIterable   = errors.New("expected iterable type")
	errNoSuchKey     = errors.New("no such key")
	errNoSuchField   = errors.New("no such field")
	errIndexType     = errors.New("unsupported index type in list")
	errIndexValue    = errors.New("unsupported index value in list")
	errBadRegexp     = errors.New("invalid regular expression in matches()")
	errNotSelectable = errors.New("type does not support field selection")
)

var (
	vNoOverload   = errVal(errNoOverload)
	vIntOverflow  = errVal(errIntOverflow)
	vUintOverflow = errVal(errUintOverflow)
	vDivZero      = errVal(errDivZero)
	vModZero      = errVal(errModZero)
	vCost         = errVal(errCostExceeded)
)

// noOverload is cel-go's error for a function applied to values of types it has no overload
// for; the message names the function and the types, never the values.
func noOverload(fn string, args ...value) value {
	var sb strings.Builder
	sb.WriteString("no such overload: ")
	sb.WriteString(fn)
	sb.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(kindNames[a.k])
	}
	sb.WriteByte(')')
	return errVal(errors.New(sb.String()))
}

// mapLit is a map literal's value. Its keys are strings, ints, uints or bools (Parse refuses
// others); a key repeated in the literal keeps its last value, as cel-go's does.
type mapLit struct {
	keys []value
	vals []value
}

// find looks a key up as cel-go's map of CEL values does (types.refValMapAccessor.Find):
// the key's own type first, then an int, uint or double key finds a numerically equal int or
// uint key (a double only when it converts losslessly).
func (m *mapLit) find(key value) (value, bool) {
	if len(m.keys) == 0 {
		return value{}, false
	}
	if v, ok := m.exact(key); ok {
		return v, true
	}
	switch key.k {
	case kDouble:
		if i, ok := doubleToInt64Lossless(key.f()); ok {
			if v, ok := m.exact(intVal(i)); ok {
				return v, true
			}
		}
		if u, ok := doubleToUint64Lossless(key.f()); ok {
			return m.exact(uintVal(u))
		}
	case kInt:
		if key.i() >= 0 {
			return m.exact(uintVal(key.n))
		}
	case kUint:
		if key.n <= math.MaxInt64 {
			return m.exact(intVal(int64(key.n)))
		}
	}
	return value{}, false
}

func (m *mapLit) exact(key value) (value, bool) {
	for i, k := range m.keys {
		if k.k == key.k && k.n == key.n && k.s == key.s {
			return m.vals[i], true
		}
	}
	return value{}, false
}

func doubleToInt64Checked(f float64) (int64, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) || f <= float64(math.MinInt64) || f >= float64(math.MaxInt64) {
		return 0, false
	}
	return int64(f), true
}

func doubleToUint64Checked(f float64) (uint64, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) || f < 0 || f >= 18446744073709551616.0 {
		return 0, false
	}
	return uint64(f), true
}

func doubleToInt64Lossless(f float64) (int64, bool) {
	i, ok := doubleToInt64Checked(f)
	return i, ok && float64(i) == f
}

func doubleToUint64Lossless(f float64) (uint64, bool) {
	u, ok := doubleToUint64Checked(f)
	return u, ok && float64(u) == f
}

// Numeric comparisons across types, as cel-go's types/compare.go.
func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpDoubleInt(d float64, i int64) int {
	if d < math.MinInt64 {
		return -1
	}
	if d > math.MaxInt64 {
		return 1
	}
	return cmpF(d, float64(i))
}

func cmpDoubleUint(d float64, u uint64) int {
	if d < 0 {
		return -1
	}
	if d > math.MaxUint64 {
		return 1
	}
	return cmpF(d, float64(u))
}

func cmpIntUint(i int64, u uint64) int {
	if i < 0 || u > math.MaxInt64 {
		return -1
	}
	switch c := i - int64(u); {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// compare orders two values as CEL's <, <=, >, >= do (cel-go's Compare of each type); the
// error is errNaNOrder when a NaN is involved and errNoOverload when the types have no order.
func compare(a, b value) (int, error) {
	switch a.k {
	case kInt:
		switch b.k {
		case kInt:
			return cmp3(a.i() < b.i(), a.i() > b.i()), nil
		case kUint:
			return cmpIntUint(a.i(), b.n), nil
		case kDouble:
			if math.IsNaN(b.f()) {
				return 0, errNaNOrder
			}
			return -cmpDoubleInt(b.f(), a.i()), nil
		}
	case kUint:
		switch b.k {
		case kUint:
			return cmp3(a.n < b.n, a.n > b.n), nil
		case kInt:
			return -cmpIntUint(b.i(), a.n), nil
		case kDouble:
			if math.IsNaN(b.f()) {
				return 0, errNaNOrder
			}
			return -cmpDoubleUint(b.f(), a.n), nil
		}
	case kDouble:
		if math.IsNaN(a.f()) {
			return 0, errNaNOrder
		}
		switch b.k {
		case kDouble:
			if math.IsNaN(b.f()) {
				return 0, errNaNOrder
			}
			return cmpF(a.f(), b.f()), nil
		case kInt:
			return cmpDoubleInt(a.f(), b.i()), nil
		case kUint:
			return cmpDoubleUint(a.f(), b.n), nil
		}
	case kString:
		if b.k == kString {
			return strings.Compare(a.s, b.s), nil
		}
	case kBool:
		if b.k == kBool {
			return cmp3(!a.b() && b.b(), a.b() && !b.b()), nil
		}
	}
	return 0, errNoOverload
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// equal is CEL's heterogeneous equality (cel-go's types.Equal): numbers compare across
// types, NaN equals nothing, values of different types are unequal, lists and maps compare
// element by element.
func (c *ctx) equal(a, b value) bool {
	if a.k == kNull || b.k == kNull {
		return a.k == b.k
	}
	switch a.k {
	case kBool:
		return b.k == kBool && a.n == b.n
	case kString:
		return b.k == kString && a.s == b.s
	case kInt:
		switch b.k {
		case kInt:
			return a.n == b.n
		case kUint:
			return cmpIntUint(a.i(), b.n) == 0
		case kDouble:
			return !math.IsNaN(b.f()) && cmpDoubleInt(b.f(), a.i()) == 0
		}
	case kUint:
		switch b.k {
		case kUint:
			return a.n == b.n
		case kInt:
			return cmpIntUint(b.i(), a.n) == 0
		case kDouble:
			return !math.IsNaN(b.f()) && cmpDoubleUint(b.f(), a.n) == 0
		}
	case kDouble:
		if math.IsNaN(a.f()) {
			return false
		}
		switch b.k {
		case kDouble:
			return a.f() == b.f()
		case kInt:
			return cmpDoubleInt(a.f(), b.i()) == 0
		case kUint:
			return cmpDoubleUint(a.f(), b.n) == 0
		}
	case kList:
		if b.k != kList {
			return false
		}
		la, lb := a.list(), b.list()
		if len(la) != len(lb) {
			return false
		}
		c.charge(int64(len(la)))
		for i := range la {
			if !c.equal(la[i], lb[i]) {
				return false
			}
		}
		return true
	case kAnswer:
		if b.k != kAnswer {
			return false
		}
		return c.answers[a.s] == c.answers[b.s]
	case kMap, kAnswers, kScores:
		if !isMap(b.k) || c.size(a) != c.size(b) {
			return false
		}
		eq := true
		c.iterate(a, false, func(k value) bool {
			va, _ := c.find(a, k)
			vb, found := c.find(b, k)
			if !found || !c.equal(va, vb) {
				eq = false
			}
			return eq
		})
		return eq
	}
	return false
}

func isMap(k kind) bool { return k == kMap || k == kAnswers || k == kScores }

// find looks key up in a map value.
func (c *ctx) find(m, key value) (value, bool) {
	switch m.k {
	case kMap:
		return m.o.(*mapLit).find(key)
	case kAnswers:
		if key.k == kString {
			if _, ok := c.answers[key.s]; ok {
				return value{k: kAnswer, s: key.s}, true
			}
		}
	case kScores:
		if key.k == kString {
			if f, ok := c.scores[key.s]; ok {
				return doubleVal(f), true
			}
		}
	}
	return value{}, false
}

func (c *ctx) size(v value) int {
	switch v.k {
	case kMap:
		return len(v.o.(*mapLit).keys)
	case kAnswers:
		return len(c.answers)
	case kScores:
		return len(c.scores)
	case kList:
		return len(v.list())
	}
	return 0
}

// Conversions, as cel-go's ConvertToType of each type and the standard library's overloads.

func convInt(v value) value {
	switch v.k {
	case kInt:
		return v
	case kUint:
		if v.n > math.MaxInt64 {
			return vIntOverflow
		}
		return intVal(int64(v.n))
	case kDouble:
		i, ok := doubleToInt64Checked(v.f())
		if !ok {
			return vIntOverflow
		}
		return intVal(i)
	case kString:
		i, err := strconv.ParseInt(v.s, 10, 64)
		if err != nil {
			return errVal(errors.New("type conversion error from 'string' to 'int'"))
		}
		return intVal(i)
	}
	return noOverload("int", v)
}

func convUint(v value) value {
	switch v.k {
	case kUint:
		return v
	case kInt:
		if v.i() < 0 {
			return vUintOverflow
		}
		return uintVal(v.n)
	case kDouble:
		u, ok := doubleToUint64Checked(v.f())
		if !ok {
			return vUintOverflow
		}
		return uintVal(u)
	case kString:
		u, err := strconv.ParseUint(v.s, 10, 64)
		if err != nil {
			return errVal(errors.New("type conversion error from 'string' to 'uint'"))
		}
		return uintVal(u)
	}
	return noOverload("uint", v)
}

func convDouble(v value) value {
	switch v.k {
	case kDouble:
		return v
	case kInt:
		return doubleVal(float64(v.i()))
	case kUint:
		return doubleVal(float64(v.n))
	case kString:
		f, err := strconv.ParseFloat(v.s, 64)
		if err != nil {
			return errVal(errors.New("type conversion error from 'string' to 'double'"))
		}
		return doubleVal(f)
	}
	return noOverload("double", v)
}

func convString(v value) value {
	switch v.k {
	case kString:
		return v
	case kInt:
		return stringVal(strconv.FormatInt(v.i(), 10))
	case kUint:
		return stringVal(strconv.FormatUint(v.n, 10))
	case kDouble:
		return stringVal(fmt.Sprintf("%g", v.f()))
	case kBool:
		return stringVal(strconv.FormatBool(v.b()))
	}
	return noOverload("string", v)
}

func convBool(v value) value {
	switch v.k {
	case kBool:
		return v
	case kString:
		b, err := strconv.ParseBool(v.s)
		if err != nil {
			return errVal(errors.New("type conversion error from 'string' to 'bool'"))
		}
		return boolVal(b)
	}
	return noOverload("bool", v)
}

func strSize(s string) int64 { return int64(utf8.RuneCountInString(s)) }
