package jsonx

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// The stream decoders read events with this scanner instead of encoding/json's reflection:
// events are validated once with Valid (which does not allocate), then walked
// without allocating. Keys match exactly after unescaping and the last of duplicate keys
// wins — what the clients' JSON parsers do — so that the guard reads what the client
// will read (encoding/json would also match keys case-insensitively).

// Iter walks the members of an object or the elements of an array of valid JSON
// (callers check Valid first; on anything else it stops early but never panics).
type Iter struct {
	b []byte
	i int
	// ends, when set, is a SkipTable's ends for b, whose first byte is at base in the
	// table's text: the walk skips strings, objects and arrays without scanning them.
	ends []uint16
	base int
}

// Skip returns the index after the value (or member name) starting at i.
func (it *Iter) Skip(i int) int {
	if it.ends != nil && i < len(it.b) {
		c := it.b[i]
		if closer := closerOf(c); closer != 0 {
			if e := int(it.ends[i]) - it.base; e > i && e <= len(it.b) && it.b[e-1] == closer {
				return e
			}
		}
	}
	return ValueEnd(it.b, i)
}

// closerOf returns the byte that ends a string, object or array starting with c, 0 for
// anything else.
func closerOf(c byte) byte {
	switch c {
	case '"':
		return '"'
	case '{':
		return '}'
	case '[':
		return ']'
	}
	return 0
}

// SkipWS returns the index of the first byte at or after i that is not JSON whitespace.
func SkipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// IterOf starts walking v when it is an object (open '{') or an array ('[').
func IterOf(v []byte, open byte) (Iter, bool) {
	i := SkipWS(v, 0)
	if i >= len(v) || v[i] != open {
		return Iter{}, false
	}
	return Iter{b: v, i: i + 1}, true
}

// Member returns the next member of an object: its key (raw, between the quotes) and
// value.
func (it *Iter) Member() (key, val []byte, ok bool) {
	it.i = SkipWS(it.b, it.i)
	if it.i < len(it.b) && it.b[it.i] == ',' {
		it.i = SkipWS(it.b, it.i+1)
	}
	if it.i >= len(it.b) || it.b[it.i] != '"' {
		return nil, nil, false
	}
	end := it.Skip(it.i)
	if end-1 <= it.i || it.b[end-1] != '"' {
		// Unterminated: only valid JSON is walked, but never panic.
		return nil, nil, false
	}
	key = it.b[it.i+1 : end-1]
	it.i = SkipWS(it.b, end)
	if it.i >= len(it.b) || it.b[it.i] != ':' {
		return nil, nil, false
	}
	start := SkipWS(it.b, it.i+1)
	it.i = it.Skip(start)
	return key, it.b[start:it.i], true
}

// Elem returns the next element of an array.
func (it *Iter) Elem() ([]byte, bool) {
	it.i = SkipWS(it.b, it.i)
	if it.i < len(it.b) && it.b[it.i] == ',' {
		it.i = SkipWS(it.b, it.i+1)
	}
	if it.i >= len(it.b) || it.b[it.i] == ']' {
		return nil, false
	}
	start := it.i
	it.i = it.Skip(start)
	return it.b[start:it.i], true
}

// StringEnd returns the index after the closing quote of the string starting at i: the
// first quote not escaped by an odd run of backslashes (found with IndexByte, which runs
// a word or a vector at a time over prompt-sized strings).
func StringEnd(b []byte, i int) int {
	// Most strings of an event are short (keys, ids, a delta's few words): find the first
	// quote or backslash of their first words without a call, eight bytes at a time.
	for j, words := i+1, 0; j+8 <= len(b) && words < 4; j, words = j+8, words+1 {
		w := binary.LittleEndian.Uint64(b[j:])
		m := zeroBytes(w^quotes) | zeroBytes(w^backslashes)
		if m == 0 {
			continue
		}
		k := j + bits.TrailingZeros64(m)/8
		if b[k] == '"' {
			return k + 1
		}
		break // an escape: the loop below counts backslashes
	}
	for i++; i < len(b); i++ {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		i += q
		n := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
	}
	return len(b)
}

// ValueEnd returns the index after the value starting at i.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = StringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// KeyBuf holds an unescaped member name for KeyName.
type KeyBuf [64]byte

// KeyName returns a raw member name unescaped, for a switch on the names a decoder
// reads: the key itself when it has no escape (almost always), else its unescaped form
// in buf (or a new slice when longer). A key that does not unescape names nothing.
func KeyName(key []byte, buf *KeyBuf) []byte {
	if bytes.IndexByte(key, '\\') < 0 {
		return key
	}
	u, ok := Unescape(buf[:0], key)
	if !ok {
		return nil
	}
	return u
}

// KeyIs reports whether a raw key equals name once unescaped.
func KeyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key) == name
	}
	var buf [64]byte
	u, ok := Unescape(buf[:0], key)
	return ok && string(u) == name
}

// IsNullValue reports whether v is null (or absent).
func IsNullValue(v []byte) bool { return len(v) == 0 || string(v) == "null" }

// StringOf returns the string value of v, allocating only the result; ok is false when v is
// not a string.
func StringOf(v []byte, scratch *[]byte) (string, bool) {
	b, ok := BytesOf(v, scratch)
	if !ok {
		return "", false
	}
	return string(b), true
}

// BytesOf returns the unescaped bytes of the string value v, aliasing v when it has no
// escapes and *scratch otherwise (valid until the next use of scratch).
func BytesOf(v []byte, scratch *[]byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner, true
	}
	u, ok := Unescape((*scratch)[:0], inner)
	*scratch = u
	return u, ok
}

// Unescape appends the unescaped form of a JSON string's contents.
func Unescape(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if j := asciiRun(s, i); j > i {
			// A run of ASCII without escapes, copied at once (text between a prompt's
			// newlines).
			dst = append(dst, s[i:j]...)
			if i = j; i == len(s) {
				break
			}
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			// Invalid UTF-8 becomes U+FFFD, as encoding/json decodes it.
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size - 1
			continue
		}
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(s) {
			return dst, false
		}
		switch s[i] {
		case '"', '\\', '/':
			dst = append(dst, s[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2, ok2 = hex4(s, i+3)
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

// asciiRun returns the index of the first byte at or after i that is a backslash or not
// ASCII, or len(s): eight bytes at a time while none of them is.
func asciiRun(s []byte, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if w := binary.LittleEndian.Uint64(s[i:]); w&highBits != 0 || hasZeroByte(w^backslashes) {
			break
		}
	}
	for i < len(s) && s[i] != '\\' && s[i] < utf8.RuneSelf {
		i++
	}
	return i
}

func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// IntOf parses an integer value (no fraction or exponent) up to 1e15.
func IntOf(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// ScanFields sets vals[i] to the raw value of the member names[i] of the object v (the
// last of duplicates), nil when absent. It reports whether v is an object.
func ScanFields(v []byte, names []string, vals [][]byte) bool {
	var t SkipTable
	return t.ScanFields(v, names, vals)
}

// ScanFields is the function ScanFields for v, a value of the text last validated, walked with the
// table.
func (t *SkipTable) ScanFields(v []byte, names []string, vals [][]byte) bool {
	clear(vals)
	it, ok := t.IterOf(v, '{')
	if !ok {
		return false
	}
	for {
		k, val, ok := it.Member()
		if !ok {
			return true
		}
		for i, n := range names {
			if KeyIs(k, n) {
				vals[i] = val
				break
			}
		}
	}
}
