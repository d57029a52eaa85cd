package builtin

import (
	"strings"
	"unicode/utf8"
)

// Text as a reader sees it.
//
// A credential, an address or a number can be written so that it reads the same and
// matches nothing: a zero-width space or a soft hyphen between two of its characters, the
// fullwidth or mathematical forms of its letters and digits, a Cyrillic or Greek look-alike
// in place of one of its Latin letters, or the whole of it in Unicode tag characters
// (U+E0020–E007E, invisible when rendered, read by models as ASCII: "ASCII smuggling"). A
// model told to leak a key can write it that way, and whoever reads the answer gets the key.
//
// So when a text holds any of those characters, the pass reads a folded view of it: invisible
// characters and combining marks (a line under or through each letter) left out, fullwidth, mathematical and circled letters and digits as ASCII (case
// kept), and a look-alike of another script as the Latin letter when it stands next to an
// ASCII letter or digit (inside a Latin word or token; a Cyrillic or Greek word keeps its
// letters, and accented Latin letters are never folded). Spans and Open are mapped back to
// the text: a span covers every byte of what it matched, the invisible characters between
// them included. Tag characters are invisible too, and left out of the view (a few put
// inside a word hide nothing); each run of them is also scanned on its own as the ASCII text
// it stands for, and what is found there is reported over the tag characters that spell it.
// Text after a right-to-left override (U+202E, up to its pop, an isolate's pop, another
// override or the line's end) is shown in the opposite order: it is also scanned reversed,
// as it is shown, and what is found there is reported over the characters that show it.
// Both kinds of run are read with the 64 bytes before them, the words a reader sees with
// them (hiddenRuns).
//
// A text without such characters (almost every text) is scanned as it is: finding that out
// reads 32 bytes at a time while they are ASCII, and looks at a Greek or Cyrillic letter's
// neighbours only.
//
// Streaming: the view of a prefix is a prefix of the view of the whole text, except at its
// end. A look-alike there is folded or not by the byte after it, and an incomplete UTF-8
// sequence there may be an invisible character: with Input.More both are left out of the
// view, so the text is pending from them on and they are decided when the text after them
// has arrived. A run of tag characters, or an override's text, that reaches the end is
// pending from its start (the override's) until it ends.
//
// Not folded: characters spread over lines or separated by spaces, look-alikes that do not
// touch an ASCII letter or digit, and the other bidirectional controls (embeddings and
// isolates do not reorder Latin letters and digits; they are left out).

// foldedView is the folded text and how its offsets map back.
type foldedView struct {
	s string
	// breaks are the offsets where the view and the text stop advancing together, sorted by
	// at: from view offset at on, the text's offset is orig + (k - at).
	breaks []foldBreak
	// hidden are the runs of the text that read otherwise than they are stored: runs of tag
	// characters and text after a right-to-left override, by their offsets in it.
	hidden []hiddenRun
}

// hiddenRun is a run of tag characters (U+E0020–E007E, four bytes each) at s[start:end], or,
// with reversed, the text s[start:end] after a right-to-left override at s[mark:start],
// which a reader sees in the opposite order.
type hiddenRun struct {
	mark, start, end int
	reversed         bool
}

// overrideEnd returns where the text a right-to-left override begins at i stops being shown
// reversed: a pop of the override or of an isolate, a line's end, another override, or the
// end of s.
func overrideEnd(s string, i int) int {
	for i < len(s) {
		if s[i] == '\n' {
			return i
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0x202C || r == 0x2069 || r == 0x202E {
			return i
		}
		i += size
	}
	return i
}

// isTag reports a tag character that stands for a printable ASCII character.
func isTag(r rune) bool { return r >= 0xE0020 && r <= 0xE007E }

// foldBreak is a point where the offsets of the view and the text stop advancing together.
// scan folds only texts below 2 GiB (maxFolded), so 32 bits hold an offset.
type foldBreak struct{ at, orig int32 }

// maxFolded is the longest text scan reads through a view; a longer one is scanned as it is.
const maxFolded = 1<<31 - 1

// orig maps an offset of the view to the text.
func (v *foldedView) orig(k int) int {
	lo, hi := 0, len(v.breaks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(v.breaks[m].at) <= k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return k
	}
	b := v.breaks[lo-1]
	return int(b.orig) + k - int(b.at)
}

// foldAt returns the offset of the first rune of s that the view changes, or -1 when the
// view is s itself.
func foldAt(s string, more bool) int {
	const high = 0x8080808080808080
	for i := 0; i < len(s); {
		if i+32 <= len(s) && (load8(s, i)|load8(s, i+8)|load8(s, i+16)|load8(s, i+24))&high == 0 {
			i += 32
			continue
		}
		b := s[i]
		if b < utf8.RuneSelf {
			i++
			continue
		}
		size := utf8Size[b]
		if i+int(size) > len(s) || size == 0 {
			if more && !utf8.FullRuneInString(s[i:]) {
				return i // an incomplete character at the end of a stream
			}
			i++
			continue
		}
		switch {
		case b >= 0xCE && b <= 0xD4: // Greek and Cyrillic: look-alikes
			// A run of look-alikes is folded when its first has an ASCII letter or digit
			// before it or its last one after it (or, in a stream, is the last rune yet).
			// Which letter this is matters only there, which spares Greek and Cyrillic text
			// a lookup per letter.
			touches := i > 0 && isAlnum(s[i-1]) || i+2 < len(s) && isAlnum(s[i+2]) || more && i+2 == len(s)
			if touches && lookAlike(rune(b&0x1F)<<6|rune(s[i+1]&0x3F)) != 0 {
				for i >= 2 && s[i-2] >= 0xCE && s[i-2] <= 0xD4 && lookAlike(rune(s[i-2]&0x1F)<<6|rune(s[i-1]&0x3F)) != 0 {
					i -= 2 // the run's first look-alike
				}
				return i
			}
			i += 2
		case foldLead[b]:
			r, n := utf8.DecodeRuneInString(s[i:])
			if _, k := foldRune(r); k != foldKeep {
				return i
			}
			i += n
		default:
			i += int(size)
		}
	}
	return -1
}

// utf8Size is the length of the UTF-8 sequence a byte begins (0: not a first byte).
var utf8Size = func() (t [256]uint8) {
	for b := range 256 {
		switch {
		case b < 0x80:
			t[b] = 1
		case b >= 0xC2 && b <= 0xDF:
			t[b] = 2
		case b >= 0xE0 && b <= 0xEF:
			t[b] = 3
		case b >= 0xF0 && b <= 0xF4:
			t[b] = 4
		}
	}
	return t
}()

// foldLead marks the first bytes of the runes foldRune folds (Greek and Cyrillic apart).
var foldLead = func() (t [256]bool) {
	for r := rune(0x80); r <= 0xE01EF; r++ {
		if _, k := foldRune(r); k != foldKeep {
			var b [utf8.UTFMax]byte
			utf8.EncodeRune(b[:], r)
			t[b[0]] = true
		}
	}
	return t
}()

// Kinds of folding of a rune, from foldRune.
const (
	foldKeep  = iota // the rune stays as it is
	foldDrop         // an invisible character: left out
	foldASCII        // read as the ASCII byte foldRune returns
)

// foldRune says how the view folds r, whatever stands around it.
func foldRune(r rune) (byte, int) {
	switch {
	case invisible(r): // tag characters and overrides too: hiddenRuns reads their runs
		return 0, foldDrop
	case combiningMark(r):
		return 0, foldDrop
	case r >= 0xFF01 && r <= 0xFF5E: // fullwidth forms of ASCII
		return byte(r - 0xFF00 + 0x20), foldASCII
	case r >= 0x1D400 && r <= 0x1D6A3: // mathematical letters: 13 styles of A-Z a-z
		k := (r - 0x1D400) % 52
		if k < 26 {
			return byte('A' + k), foldASCII
		}
		return byte('a' + k - 26), foldASCII
	case r >= 0x1D7CE && r <= 0x1D7FF: // mathematical digits: five styles of 0-9
		return byte('0' + (r-0x1D7CE)%10), foldASCII
	case r >= 0x24B6 && r <= 0x24CF: // circled capitals
		return byte('A' + r - 0x24B6), foldASCII
	case r >= 0x24D0 && r <= 0x24E9: // circled small letters
		return byte('a' + r - 0x24D0), foldASCII
	}
	return 0, foldKeep
}

// combiningMark reports a combining mark of the blocks that "fancy text" draws with: a line
// under, over or through a letter, an accent, an enclosing circle. Put after each character
// of a token, they leave it readable and not the same bytes. A text in decomposed form
// (NFD) writes its accents with them too; its letters are read without them.
func combiningMark(r rune) bool {
	return r >= 0x0300 && r <= 0x036F || r >= 0x1AB0 && r <= 0x1AFF || r >= 0x1DC0 && r <= 0x1DFF ||
		r >= 0x20D0 && r <= 0x20FF || r >= 0xFE20 && r <= 0xFE2F
}

// lookAlike returns the ASCII letter that a Cyrillic or Greek letter is drawn as, case
// kept, or 0. Only letters that are drawn the same in common fonts are listed.
func lookAlike(r rune) byte {
	if r < lookAlikeFirst || r > lookAlikeLast {
		return 0
	}
	return lookAlikeTable[r-lookAlikeFirst]
}

// lookAlikeRun returns the end of the run of look-alikes that begins at i.
func lookAlikeRun(s string, i int) int {
	// Every look-alike is two bytes long, with a first byte in 0xCE–0xD4.
	for i+1 < len(s) && s[i] >= 0xCE && s[i] <= 0xD4 && lookAlike(rune(s[i]&0x1F)<<6|rune(s[i+1]&0x3F)) != 0 {
		i += 2
	}
	return i
}

// lookAlikeTable is lookAlike over the Greek and Cyrillic blocks.
var lookAlikeTable = func() (t [lookAlikeLast - lookAlikeFirst + 1]byte) {
	k := 0
	for _, r := range lookAlikeRunes {
		t[r-lookAlikeFirst] = lookAlikeLetters[k]
		k++
	}
	return t
}()

const lookAlikeFirst, lookAlikeLast = 0x0391, 0x051D

// lookAlikeRunes and lookAlikeLetters pair each look-alike with its Latin letter.
const (
	lookAlikeRunes   = "АВЕКМНОРСТХУЅІЈԚԜаеорсухѕіјԁһԛԝӏΑΒΕΖΗΙΚΜΝΟΡΤΥΧονα"
	lookAlikeLetters = "ABEKMHOPCTXYSIJQWaeopcyxsijdhqwlABEZHIKMNOPTYXova"
)

// foldView returns the view of s that the pass reads, from the first rune that foldAt
// found (at >= 0).
func foldView(s string, at int, more bool) foldedView {
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:at])
	var v foldedView
	var breaks []foldBreak
	mark := func(orig int) {
		k := int32(b.Len())
		if n := len(breaks); n > 0 && breaks[n-1].at == k {
			breaks[n-1].orig = int32(orig)
			return
		}
		breaks = append(breaks, foldBreak{k, int32(orig)})
	}
	for i := at; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		if n := int(utf8Size[c]); !foldLead[c] && (c < 0xCE || c > 0xD4) && n > 1 && i+n <= len(s) {
			b.WriteString(s[i : i+n]) // a rune the view keeps, whatever it is
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 && more && !utf8.FullRuneInString(s[i:]) {
			break // decided by the bytes still to come
		}
		a, kind := foldRune(r)
		if kind == foldKeep && lookAlike(r) != 0 {
			// A run of look-alikes is folded when it touches an ASCII letter or digit.
			e := lookAlikeRun(s, i)
			w := b.String()
			prev := len(w) > 0 && isAlnum(w[len(w)-1])
			next := e < len(s) && isAlnum(s[e])
			if !prev && !next && more && e == len(s) {
				break // decided by the byte still to come
			}
			if !prev && !next {
				b.WriteString(s[i:e])
				i = e
				continue
			}
			for i < e {
				r, size = utf8.DecodeRuneInString(s[i:])
				mark(i)
				b.WriteByte(lookAlike(r))
				mark(i + size)
				i += size
			}
			continue
		}
		switch kind {
		case foldKeep:
			b.WriteString(s[i : i+size])
		case foldDrop:
			mark(i + size)
			if isTag(r) {
				if n := len(v.hidden); n > 0 && !v.hidden[n-1].reversed && v.hidden[n-1].end == i {
					v.hidden[n-1].end = i + size
				} else {
					v.hidden = append(v.hidden, hiddenRun{mark: i, start: i, end: i + size})
				}
			} else if r == 0x202E {
				v.hidden = append(v.hidden, hiddenRun{mark: i, start: i + size, end: overrideEnd(s, i+size), reversed: true})
			}
		case foldASCII:
			mark(i)
			b.WriteByte(a)
			mark(i + size)
		}
		i += size
	}
	v.s, v.breaks = b.String(), breaks
	return v
}
