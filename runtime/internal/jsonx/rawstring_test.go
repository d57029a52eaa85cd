package jsonx

import (
	"encoding/json"
	"testing"
)

// FuzzRawString: the fast path of RawString reads every JSON string literal exactly as
// encoding/json does.
func FuzzRawString(f *testing.F) {
	for _, s := range []string{`"plain prose"`, `"tab\tescaped"`, `"quote \" inside"`, `"é ünïcode 日本"`, "\"bad \xff utf8\"", `"\u00e9"`, `""`, `"a\\b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &want) != nil {
			return // RawString reads validated JSON values, which start at their first byte
		}
		got, ok := RawString(raw)
		if !ok || got != want {
			t.Fatalf("rawString(%q) = %q, %v; encoding/json reads %q", raw, got, ok, want)
		}
	})
}
