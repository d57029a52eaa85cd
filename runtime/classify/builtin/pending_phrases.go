package builtin

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pending phrases: where a prompt-injection phrase or a keyword that text still to come could
// complete, extend or undo begins (see pending.go).

// injectionOpen returns the start of the earliest word from which the text to its end is a
// beginning of a prompt-injection phrase, or a phrase whose match text still to come could
// change; len(s) when there is none.
func injectionOpen(s string) int {
	for p := max(len(s)-injection.reach, runsStart(s, injection.words)); p < len(s); p++ {
		if !isAlpha(s[p]) || !wordStartAt(s, p) {
			continue
		}
		a, b, st := readWord(s, p, true)
		first := injection.byLetter[lower(s[p])-'a']
		for i := range first {
			fw := &first[i]
			switch {
			case st == wordOpen && prefixOfWord(s[a:b], fw.word) && pendPhrases(s, p, fw.phrases),
				st == wordDone && fw.lens>>(b-a)&1 != 0 && len(s)-p <= fw.reach &&
					equalWord(s[a:b], fw.word) && pendPhrases(s, p, fw.phrases):
				return p
			}
		}
		// No skipping to b: a phrase may begin inside this token, after an apostrophe
		// ("x’ignore …"), where the single pass finds a word start too.
	}
	return len(s)
}

// runsStart returns where the n-th run of non-space bytes from the end of s begins; 0 when
// s has fewer.
func runsStart(s string, n int) int {
	i := len(s)
	for ; n > 0; n-- {
		for i > 0 && isSpace(s[i-1]) {
			i--
		}
		for i > 0 && !isSpace(s[i-1]) {
			i--
		}
	}
	return i
}

// pendPhrases reports whether any of the phrases is pending at p (see pendSlots).
func pendPhrases(s string, p int, phrases []int) bool {
	for _, idx := range phrases {
		ph := &injection.phrases[idx]
		if len(s)-p <= ph.reach && pendSlots(s, p, ph.slots, true) {
			return true
		}
	}
	return false
}

// wordStartAt reports whether a word may begin at p: p is 0 or follows a byte that is not part
// of a word (as the single pass decides at a boundary).
func wordStartAt(s string, p int) bool {
	if p == 0 {
		return true
	}
	b := s[p-1]
	if b < utf8.RuneSelf {
		return !isWordByte(b)
	}
	return isBoundaryByte(b) && !lastRuneIsWord(s[:p])
}

// pendSlots reports whether matching slots forwards from pos — the way matchSlots, nextToken
// and clauseEnd read the text, trying every alternative and both ways of an optional slot —
// can read up to the end of the text: then a match that uses these words is not decided
// until more text arrives. at says that pos is the first byte of the first word.
func pendSlots(s string, pos int, slots []injSlot, at bool) bool {
	if len(slots) == 0 {
		return false
	}
	sl := &slots[0]
	if sl.alts[0][0] == "$" {
		a := pos
		for a < len(s) && a-pos < maxInjectionGap && (s[a] == ' ' || s[a] == '\t') {
			a++
		}
		switch {
		case a >= len(s):
			return true
		case !isAlpha(s[a]):
			return pendSlots(s, pos, slots[1:], false)
		}
		e := wordEnd(s, a)
		if e == len(s) {
			return true
		}
		return wordIn(s[a:e], clauseWords) && pendSlots(s, pos, slots[1:], false)
	}
	a, b, st := readWord(s, pos, at)
	switch st {
	case wordGap:
		return true
	case wordOpen:
		for _, alt := range sl.alts {
			if prefixOfWord(s[a:b], alt[0]) {
				return true
			}
		}
	case wordDone:
		for _, alt := range sl.alts {
			if equalWord(s[a:b], alt[0]) && pendWords(s, b, alt[1:], slots[1:]) {
				return true
			}
		}
	}
	return sl.opt && pendSlots(s, pos, slots[1:], at)
}

// pendWords is pendSlots for the rest of a multi-word alternative: its words one after
// another, then the remaining slots.
func pendWords(s string, pos int, words []string, rest []injSlot) bool {
	for _, w := range words {
		a, b, st := readWord(s, pos, false)
		switch st {
		case wordGap:
			return true
		case wordNone:
			return false
		case wordOpen:
			return prefixOfWord(s[a:b], w)
		}
		if !equalWord(s[a:b], w) {
			return false
		}
		pos = b
	}
	return pendSlots(s, pos, rest, false)
}

// Outcomes of readWord.
const (
	wordNone = iota // no token here, whatever follows
	wordDone        // a token that ends at a boundary
	wordOpen        // a token that reaches the end of the text: more text could extend it
	wordGap         // white space up to the end of the text: the token is still to come
)

// readWord reads the token after pos as nextToken does, and says whether the end of the text
// decided it.
func readWord(s string, pos int, at bool) (int, int, int) {
	a := pos
	for !at && a < len(s) && a-pos < maxInjectionGap && isSpace(s[a]) {
		a++
	}
	switch {
	case a >= len(s):
		return 0, 0, wordGap
	case !at && a == pos && s[a] != ':':
		return 0, 0, wordNone
	case s[a] == ':':
		return a, a + 1, wordDone
	case !isAlpha(s[a]):
		return 0, 0, wordNone
	}
	b := a
	for b < len(s) {
		switch {
		case isAlpha(s[b]):
			b++
		case s[b] == '\'' || s[b] == '-':
			if b+1 >= len(s) {
				return a, b, wordOpen
			}
			if !isAlpha(s[b+1]) {
				return a, b, wordDone
			}
			b++
		case s[b] >= utf8.RuneSelf:
			t := s[b:]
			switch {
			case len(t) < len("’") && strings.HasPrefix("’", t), t == "’":
				return a, b, wordOpen // an apostrophe, or the start of a rune, still arriving
			case strings.HasPrefix(t, "’") && isAlpha(t[len("’")]):
				b += len("’")
				continue
			case !utf8.FullRuneInString(t):
				return a, b, wordOpen
			}
			if endsInWord(s, b) {
				return 0, 0, wordNone
			}
			return a, b, wordDone
		default:
			if isWordByte(s[b]) {
				return 0, 0, wordNone
			}
			return a, b, wordDone
		}
	}
	return a, b, wordOpen
}

// prefixOfWord reports whether the text token t, ignoring ASCII case and reading ’ as ', is
// a beginning of the phrase word w.
func prefixOfWord(t, w string) bool {
	i, j := 0, 0
	for i < len(t) && j < len(w) {
		if strings.HasPrefix(t[i:], "’") && w[j] == '\'' {
			i, j = i+len("’"), j+1
			continue
		}
		if lower(t[i]) != w[j] {
			return false
		}
		i, j = i+1, j+1
	}
	return i == len(t)
}

// open returns the start of the earliest keyword that text still to come could complete, or
// cut off by continuing its last word; len(s) when there is none.
func (k *keywordIndex) open(s string) int {
	if k.byFirst == nil {
		return len(s)
	}
	for p := max(0, len(s)-k.maxBytes-utf8.UTFMax); p < len(s); p++ {
		for _, idx := range k.byFirst[s[p]] {
			e := &k.entries[idx]
			if e.wordStart && !wordStartAt(s, p) {
				continue
			}
			if keywordPendingAt(s, p, e) {
				return p
			}
		}
	}
	return len(s)
}

// keywordPendingAt reports whether keyword e at p is not decided yet: the text from p is a
// beginning of it, or it matches up to where the boundary after it is still to come.
func keywordPendingAt(s string, p int, e *kwEntry) bool {
	end := p + len(e.word)
	if end > len(s) {
		return prefixOfKeyword(s[p:], e.word, e.fold)
	}
	cand := s[p:end]
	if e.fold && !strings.EqualFold(cand, e.word) || !e.fold && cand != e.word {
		return false
	}
	if !e.wordEnd {
		return false
	}
	return end == len(s) || s[end] >= utf8.RuneSelf && !utf8.FullRuneInString(s[end:])
}

// prefixOfKeyword reports whether t can begin a text that matches word (folding case when
// fold is set, as strings.EqualFold does): rune by rune, while both have runes, they are
// equal or fold to each other. A rune cut at the end of t, or a pair of runes whose encodings
// differ in length (the match would then be checked on other bytes), count as a beginning.
func prefixOfKeyword(t, word string, fold bool) bool {
	if !fold {
		return strings.HasPrefix(word, t)
	}
	for len(t) > 0 && len(word) > 0 {
		r1, n1 := utf8.DecodeRuneInString(t)
		if r1 == utf8.RuneError && n1 == 1 && !utf8.FullRuneInString(t) {
			return true
		}
		r2, n2 := utf8.DecodeRuneInString(word)
		if !sameFold(r1, r2) {
			return false
		}
		if n1 != n2 {
			return true
		}
		t, word = t[n1:], word[n2:]
	}
	return len(t) == 0
}

// sameFold reports whether r1 and r2 are equal under Unicode simple case folding.
func sameFold(r1, r2 rune) bool {
	if r1 == r2 {
		return true
	}
	for f := unicode.SimpleFold(r1); f != r1; f = unicode.SimpleFold(f) {
		if f == r2 {
			return true
		}
	}
	return false
}
