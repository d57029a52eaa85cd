package jsonx

import (
	"encoding/json"
	"strings"
	"testing"
)

// Valid must say exactly what json.Valid says: the walk after it relies on valid
// JSON, and the client's parser decides what is valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e5`, `1E+5`, `1e`, `1e+`, `-1.5e-3`, `.5`, `+1`,
		`true`, `tru`, `truex`, `null`, `nul`, `false`, `"`, `""`, `"a`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`,
		`"\x"`, "\"\t\"", "\"\x7f\"", "\"\xff\xfe\"", `"\/"`, `{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`,
		`{a:1}`, `{"a":1 "b":2}`, `[]`, `[1,]`, `[1 2]`, `[,1]`, `[[[]]]`, `{"a":[{"b":null}]}`, ` {"a" : [ 1 , 2 ] } `,
		`{"a":1}x`, `1 2`, "\u2028", `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"hi \"there\"\n"},"finish_reason":null}]}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

func BenchmarkValidJSONEvent(b *testing.B) {
	ev := []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" garden, and a rota for watering"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			Valid(ev)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(ev)
		}
	})
}

// The eight-bytes-at-a-time skip of plain string bytes must stop at a quote, a backslash
// or a control character wherever it falls in a word, and never at anything else.
func TestValidJSONFindsEverySpecialByteInLongStrings(t *testing.T) {
	for n := 0; n <= 40; n++ {
		for at := 0; at < n; at++ {
			for _, special := range []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff, 'A'} {
				inner := []byte(strings.Repeat("a", n))
				inner[at] = special
				for _, doc := range [][]byte{
					append(append([]byte{'"'}, inner...), '"'),
					append(append([]byte(`{"k":"`), inner...), `"}`...),
				} {
					if got, want := Valid(doc), json.Valid(doc); got != want {
						t.Fatalf("validJSON(%q) = %v, json.Valid says %v", doc, got, want)
					}
				}
			}
		}
	}
}
