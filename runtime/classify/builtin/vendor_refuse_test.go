package builtin

import (
	"hash/crc32"
	"testing"
)

// TestCRC32IEEE checks the hand-written CRC-32 against the standard library's.
func TestCRC32IEEE(t *testing.T) {
	for _, s := range []string{"", "a", "abc", fakeFrom(alphaB62, 30, 1), fakeFrom(alphaB62, 30, 2)} {
		if got, want := crc32IEEE(s), crc32.ChecksumIEEE([]byte(s)); got != want {
			t.Errorf("crc32IEEE(%q) = %08x, want %08x", s, got, want)
		}
	}
}
