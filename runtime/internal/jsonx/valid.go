package jsonx

import "encoding/binary"

// Valid reports whether data is a single valid JSON value, exactly as json.Valid does
// (FuzzValidJSON compares them): RFC 8259 syntax, nesting at most 10,000 deep, bytes of
// strings not checked as UTF-8. Every streamed event is validated before it is walked, and
// json.Valid's byte-at-a-time state machine was the largest cost of decoding one; this
// one skips the plain bytes of a string, most of an event, with a table lookup each.
func Valid(data []byte) bool {
	i, ok := validValue(data, SkipWS(data, 0), 0, nil)
	return ok && SkipWS(data, i) == len(data)
}

// maxValidDepth is encoding/json's nesting limit.
const maxValidDepth = 10000

// plainInString marks the bytes that stand for themselves in a JSON string.
var plainInString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validValue checks the value starting at i and returns the index after it. When ends is
// not nil (it is then as long as b), it records there the end of every string (member
// names included), object and array at the index of its first byte, for a SkipTable.
func validValue(b []byte, i, depth int, ends []uint16) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c, start := b[i], i; {
	case c == '{':
		if depth >= maxValidDepth {
			return i, false
		}
		i = SkipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			i++
			if ends != nil {
				ends[start] = uint16(i)
			}
			return i, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			key := i
			var ok bool
			if i, ok = ValidString(b, i); !ok {
				return i, false
			}
			if ends != nil {
				ends[key] = uint16(i)
			}
			i = SkipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = validValue(b, SkipWS(b, i+1), depth+1, ends); !ok {
				return i, false
			}
			i = SkipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = SkipWS(b, i+1)
			case '}':
				i++
				if ends != nil {
					ends[start] = uint16(i)
				}
				return i, true
			default:
				return i, false
			}
		}
	case c == '[':
		if depth >= maxValidDepth {
			return i, false
		}
		i = SkipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			i++
			if ends != nil {
				ends[start] = uint16(i)
			}
			return i, true
		}
		for {
			var ok bool
			if i, ok = validValue(b, i, depth+1, ends); !ok {
				return i, false
			}
			i = SkipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = SkipWS(b, i+1)
			case ']':
				i++
				if ends != nil {
					ends[start] = uint16(i)
				}
				return i, true
			default:
				return i, false
			}
		}
	case c == '"':
		i, ok := ValidString(b, i)
		if ok && ends != nil {
			ends[start] = uint16(i)
		}
		return i, ok
	case c == 't':
		return validLiteral(b, i, "true")
	case c == 'f':
		return validLiteral(b, i, "false")
	case c == 'n':
		return validLiteral(b, i, "null")
	case c == '-' || ('0' <= c && c <= '9'):
		return validNumber(b, i)
	}
	return i, false
}

func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// ValidString checks the string whose opening quote is at i.
func ValidString(b []byte, i int) (int, bool) {
	for i++; i < len(b); {
		i = plainRun(b, i)
		if i >= len(b) {
			break
		}
		c := b[i]
		if plainInString[c] {
			i++
			continue
		}
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		default: // a control character
			return i, false
		}
	}
	return i, false
}

// plainRun returns the index of the first byte at or after i that is not plain in a JSON
// string (a quote, a backslash or a control character), or len(b): eight bytes at a time
// while none of them is, then one by one. Prompts are long runs of plain bytes.
func plainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if w := binary.LittleEndian.Uint64(b[i:]); hasZeroByte(w^quotes) || hasZeroByte(w^backslashes) || hasByteBelow20(w) {
			break
		}
	}
	for i < len(b) && plainInString[b[i]] {
		i++
	}
	return i
}

const (
	ones        = 0x0101010101010101
	highBits    = 0x8080808080808080
	quotes      = '"' * ones
	backslashes = '\\' * ones
)

// zeroBytes flags the zero bytes of w in their high bits: the lowest flag is always
// exact (a borrow only comes from a zero byte and only reaches the bytes above it), so the
// flags tell whether a byte is zero and which one is the first.
func zeroBytes(w uint64) uint64 { return (w - ones) &^ w & highBits }

// hasZeroByte reports whether a byte of w is zero.
func hasZeroByte(w uint64) bool { return zeroBytes(w) != 0 }

// hasByteBelow20 reports whether a byte of w is below 0x20, a control character.
func hasByteBelow20(w uint64) bool { return (w-0x20*ones)&^w&highBits != 0 }

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}
