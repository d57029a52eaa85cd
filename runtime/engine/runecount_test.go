package engine

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// runeCount must count as utf8.RuneCountInString does, invalid bytes and characters
// across its eight-byte words included.
func TestRuneCount(t *testing.T) {
	pieces := []string{"a", "plain ASCII prose ", "é", "€", "😀", "\xff", "\xe2\x82", "\xc3", "\x80", "\n", "abcdefgh"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var s string
		for range r.IntN(24) {
			s += pieces[r.IntN(len(pieces))]
		}
		if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzRuneCount(f *testing.F) {
	f.Add("plain ASCII prose, then é and 😀 and a stray \xff byte")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", s, got, want)
		}
	})
}

func BenchmarkRuneCount(b *testing.B) {
	s := ""
	for len(s) < 2048 {
		s += "The guard judges every prompt before the provider sees it. "
	}
	b.SetBytes(int64(len(s)))
	b.Run("runeCount", func(b *testing.B) {
		for b.Loop() {
			_ = runeCount(s)
		}
	})
	b.Run("RuneCountInString", func(b *testing.B) {
		for b.Loop() {
			_ = utf8.RuneCountInString(s)
		}
	})
}
