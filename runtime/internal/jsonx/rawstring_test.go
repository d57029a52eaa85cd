package jsonx

import (
	"encoding/json"
	"testing"
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
