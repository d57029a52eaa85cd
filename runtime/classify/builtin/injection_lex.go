package builtin

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// The prompt-injection signal detector (issue 42) reads the text as a stream of tokens: words
// and single punctuation marks. A word is normalised as it is read, so that the rules see one
// spelling for many: ASCII case is folded, Unicode look-alikes of Latin letters (Cyrillic,
// Greek, fullwidth, mathematical, circled, accented letters) are read as the letter they look
// like, zero-width and other invisible characters inside a word are skipped, a hyphen or an
// apostrophe inside a word is dropped ("role-play" is "roleplay", "don't" is "dont"), and in a
// word that mixes letters and digits the leetspeak digits are read as letters ("1gn0r3").

// maxNormWord is the longest normalised word the lexicon knows; a longer word is no word of it.
const maxNormWord = 24

// Token kinds.
const (
	tkWord uint8 = iota + 1
	tkPunct
)

// itok is one token.
type itok struct {
	start, end int32
	kind       uint8
	// ch is the punctuation mark (quotes and dashes of any script folded to ASCII).
	ch byte
	// nl is how many line breaks the white space before the token holds (2 at most); ws is
	// whether there was any, wsLen how many bytes (255 at most).
	nl    uint8
	ws    bool
	wsLen uint8
	// open says the word reaches the end of a text that may go on: it may still grow.
	open bool
	// leet says the word mixed letters and digits and its digits were read as letters.
	leet  bool
	n     uint8
	norm  [maxNormWord]byte
	class uint64 // lexicon classes, filled by the engine
	rules []int  // the rules the word can begin, filled by the engine
	// looked says class and rules are filled (the engine looks a word up on first use).
	looked bool
}

// lexer reads tokens from s.
type lexer struct {
	s    string
	pos  int
	more bool
}

// Byte classes of the lexer.
const (
	lcOther  = iota // punctuation
	lcSpace         // white space
	lcLetter        // ASCII letter
	lcDigit         // ASCII digit
	lcHigh          // a byte of a multi-byte rune
)

var lexClass = func() (t [256]uint8) {
	for b := range 256 {
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z':
			t[b] = lcLetter
		case b >= '0' && b <= '9':
			t[b] = lcDigit
		case b == ' ', b == '\t', b == '\n', b == '\r', b == '\f', b == '\v':
			t[b] = lcSpace
		case b >= utf8.RuneSelf:
			t[b] = lcHigh
		}
	}
	return
}()

// leetLetter is the letter a digit stands for in leetspeak ('1' is tried as 'i' first, then
// 'l', by the lexicon lookup).
var leetLetter = [10]byte{'o', 'i', 'z', 'e', 'a', 's', 'g', 't', 'b', 'g'}

// invisible reports a rune that renders as nothing and may be put inside a word to hide it.
func invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x180E:
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F:
		return true
	case r == 0x3164, r == 0xFEFF, r == 0xFFA0, r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0000 && r <= 0xE007F, r >= 0xE0100 && r <= 0xE01EF:
		return true
	}
	return false
}

// foldLetter returns the ASCII letter (lower case) that r looks like, or 0.
func foldLetter(r rune) byte {
	switch {
	case r < utf8.RuneSelf:
		b := byte(r)
		if isAlpha(b) {
			return lower(b)
		}
		return 0
	case r >= 0xFF21 && r <= 0xFF3A: // fullwidth A-Z
		return byte('a' + r - 0xFF21)
	case r >= 0xFF41 && r <= 0xFF5A: // fullwidth a-z
		return byte('a' + r - 0xFF41)
	case r >= 0x1D400 && r <= 0x1D6A3: // mathematical alphanumeric letters, 52 a style
		k := (r - 0x1D400) % 52
		if k < 26 {
			return byte('a' + k)
		}
		return byte('a' + k - 26)
	case r >= 0x24B6 && r <= 0x24CF: // circled capitals
		return byte('a' + r - 0x24B6)
	case r >= 0x24D0 && r <= 0x24E9: // circled small letters
		return byte('a' + r - 0x24D0)
	case r >= 0x1F130 && r <= 0x1F149: // squared capitals
		return byte('a' + r - 0x1F130)
	case r >= 0x1F150 && r <= 0x1F169: // negative circled capitals
		return byte('a' + r - 0x1F150)
	case r >= 0x1F170 && r <= 0x1F189: // negative squared capitals
		return byte('a' + r - 0x1F170)
	case r >= 0x1F1E6 && r <= 0x1F1FF: // regional indicators
		return byte('a' + r - 0x1F1E6)
	}
	if r < confusableLow {
		return confusablesLow[r] // Latin-1, Latin Extended, Greek, Cyrillic, Armenian…: no search
	}
	if b, ok := confusables.letter(r); ok {
		return b
	}
	return 0
}

// confusableLow bounds the runes of two bytes in UTF-8, whose confusables confusablesLow
// holds in a table: the letters of Greek and Cyrillic text are looked up once each.
const confusableLow = 0x800

// confusablesLow is confusables.letter for the runes below confusableLow (0: none).
var confusablesLow = func() (t [confusableLow]byte) {
	for r := rune(0); r < confusableLow; r++ {
		if b, ok := confusables.letter(r); ok {
			t[r] = b
		}
	}
	return t
}()

// confusables are the letters of other scripts, and the accented Latin letters, that look
// like an ASCII letter (Unicode's confusables for the Latin alphabet, the common ones).
var confusables = func() (t confusableTable) {
	for _, set := range confusableSets {
		for _, r := range set.runes {
			// Insert after the entries of smaller or equal runes; a rune listed again takes
			// the later letter (below).
			k := t.n
			for k > 0 && rune(t.e[k-1]>>8) > r {
				k--
			}
			copy(t.e[k+1:t.n+1], t.e[k:t.n])
			t.e[k] = uint32(r)<<8 | uint32(set.letter)
			t.n++
		}
	}
	// Keep the last entry of each rune (the later set's letter, as a map's assignment would).
	n := 0
	for k := range t.n {
		if n > 0 && t.e[n-1]>>8 == t.e[k]>>8 {
			n--
		}
		t.e[n] = t.e[k]
		n++
	}
	t.n = n
	return t
}()

// confusableTable is a sorted array of rune<<8 | letter, built at init in static storage.
type confusableTable struct {
	n int
	e [240]uint32
}

// letter returns the ASCII letter r is listed under, and whether it is.
func (t *confusableTable) letter(r rune) (byte, bool) {
	lo, hi := 0, t.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rune(t.e[m]>>8) < r {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < t.n && rune(t.e[lo]>>8) == r {
		return byte(t.e[lo]), true
	}
	return 0, false
}

// confusableSets are the runes of confusables, by the letter they look like.
var confusableSets = [...]struct {
	letter byte
	runes  string
}{
	{'a', "аАαΑаàáâãäåāăąǎȁȃȧаɑᴀ"},
	{'b', "ВвβΒЬƅḃ"},
	{'c', "сСϲϹçćĉċčᴄ"},
	{'d', "ԁďđḋɗ"},
	{'e', "еЕεΕèéêëēĕėęěȅȇɛҽᴇ"},
	{'f', "ғϝḟ"},
	{'g', "ɡġğĝģǧ"},
	{'h', "һНΗհḣĥħ"},
	{'i', "іІιΙìíîïĩīĭįıǐȉȋɪӏ"},
	{'j', "јЈϳĵ"},
	{'k', "кКκΚķḳᴋ"},
	{'l', "ⅼĺļľŀłӀ"},
	{'m', "мМΜṁᴍ"},
	{'n', "ոΝñńņňŉṅηп"},
	{'o', "оОοΟοòóôõöøōŏőǒȍȏσ০٥ᴏ"},
	{'p', "рРρΡṗᴘ"},
	{'q', "ԛզ"},
	{'r', "гŕŗřȑȓṙᴦ"},
	{'s', "ѕЅśŝşšșṡ"},
	{'t', "тТτΤţťŧțṫᴛ"},
	{'u', "υùúûüũūŭůűųǔȕȗսᴜ"},
	{'v', "νѵᴠ"},
	{'w', "ѡԝẁẃẅŵᴡ"},
	{'x', "хХχΧ×"},
	{'y', "уУγΥýÿŷẏү"},
	{'z', "ΖźżžẓᴢΖ"},
}

// next reads the next token; ok is false at the end of the text.
func (lx *lexer) next(t *itok) bool {
	s := lx.s
	i := lx.pos
	t.nl, t.ws, t.wsLen = 0, false, 0
	from := i
	// White space and invisible runes between tokens.
	for i < len(s) {
		c := lexClass[s[i]]
		if c == lcSpace {
			if s[i] == '\n' && t.nl < 2 {
				t.nl++
			}
			t.ws = true
			i++
			continue
		}
		if c == lcHigh {
			r, n := utf8.DecodeRuneInString(s[i:])
			if invisible(r) || r == 0x00A0 || r == 0x2028 || r == 0x2029 || r >= 0x2000 && r <= 0x200A || r == 0x3000 {
				if r == 0x2028 || r == 0x2029 {
					t.nl = 2
				}
				t.ws = t.ws || !invisible(r)
				i += n
				continue
			}
		}
		break
	}
	if i >= len(s) {
		lx.pos = i
		return false
	}
	t.wsLen = uint8(min(255, i-from))
	t.start = int32(i)
	t.open, t.leet = false, false
	b := s[i]
	c := lexClass[b]
	if c == lcOther || c == lcHigh && !lx.wordRune(i) {
		// One punctuation mark (a rune).
		t.kind = tkPunct
		n := 1
		t.ch = b
		if c == lcHigh {
			var r rune
			r, n = utf8.DecodeRuneInString(s[i:])
			t.ch = foldPunct(r)
			if r == utf8.RuneError && n <= 1 && lx.more && !utf8.FullRuneInString(s[i:]) {
				t.open = true
				n = len(s) - i
			}
		}
		if b == '.' && i+1 == len(s) && lx.more {
			t.open = true // a dot at the end: a sentence end, or a dot inside an address
		}
		t.end = int32(i + n)
		lx.pos = i + n
		return true
	}
	t.kind = tkWord
	t.n = 0
	letters, digits := 0, 0
	over := false
	put := func(ch byte) {
		if int(t.n) < maxNormWord {
			t.norm[t.n] = ch
			t.n++
		} else {
			over = true
		}
	}
	// A run of ASCII letters, eight at a time while the word has room for them (the bytes
	// stored past a non-letter are overwritten or lie past t.n), then as below.
	for i+8 <= len(s) && int(t.n)+8 <= maxNormWord {
		x := load8(s, i)
		k := 8
		if bad := nonLetters8(x); bad != 0 {
			k = bits.TrailingZeros64(bad) >> 3
		}
		binary.LittleEndian.PutUint64(t.norm[t.n:], x|0x2020202020202020)
		t.n += uint8(k)
		letters += k
		i += k
		if k < 8 {
			break
		}
	}
	for i < len(s) {
		b := s[i]
		switch lexClass[b] {
		case lcLetter:
			put(lower(b))
			letters++
			i++
			continue
		case lcDigit:
			put(b)
			digits++
			i++
			continue
		case lcHigh:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 && !utf8.FullRuneInString(s[i:]) {
				if lx.more {
					t.open = true
				}
				i = len(s)
				continue
			}
			if invisible(r) {
				i += n
				continue
			}
			if r == '’' && i+n < len(s) && lx.letterAt(i+n) && (letters+digits) > 0 {
				i += n // an apostrophe inside a word is dropped
				continue
			}
			if l := foldLetter(r); l != 0 {
				put(l)
				letters++
				i += n
				continue
			}
		case lcOther:
			// An apostrophe or hyphen between letters, '@' or '$' inside a word (leetspeak for
			// a and s) and '_' between parts of a name stay in the word.
			if (b == '\'' || b == '-' || b == '_') && letters+digits > 0 && i+1 < len(s) && lx.letterAt(i+1) {
				if b == '_' {
					put('_')
				}
				i++
				continue
			}
			if (b == '@' || b == '$') && letters > 0 && i+1 < len(s) && lexClass[s[i+1]] == lcLetter {
				if b == '@' {
					put('a')
				} else {
					put('s')
				}
				letters++
				i++
				continue
			}
			if lx.more && i+1 == len(s) && (b == '\'' || b == '-' || b == '_' || b == '@' || b == '$') {
				t.open = true
			}
		}
		break
	}
	if i >= len(s) && lx.more {
		t.open = true
	}
	t.end = int32(i)
	lx.pos = i
	if over {
		t.n = 0 // too long to be a word of the lexicon
	}
	if letters > 0 && digits > 0 && digits <= letters+1 && !twoDigits(t.norm[:t.n]) {
		for k := range t.n {
			if d := t.norm[k]; d >= '0' && d <= '9' {
				t.norm[k] = leetLetter[d-'0']
				t.leet = true
			}
		}
	}
	return true
}

// letterAt reports whether a letter (of any script the lexer folds) begins at i.
func (lx *lexer) letterAt(i int) bool {
	b := lx.s[i]
	if lexClass[b] == lcLetter || lexClass[b] == lcDigit {
		return true
	}
	if lexClass[b] != lcHigh {
		return false
	}
	r, _ := utf8.DecodeRuneInString(lx.s[i:])
	return foldLetter(r) != 0
}

// wordRune reports whether the rune at i begins a word: a letter the lexer folds.
func (lx *lexer) wordRune(i int) bool {
	r, n := utf8.DecodeRuneInString(lx.s[i:])
	if r == utf8.RuneError && n <= 1 {
		return false
	}
	return foldLetter(r) != 0
}

// foldPunct folds the quotes, dashes and brackets of Unicode to their ASCII mark, and every
// other rune to 0x80 (a mark that is neither).
func foldPunct(r rune) byte {
	switch r {
	case '“', '”', '„', '‟', '«', '»', '＂':
		return '"'
	case '‘', '’', '‚', '‛', '‹', '›', '＇':
		return '\''
	case '–', '—', '―', '‐', '‑', '−':
		return '-'
	case '…':
		return '.'
	case '：', '﹕':
		return ':'
	case '［', '【':
		return '['
	case '］', '】':
		return ']'
	case '＜', '〈':
		return '<'
	case '＞', '〉':
		return '>'
	case '｜':
		return '|'
	}
	return 0x80
}

// twoDigits reports whether w begins with two digits (a number with a unit, "330ft", not
// leetspeak).
func twoDigits(w []byte) bool {
	return len(w) >= 2 && isDigit(w[0]) && isDigit(w[1])
}

// wordTable is a read-only open-addressing hash table of normalised words (at most
// maxNormWord bytes): the engine's word lookups on the hot path, without a map's string
// hashing. A slot is 4 bytes: the entry's index, the word's length and 8 bits of its hash,
// so that a probe compares a word only when those agree; the words and their values are
// dense slices, in the order they were added (an entry's index is its order).
type wordTable[V any] struct {
	mask  uint32
	slots []uint32 // 0: empty; else index+1 (bits 0-15) | length<<16 | tag<<24
	keys  []string
	vals  []V
}

// wordHash hashes a normalised word (FNV-1a, seeded with its length).
func wordHash(w []byte) uint32 {
	h := uint32(2166136261) ^ uint32(len(w))
	for _, b := range w {
		h ^= uint32(b)
		h *= 16777619
	}
	return h ^ h>>15
}

// wordSlot is the slot of entry i, a word of n bytes of hash h.
func wordSlot(i, n int, h uint32) uint32 {
	return uint32(i+1) | uint32(n)<<16 | (h>>24|1)<<24
}

// newWordTable returns an empty table sized for about n words.
func newWordTable[V any](n int) wordTable[V] {
	var wt wordTable[V]
	wt.keys = make([]string, 0, n)
	wt.vals = make([]V, 0, n)
	wt.grow(n)
	return wt
}

// grow makes the slots at least twice as many as n words (half full at most), and places
// the entries again.
func (wt *wordTable[V]) grow(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	if size <= len(wt.slots) {
		return
	}
	wt.mask, wt.slots = uint32(size-1), make([]uint32, size)
	for i, w := range wt.keys {
		h := wordHash([]byte(w))
		for k := h & wt.mask; ; k = (k + 1) & wt.mask {
			if wt.slots[k] == 0 {
				wt.slots[k] = wordSlot(i, len(w), h)
				break
			}
		}
	}
}

// add returns the index of w, adding it with the zero value if it is not there (at init).
func (wt *wordTable[V]) add(w string) int {
	if len(w) == 0 || len(w) > maxNormWord {
		panic("builtin: word table: bad word " + w)
	}
	if i := wt.index([]byte(w)); i >= 0 {
		return i
	}
	i := len(wt.keys)
	if i >= 1<<16-1 {
		panic("builtin: word table: too many words")
	}
	wt.keys = append(wt.keys, w)
	var zero V
	wt.vals = append(wt.vals, zero)
	if 2*len(wt.keys) > len(wt.slots) {
		wt.grow(len(wt.keys)) // places w too
		return i
	}
	h := wordHash([]byte(w))
	for k := h & wt.mask; ; k = (k + 1) & wt.mask {
		if wt.slots[k] == 0 {
			wt.slots[k] = wordSlot(i, len(w), h)
			return i
		}
	}
}

// index returns the index of w, or -1.
func (wt *wordTable[V]) index(w []byte) int {
	if len(w) == 0 || len(w) > maxNormWord {
		return -1
	}
	h := wordHash(w)
	want := wordSlot(0, len(w), h) &^ 0xFFFF
	for k := h & wt.mask; ; k = (k + 1) & wt.mask {
		sl := wt.slots[k]
		if sl == 0 {
			return -1
		}
		if sl&^0xFFFF == want {
			if i := int(sl&0xFFFF) - 1; wt.keys[i] == string(w) {
				return i
			}
		}
	}
}

// get returns the value of w, as a map lookup would.
func (wt *wordTable[V]) get(w []byte) (V, bool) {
	if i := wt.index(w); i >= 0 {
		return wt.vals[i], true
	}
	var zero V
	return zero, false
}
