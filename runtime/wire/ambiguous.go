package wire

import (
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Requests are read as encoding/json reads them (decodeJSON): a member names a field by its
// exact name or, failing that, case-insensitively (with Unicode folding: "meſſages" with a
// long s is "messages"), so that the guard judges what a server decoding with encoding/json
// reads. Most model servers read members by their exact names. A request with both
// "messages" and "Messages" would therefore be judged on one and answered on the other:
// the guard would inspect the harmless copy while the provider reads the other. decodeJSON
// refuses such a request before it is judged: every field the guard reads must be named by
// exactly one spelling in its object. Repeating the exact same name is not ambiguous
// (every parser keeps the last), and members the guard does not read are not its concern.

type jsonField struct {
	name  string
	fold  string
	typ   reflect.Type
	index int // of the Go field
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
		panic("wire: decodeJSON tracks at most 64 fields per type: " + t.String())
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
		fs.fields = append(fs.fields, jsonField{name: name, fold: foldName(name), typ: sf.Type, index: i})
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
