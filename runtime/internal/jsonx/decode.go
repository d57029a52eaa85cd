package jsonx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Decode decodes the JSON document raw into v (a pointer to one of package wire's
// request or response types, or a type made of the same kinds). It is what encoding/json's Unmarshal followed by a walk
// refusing ambiguous spellings did, in one pass over bytes Valid has checked, without
// encoding/json's byte-at-a-time state machine (that pass and the decoding were most of
// the cost of judging a request):
//
//   - a member names the field of its exact name or, failing that, the field its name
//     folds to as encoding/json folds names, so that the guard judges whatever a server
//     decoding with encoding/json would read;
//   - two spellings naming one field make the document ambiguous: it is refused (see
//     ambiguous.go for why);
//   - a member repeated under one exact name is decoded into what the earlier one left,
//     as encoding/json does: scalars are replaced, objects merged, arrays decoded
//     element by element over the earlier elements. That is how responses are read; a
//     request is read by DecodeRequest, which refuses the repetition instead (see
//     ambiguous.go);
//   - null leaves a string, number, bool or struct as it is and makes a pointer or slice
//     nil (a json.RawMessage keeps the literal null);
//   - a value of the wrong JSON type, or a number that does not fit, is an error;
//   - strings are unescaped as encoding/json unescapes them (invalid UTF-8 and lone
//     surrogates become U+FFFD).
func Decode(raw []byte, v any) error { return decodeWith(decoder{}, raw, v) }

// DecodeRequest is Decode for requests: a field the guard reads that is named
// twice, even under one exact name, is refused (see ambiguous.go).
func DecodeRequest(raw []byte, v any) error {
	return decodeWith(decoder{refuseRepeats: true}, raw, v)
}

// DecodeShared is Decode for a document that does not change while v is in use (a request
// or response body read whole): a string value of SharedMin bytes or more without escapes
// is raw's own bytes, not a copy (see SharedString). It reads what Decode reads.
func DecodeShared(raw []byte, v any) error { return decodeWith(decoder{shares: true}, raw, v) }

// DecodeRequestShared is DecodeRequest with DecodeShared's strings.
func DecodeRequestShared(raw []byte, v any) error {
	return decodeWith(decoder{refuseRepeats: true, shares: true}, raw, v)
}

func decodeWith(d decoder, raw []byte, v any) error {
	// A text long enough for nested values to be worth skipping in one step (a prompt
	// inside a message inside the messages: four scans of it without the table) is
	// validated into a SkipTable.
	if len(raw) >= skipTableMin && len(raw) <= maxSkipTable {
		tab := GetSkipTable()
		defer PutSkipTable(tab)
		if d.tab = tab; !tab.Validate(raw) {
			return errInvalidJSON(raw)
		}
	} else if !Valid(raw) {
		return errInvalidJSON(raw)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("wire: decodeJSON needs a non-nil pointer, not %T", v)
	}
	return d.value(raw[SkipWS(raw, 0):], rv.Elem(), planOf(rv.Elem().Type()))
}

// skipTableMin is the length from which decodeWith walks a text with a SkipTable.
const skipTableMin = 512

// skipTables holds the decoders' SkipTables between calls.
var skipTables = sync.Pool{New: func() any { return new(SkipTable) }}

// GetSkipTable returns a SkipTable from the pool the decoders use, for a decoder of one's
// own; PutSkipTable gives it back (released) when the walk is over.
func GetSkipTable() *SkipTable { return skipTables.Get().(*SkipTable) }

// PutSkipTable releases t and gives it back to the pool.
func PutSkipTable(t *SkipTable) {
	t.Release()
	skipTables.Put(t)
}

// iterOf is IterOf, with the decoder's table when it has one.
func (d *decoder) iterOf(b []byte, open byte) (Iter, bool) {
	if d.tab != nil {
		return d.tab.IterOf(b, open)
	}
	return IterOf(b, open)
}

// A plan is how values of one Go type are decoded, built once per type.
type plan struct {
	kind   reflect.Kind
	typ    reflect.Type
	raw    bool      // json.RawMessage
	elem   *plan     // pointer target, slice element
	fields *fieldSet // struct
	field  []*plan   // struct: by field index of fields
	bits   int       // floats
	once   sync.Once // guards filling the fields above
}

// build fills p once.
func (p *plan) build() { p.once.Do(func() { buildPlan(p) }) }

var (
	plans      sync.Map // reflect.Type → *plan
	rawMsgType = reflect.TypeFor[json.RawMessage]()
)

// planOf returns the plan of t, built.
func planOf(t reflect.Type) *plan {
	p := planOfLazy(t)
	p.build()
	return p
}

// buildPlan fills p. A kind the wire request and response types do not use panics: the
// tests decode every type.
func buildPlan(p *plan) {
	t := p.typ
	if t == rawMsgType {
		p.raw = true
		return
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
	case reflect.Float32, reflect.Float64:
		p.bits = t.Bits()
	case reflect.Pointer, reflect.Slice:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			panic("jsonx: Decode does not decode base64 byte slices: " + t.String())
		}
		p.elem = planOfLazy(t.Elem())
	case reflect.Struct:
		p.fields = fieldsOf(t)
		p.field = make([]*plan, len(p.fields.fields))
		for i, f := range p.fields.fields {
			p.field[i] = planOfLazy(f.typ)
		}
	default:
		panic("jsonx: Decode does not decode " + t.String())
	}
}

// planOfLazy returns the plan of t without building it yet, so that a recursive type
// does not recurse forever; value builds it on first use.
func planOfLazy(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	actual, _ := plans.LoadOrStore(t, &plan{kind: t.Kind(), typ: t})
	return actual.(*plan)
}

type decoder struct {
	scratch []byte
	// refuseRepeats: a field named twice under one exact name is an error, not a merge.
	refuseRepeats bool
	// shares: long strings without escapes are the document's bytes (DecodeShared).
	shares bool
	// tab, when set, holds where each value of the text ends (decodeWith).
	tab *SkipTable
}

// value decodes the JSON value b (valid, no leading space) into v.
func (d *decoder) value(b []byte, v reflect.Value, p *plan) error {
	p.build()
	if p.raw {
		v.SetBytes(b)
		return nil
	}
	if b[0] == 'n' { // null
		switch p.kind {
		case reflect.Pointer, reflect.Slice:
			v.SetZero()
		}
		return nil
	}
	switch p.kind {
	case reflect.String:
		var s string
		var ok bool
		if d.shares {
			s, ok = StringValue(b, &d.scratch)
		} else {
			s, ok = StringOf(b, &d.scratch)
		}
		if !ok {
			return typeError(b, p.typ)
		}
		v.SetString(s)
	case reflect.Bool:
		switch b[0] {
		case 't':
			v.SetBool(true)
		case 'f':
			v.SetBool(false)
		default:
			return typeError(b, p.typ)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !isNumberStart(b[0]) {
			return typeError(b, p.typ)
		}
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return fmt.Errorf("json: cannot unmarshal number %s into Go value of type %s", b, p.typ)
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		if !isNumberStart(b[0]) {
			return typeError(b, p.typ)
		}
		f, err := strconv.ParseFloat(string(b), p.bits)
		if err != nil || v.OverflowFloat(f) {
			return fmt.Errorf("json: cannot unmarshal number %s into Go value of type %s", b, p.typ)
		}
		v.SetFloat(f)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(p.typ.Elem()))
		}
		return d.value(b, v.Elem(), p.elem)
	case reflect.Slice:
		return d.slice(b, v, p)
	case reflect.Struct:
		return d.object(b, v, p)
	}
	return nil
}

// slice decodes an array over the slice's earlier elements, as encoding/json does (see
// Decode): element i is decoded into element i, the slice grown or cut to the array's
// length.
func (d *decoder) slice(b []byte, v reflect.Value, p *plan) error {
	it, ok := d.iterOf(b, '[')
	if !ok {
		return typeError(b, p.typ)
	}
	i := 0
	for ; ; i++ {
		e, ok := it.Elem()
		if !ok {
			break
		}
		if i >= v.Cap() {
			v.Grow(1)
		}
		if i >= v.Len() {
			v.SetLen(i + 1)
		}
		if err := d.value(e, v.Index(i), p.elem); err != nil {
			return err
		}
	}
	if i < v.Len() {
		v.SetLen(i)
	}
	if i == 0 {
		v.Set(reflect.MakeSlice(p.typ, 0, 0))
	}
	return nil
}

func (d *decoder) object(b []byte, v reflect.Value, p *plan) error {
	it, ok := d.iterOf(b, '{')
	if !ok {
		return typeError(b, p.typ)
	}
	fs := p.fields
	var seenArr [16]string // field index → the spelling that named it
	seen := seenArr[:0]
	if len(fs.fields) > len(seenArr) {
		seen = make([]string, 0, len(fs.fields))
	}
	seen = seen[:len(fs.fields)]
	named := uint64(0) // the types have fewer than 64 fields (fieldsOf checks)
	for {
		k, val, ok := it.Member()
		if !ok {
			return nil
		}
		var key string
		var i int
		if bytes.IndexByte(k, '\\') < 0 && utf8.Valid(k) {
			i, ok = fs.matchBytes(k)
			if ok {
				key = fs.spelling(i, k)
			}
		} else {
			u, _ := Unescape(d.scratch[:0], k)
			d.scratch = u
			key = string(u)
			i, ok = fs.match(key)
		}
		if !ok {
			continue
		}
		if named&(1<<i) != 0 {
			if err := repeated(seen[i], key, fs.fields[i].name, d.refuseRepeats); err != nil {
				return err
			}
		}
		seen[i], named = key, named|1<<i
		if err := d.value(val, v.Field(fs.fields[i].index), p.field[i]); err != nil {
			return err
		}
	}
}

func isNumberStart(c byte) bool { return c == '-' || '0' <= c && c <= '9' }

// typeError says that the JSON value b cannot be decoded into a t.
func typeError(b []byte, t reflect.Type) error {
	what := "object"
	switch b[0] {
	case '[':
		what = "array"
	case '"':
		what = "string"
	case 't', 'f':
		what = "bool"
	case '{':
	default:
		what = "number"
	}
	return fmt.Errorf("json: cannot unmarshal %s into Go value of type %s", what, t)
}

// matchBytes is match for a key without escapes, without allocating: the exact name,
// else an ASCII key equal to a field's name but for case; a key with other bytes folds
// as match does.
func (fs *fieldSet) matchBytes(k []byte) (int, bool) {
	if i, ok := fs.exact[string(k)]; ok {
		return i, true
	}
	for _, c := range k {
		if c >= utf8.RuneSelf {
			return fs.match(string(k))
		}
	}
	for i := range fs.fields {
		if asciiEqualFold(fs.fields[i].name, k) {
			return i, true
		}
	}
	return 0, false
}

// spelling returns k as a string, without allocating when it is the field's exact name.
func (fs *fieldSet) spelling(i int, k []byte) string {
	if fs.fields[i].name == string(k) {
		return fs.fields[i].name
	}
	return string(k)
}

// asciiEqualFold reports whether ASCII name and key are equal but for letter case. (Field
// names are ASCII; a non-ASCII key is folded by match.)
func asciiEqualFold(name string, key []byte) bool {
	if len(name) != len(key) {
		return false
	}
	for j := range len(key) {
		a, b := name[j], key[j]
		if 'a' <= a && a <= 'z' {
			a -= 'a' - 'A'
		}
		if 'a' <= b && b <= 'z' {
			b -= 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
