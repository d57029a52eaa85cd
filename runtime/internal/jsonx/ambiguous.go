package jsonx

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Requests are read as encoding/json reads them (Decode): a member names a field by its
// exact name or, failing that, case-insensitively (with Unicode folding: "meſſages" with a
// long s is "messages"), so that the guard judges what a server decoding with encoding/json
// reads. Most model servers read members by their exact names. A request with both
// "messages" and "Messages" would therefore be judged on one and answered on the other:
// the guard would inspect the harmless copy while the provider reads the other. Decode
// refuses such a request before it is judged: every field the guard reads must be named by
// exactly one spelling in its object.
//
// A request naming a field twice under the same name is refused too (DecodeRequest):
// encoding/json decodes the second copy over the first, other parsers keep the last copy
// whole, and some keep the first, so {"messages":[prompt],"messages":[harmless]} would be
// judged on what one reads and answered on what another reads. This holds for every
// field the guard reads, wherever it nests (messages, their content and parts, input
// items, system, tools, tool calls and their arguments), and for the flags that shape the
// answer (stream, n). Responses are the provider's, not the client's: a repeated member
// in a response is decoded as encoding/json decodes it, and the guard judges that merge.
// Members the guard does not read are not its concern.

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

// repeated returns the error for a field named a second time: the earlier spelling was
// seen, key names it again. Two spellings are always refused; the same spelling twice only
// when refuseRepeats (requests).
func repeated(seen, key, field string, refuseRepeats bool) error {
	if seen != key {
		return fmt.Errorf("members %q and %q both name field %q: a model server reads one, and the guard would judge the other", seen, key, field)
	}
	if refuseRepeats {
		return fmt.Errorf("member %q is repeated: a model server may read either copy, and the guard would judge one", key)
	}
	return nil
}
