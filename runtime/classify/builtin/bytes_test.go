package builtin

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The byte classes the detectors share, at the edges of their ranges.
func TestByteClasses(t *testing.T) {
	for b, want := range map[byte]bool{'0': true, '9': true, 'a': true, 'f': true, 'A': true, 'F': true,
		'g': false, 'G': false, '/': false, ':': false, '`': false, '@': false} {
		if isHex(b) != want {
			t.Errorf("isHex(%q) = %v", b, !want)
		}
	}
	// After a byte that is not part of a word, a word may begin: ASCII that is not \w, or the
	// last byte of a multi-byte rune (0x80–0xBF); a lead byte (0xC0 and up) is not.
	for b, want := range map[byte]bool{' ': true, '-': true, 'a': false, '_': false, 0x7f: true,
		utf8.RuneSelf: true, 0xBF: true, 0xC0: false, 0xE2: false} {
		if isBoundaryByte(b) != want {
			t.Errorf("isBoundaryByte(%#x) = %v", b, !want)
		}
	}
	for r, want := range map[rune]bool{'a': true, '_': true, '-': false, 0x7f: false, utf8.RuneSelf: false, 'é': true, '٣': true, '“': false} {
		if isWordRune(r) != want {
			t.Errorf("isWordRune(%q) = %v", r, !want)
		}
	}
}

// prevWord skips up to four spaces or skip bytes back from end, then reads a word of at most
// 24 letters that is not the tail of a longer \w run.
func TestPrevWord(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want string
	}{
		{"the key", "key"},
		{"the key    ", "key"},
		{"the key     ", ""},
		{"the key: ", "key"},
		{"the key:::: ", ""},
		{"x " + strings.Repeat("k", 24), strings.Repeat("k", 24)},
		{"x " + strings.Repeat("k", 25), ""},
		{strings.Repeat("k", 24), strings.Repeat("k", 24)},
		{"a1key", ""},
		{"", ""},
	} {
		ws, we, ok := prevWord(tc.s, len(tc.s), ":")
		got := ""
		if ok {
			got = tc.s[ws:we]
		}
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("prevWord(%q) = %q, %v, want %q", tc.s, got, ok, tc.want)
		}
	}
}

// Where a rune cut by the stream begins, and the trailing run a token match can hold.
func TestTrailingRuns(t *testing.T) {
	for s, want := range map[string]int{
		"abc": 3, "ab\xe2\x80": 2, "ab\xe2": 2, "\xe2": 0, "ab\xf0\x9f\x98": 2, "ab\xe2\x80\x99": 5, "ab\x80": 3, "": 0,
	} {
		if got := partialRuneStart(s); got != want {
			t.Errorf("partialRuneStart(%q) = %d, want %d", s, got, want)
		}
	}
	for s, want := range map[string]int{
		"ab cd": 3, "ab\x7fcd": 3, "abπ": 0, "x “ab": 5, "ab\xe2\x80": 0, "": 0,
	} {
		if got := tokenRunStart(s); got != want {
			t.Errorf("tokenRunStart(%q) = %d, want %d", s, got, want)
		}
	}
}
