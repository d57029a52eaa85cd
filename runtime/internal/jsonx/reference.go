package jsonx

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// The decoder before Decode, kept as the oracle of FuzzDecodeJSON: encoding/json's
// Unmarshal, then a walk refusing two spellings of one field.

// checkUnambiguous reports a member of raw (valid JSON) that names, in a spelling other
// than another member's, a field of t that the guard reads; with refuseRepeats, also a
// member naming such a field in the same spelling as another.
func checkUnambiguous(raw []byte, t reflect.Type, refuseRepeats bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		it, ok := IterOf(raw, '{')
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
			k, v, ok := it.Member()
			if !ok {
				return nil
			}
			key := string(k)
			if strings.IndexByte(key, '\\') >= 0 {
				u, ok := Unescape(nil, k)
				if !ok {
					return nil
				}
				key = string(u)
			}
			i, ok := fs.match(key)
			if !ok {
				continue
			}
			if named&(1<<i) != 0 && (seen[i] != key || refuseRepeats) {
				return fmt.Errorf("field %q named twice, as %q and %q", fs.fields[i].name, seen[i], key)
			}
			seen[i], named = key, named|1<<i
			if err := checkUnambiguous(v, fs.fields[i].typ, refuseRepeats); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 { // []byte, json.RawMessage: read later, checked then
			return nil
		}
		it, ok := IterOf(raw, '[')
		if !ok {
			return nil
		}
		for {
			e, ok := it.Elem()
			if !ok {
				return nil
			}
			if err := checkUnambiguous(e, t.Elem(), refuseRepeats); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReferenceDecode is json.Unmarshal, then checkUnambiguous on what it accepted (the
// walk needs valid JSON, which Unmarshal has just checked): the reference of Decode.
func ReferenceDecode(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	return checkUnambiguous(raw, reflect.TypeOf(v), false)
}

// ReferenceDecodeRequest is the reference of DecodeRequest: a repeated field is
// refused too.
func ReferenceDecodeRequest(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	return checkUnambiguous(raw, reflect.TypeOf(v), true)
}
