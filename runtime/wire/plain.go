package wire

import (
	"strings"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// The plain readers (readPlainChat, readPlainChatResponse) read the most common shapes of a
// body without reflection and give up, reporting false, on anything the decoder must
// judge. plainObject and plainArray are their walk of an object and of an array.

// plainObject calls member for each member of the object o named exactly as one of read
// (i its index), and skips the members the decoder does not read either. It reports false
// when o is not an object, when member does, and for what the decoder must judge: a member
// named as one of read twice, or named as one of fields (every member the decoder reads)
// but not as read names it (another field, another spelling: otherMember).
func plainObject(tab *jsonx.SkipTable, o []byte, read, fields []string, member func(i int, v []byte) bool) bool {
	it, ok := tab.IterOf(o, '{')
	if !ok {
		return false
	}
	var named uint32 // bit i: read[i] was met
	for {
		k, v, more := it.Member()
		if !more {
			return true
		}
		i := -1
		for j, f := range read {
			if string(k) == f {
				i = j
				break
			}
		}
		switch {
		case i < 0:
			if !otherMember(k, fields) {
				return false
			}
		case named&(1<<i) != 0 || !member(i, v):
			return false
		default:
			named |= 1 << i
		}
	}
}

// plainArray reads the array a (or null, which makes *out nil) into *out, an element
// each, read by elem into a zero T; a null element stays zero. It reports false when a
// is neither, or when elem does.
func plainArray[T any](tab *jsonx.SkipTable, a []byte, out *[]T, elem func(e []byte, x *T) bool) bool {
	if a[0] == 'n' {
		*out = nil
		return true
	}
	it, ok := tab.IterOf(a, '[')
	if !ok {
		return false
	}
	*out = []T{}
	for {
		e, more := it.Elem()
		if !more {
			return true
		}
		var zero T
		*out = append(*out, zero)
		if e[0] != 'n' && !elem(e, &(*out)[len(*out)-1]) {
			return false
		}
	}
}

// otherMember reports whether the raw member name k names none of fields in any spelling
// encoding/json reads: printable ASCII without an escape, equal to no field but for case.
func otherMember(k []byte, fields []string) bool {
	for _, c := range k {
		if c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	for _, f := range fields {
		if len(f) == len(k) && strings.EqualFold(f, string(k)) {
			return false
		}
	}
	return true
}

// plainString reads the JSON string or null v into *dst (null leaves it).
func plainString(v []byte, dst *string, scratch *[]byte) bool {
	if v[0] == 'n' {
		return true
	}
	s, ok := jsonx.StringValue(v, scratch)
	*dst = s
	return ok
}
