package jsonx

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// FuzzRawString: RawString reads every JSON string literal exactly as encoding/json does
// (its fast path and its unescaping alike) and refuses what encoding/json refuses.
func FuzzRawString(f *testing.F) {
	for _, s := range []string{`"plain prose"`, `"tab\tescaped"`, `"quote \" inside"`, `"é ünïcode 日本"`, "\"bad \xff utf8\"", `"\u00e9"`, `""`, `"a\\b"`,
		`"line one\nline two"`, `"\ud83d\ude00 \ud800 lone"`, `"unterminated\"`, `"trailing" `, `"x" y`, `"\q"`, "\"ctl \x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 || raw[0] != '"' {
			return // RawString reads JSON values from their first byte
		}
		var want string
		err := json.Unmarshal(raw, &want)
		got, ok := RawString(raw)
		switch {
		case err != nil && ok:
			t.Fatalf("rawString(%q) = %q, true; encoding/json refuses it: %v", raw, got, err)
		case err == nil && (!ok || got != want):
			t.Fatalf("rawString(%q) = %q, %v; encoding/json reads %q", raw, got, ok, want)
		}
	})
}

// FuzzSharedString: on a value of a document Valid accepts, SharedString reads what
// RawString reads (its shared fast path included: the seeds are long enough for it), and
// a string it shares is raw's own bytes; DecodeShared decodes a string member as Decode
// does.
func FuzzSharedString(f *testing.F) {
	long := strings.Repeat("plain prose, ", 8)
	for _, s := range []string{`"` + long + `"`, `"` + long + `\n"`, `"` + long + "\xff\"", `"` + long + `é ünïcode 日本"`,
		`"short"`, `""`, `"` + long + `\u00e9"`, `"` + long + `\ud800"`, `5`, `null`, `["` + long + `"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !Valid(raw) {
			return // SharedString reads values of valid documents only
		}
		raw = raw[SkipWS(raw, 0):]
		raw = raw[:ValueEnd(raw, 0)]
		want, wantOK := RawString(raw)
		got, ok := SharedString(raw)
		if got != want || ok != wantOK {
			t.Fatalf("SharedString(%q) = %q, %v; RawString reads %q, %v", raw, got, ok, want, wantOK)
		}
		if ok && len(got) >= SharedMin && utf8.Valid(raw) && !bytes.ContainsRune(raw, '\\') && unsafe.StringData(got) != &raw[1] {
			t.Fatalf("SharedString(%q) copied a string it could share", raw)
		}
		doc := append(append([]byte(`{"s":`), raw...), '}')
		var a, b struct{ S string }
		errA, errB := Decode(doc, &a), DecodeShared(doc, &b)
		if (errA == nil) != (errB == nil) || a != b {
			t.Fatalf("DecodeShared(%s) = %q, %v; Decode reads %q, %v", doc, b.S, errB, a.S, errA)
		}
	})
}
