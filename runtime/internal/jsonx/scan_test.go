package jsonx

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestScanner(t *testing.T) {
	cases := []struct {
		name, doc, key, want string
	}{
		{"the last of duplicate keys wins", `{"content":"safe","content":"evil"}`, "content", "evil"},
		{"an escaped key matches once unescaped", `{"con\u0074ent":"x"}`, "content", "x"},
		{"keys match case-sensitively", `{"Content":"x"}`, "content", ""},
		{"escapes and surrogate pairs are decoded", `{"content":"a\nb\u00e9\ud83d\ude00\"q\\"}`, "content", "a\nbé😀\"q\\"},
		{"nested values are skipped whole", `{"a":{"content":"no"},"b":["}",{"x":"]"}],"content":"yes"}`, "content", "yes"},
		{"invalid UTF-8 becomes U+FFFD", "{\"content\":\"a\xffb\"}", "content", "a\uFFFDb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f [1][]byte
			var scratch []byte
			if !ScanFields([]byte(tc.doc), []string{tc.key}, f[:]) {
				t.Fatal("not an object")
			}
			got, _ := StringOf(f[0], &scratch)
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzScanner checks that the scanner reads the string members of any valid object as
// encoding/json does (a differential: the guard must read what clients read), and that it
// never panics on anything else.
func FuzzScanner(f *testing.F) {
	f.Add([]byte(`{"a":"x","b":{"c":[1,"]"]},"a":"y"}`))
	f.Add([]byte(`{"\u0061":"\ud800x","b":null}`))
	f.Add([]byte(`{"a":"unterminated`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		it, ok := IterOf(doc, '{')
		got := map[string]string{}
		var scratch []byte
		for ok {
			k, v, more := it.Member()
			if !more {
				break
			}
			var kb [64]byte
			key, _ := Unescape(kb[:0], k)
			if s, isStr := StringOf(v, &scratch); isStr {
				got[string(key)] = s
			} else {
				delete(got, string(key))
			}
		}
		if !json.Valid(doc) {
			return
		}
		var want map[string]any
		if json.Unmarshal(doc, &want) != nil {
			return
		}
		for k, v := range want {
			if s, isStr := v.(string); isStr && got[k] != s {
				t.Fatalf("member %q: scanner %q, encoding/json %q", k, got[k], s)
			}
		}
	})
}

// StringEnd's word-at-a-time start must find the closing quote wherever it falls, and
// count the backslashes before a quote as the general loop does.
func TestStringEndAtEveryOffset(t *testing.T) {
	naive := func(b []byte, i int) int {
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(b)
	}
	for n := 0; n <= 48; n++ {
		for at := 0; at < n; at++ {
			for _, special := range []string{`"`, `\"`, `\\`, `\\"`, `\u0022`, "\x00", "é"} {
				inner := []byte(strings.Repeat("a", n))
				s := append(append(append([]byte(`"`), inner[:at]...), special...), inner[at:]...)
				s = append(s, `" , "next"`...)
				if got, want := StringEnd(s, 0), naive(s, 0); got != want {
					t.Fatalf("stringEnd(%q) = %d, want %d", s, got, want)
				}
			}
		}
	}
}
