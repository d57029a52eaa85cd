package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Requests are read with encoding/json, which matches a member to a field by its exact
// name or, failing that, case-insensitively (with Unicode folding: "meſſages" with a long s
// is "messages"), and keeps the last member that matched. Model servers read members by
// their exact names. A request with both "messages" and "Messages" would therefore be
// judged on one and answered on the other: the guard would inspect the harmless copy while
// the provider reads the other. checkUnambiguous refuses such a request before it is
// judged: every field the guard reads must be named by exactly one spelling in its object.
// Repeating the exact same name is not ambiguous (every parser keeps the last), and
// members the guard does not read are not its concern.

// checkUnambiguous reports a member of raw (valid JSON) that names, in a spelling other
// than another member's, a field of t that the guard reads.
func checkUnambiguous(raw []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		it, ok := iterOf(raw, '{')
		if !ok {
			return nil // not an object: encoding/json reports the type error
		}
		fs := fieldsOf(t)
		var seenArr [16]string // field index → the spelling that named it
		seen := seenArr[:0]
		if len(fs.fields) > len(seenArr) {
			seen = make([]string, 0, len(fs.fields))
		}
		seen = seen[:len(fs.fields)]
		named := uint64(0) // fields named so far (the request types have fewer than 64)
		for {
			k, v, ok := it.member()
			if !ok {
				return nil
			}
			key := string(k)
			if strings.IndexByte(key, '\\') >= 0 {
				u, ok := unescape(nil, k)
				if !ok {
					return nil
				}
				key = string(u)
			}
			i, ok := fs.match(key)
			if !ok {
				continue
			}
			if named&(1<<i) != 0 && seen[i] != key {
				return fmt.Errorf("members %q and %q both name field %q: a model server reads one, and the guard would judge the other", seen[i], key, fs.fields[i].name)
			}
			seen[i], named = key, named|1<<i
			if err := checkUnambiguous(v, fs.fields[i].typ); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 { // []byte, json.RawMessage: read later, checked then
			return nil
		}
		it, ok := iterOf(raw, '[')
		if !ok {
			return nil
		}
		for {
			e, ok := it.elem()
			if !ok {
				return nil
			}
			if err := checkUnambiguous(e, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

type jsonField struct {
	name string
	fold string
	typ  reflect.Type
}

type fieldSet struct {
	fields []jsonField
	exact  map[string]int
}

// match finds the field encoding/json decodes a member named key into: the one of that
// exact name, else the first whose name folds to the same.
func (fs *fieldSet) match(key string) (int, bool) {
	if i, ok := fs.exact[key]; ok {
		return i, true
	}
	f := foldName(key)
	for i := range fs.fields {
		if fs.fields[i].fold == f {
			return i, true
		}
	}
	return 0, false
}

var fieldSets sync.Map // reflect.Type → *fieldSet

// fieldsOf lists the JSON fields of struct type t as encoding/json names them (tag name,
// else the Go name; "-" skipped). The request types embed no structs.
func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{exact: map[string]int{}}
	if t.NumField() > 64 {
		panic("wire: checkUnambiguous tracks at most 64 fields per type: " + t.String())
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fs.exact[name] = len(fs.fields)
		fs.fields = append(fs.fields, jsonField{name: name, fold: foldName(name), typ: sf.Type})
	}
	fieldSets.Store(t, fs)
	return fs
}

// foldName folds a name as encoding/json compares names: ASCII letters to upper case,
// other runes to upper(lower(r)), so that "ſ" (U+017F) folds to "S" and the Kelvin sign to
// "K".
func foldName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
		default:
			r = unicode.ToUpper(unicode.ToLower(r))
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checkedUnmarshal is json.Unmarshal, then checkUnambiguous on what it accepted (the
// walk needs valid JSON, which Unmarshal has just checked).
func checkedUnmarshal(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	return checkUnambiguous(raw, reflect.TypeOf(v))
}
