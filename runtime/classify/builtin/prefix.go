package builtin

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Pending custom patterns (see pending.go). A pattern's match that text still to come could
// change starts at a position from which the rest of the text is a prefix of a string the
// pattern matches — a match still arriving, a match whose greedy part could go on, or one
// whose \b or $ after it is still to come. prefixLanguage rewrites the pattern into one that
// matches exactly those prefixes (or a few more), so the earliest such position is the
// leftmost match of that pattern anchored at the end of the text.

// prefixLanguage returns an expression that matches every prefix of every string re matches
// (the empty string included). Assertions are kept where text follows them and dropped where
// the prefix ends, since the text that decides them is still to come; that accepts a few
// strings that are not prefixes, which only makes Open earlier.
func prefixLanguage(re *syntax.Regexp) *syntax.Regexp {
	empty := &syntax.Regexp{Op: syntax.OpEmptyMatch}
	switch re.Op {
	case syntax.OpLiteral:
		return literalPrefixes(re.Rune, re.Flags)
	case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return questOf(re)
	case syntax.OpCapture, syntax.OpQuest:
		return prefixLanguage(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		// Prefixes of x* and x+: some whole x, then a prefix of one more.
		return concatOf(&syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{re.Sub[0]}, Flags: re.Flags}, prefixLanguage(re.Sub[0]))
	case syntax.OpRepeat:
		rep := &syntax.Regexp{Op: syntax.OpRepeat, Sub: []*syntax.Regexp{re.Sub[0]}, Min: 0, Max: re.Max, Flags: re.Flags}
		if re.Max < 0 {
			rep = &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{re.Sub[0]}, Flags: re.Flags}
		}
		return concatOf(rep, prefixLanguage(re.Sub[0]))
	case syntax.OpConcat:
		// Prefixes of a b c: a prefix of a, or a then a prefix of b c. Past maxExact parts,
		// up to as many runes as the rest can match, whatever they are.
		subs := re.Sub
		if len(subs) == 0 {
			return empty
		}
		var acc *syntax.Regexp
		if len(subs) > maxExact {
			n, bounded := maxRunes(&syntax.Regexp{Op: syntax.OpConcat, Sub: subs[maxExact:]})
			if !bounded {
				n = -1
			}
			subs, acc = subs[:maxExact], anyRunes(n)
		} else {
			subs, acc = subs[:len(subs)-1], prefixLanguage(subs[len(subs)-1])
		}
		for i := len(subs) - 1; i >= 0; i-- {
			acc = altOf(prefixLanguage(subs[i]), concatOf(subs[i], acc))
		}
		return acc
	case syntax.OpAlternate:
		alt := &syntax.Regexp{Op: syntax.OpAlternate}
		for _, sub := range re.Sub {
			alt.Sub = append(alt.Sub, prefixLanguage(sub))
		}
		return alt
	}
	// The empty match, no match, and the assertions (^ $ \A \z \b \B).
	return empty
}

// maxExact is how many runes of a literal, or parts of a concatenation, prefixLanguage
// spells out; the parser limits how deeply an expression may nest, and each one nests a
// level deeper.
const maxExact = 48

// literalPrefixes is the prefix language of a literal: (?:r1(?:r2(?:r3)?)?)? for its first
// maxExact runes; after them, up to as many runes as the literal has left, whatever they are.
func literalPrefixes(runes []rune, flags syntax.Flags) *syntax.Regexp {
	n := min(len(runes), maxExact)
	var p *syntax.Regexp
	if len(runes) > n {
		p = anyRunes(len(runes) - n)
	}
	for i := n - 1; i >= 0; i-- {
		lit := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune{runes[i]}, Flags: flags}
		if p != nil {
			lit = concatOf(lit, p)
		}
		p = questOf(lit)
	}
	if p == nil {
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	}
	return p
}

// anyRunes matches up to n runes of any kind, or any number when n is negative or beyond
// what a repetition may count.
func anyRunes(n int) *syntax.Regexp {
	anyRune := &syntax.Regexp{Op: syntax.OpAnyChar}
	if n < 0 || n > 1000 {
		return &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{anyRune}}
	}
	return &syntax.Regexp{Op: syntax.OpRepeat, Sub: []*syntax.Regexp{anyRune}, Min: 0, Max: n}
}

func concatOf(a, b *syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{a, b}}
}

func altOf(a, b *syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpAlternate, Sub: []*syntax.Regexp{a, b}}
}

func questOf(a *syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpQuest, Sub: []*syntax.Regexp{a}}
}

// compilePending compiles the prefix language of tree (as parsed, with its repetitions
// still counted) anchored at the end of the text: once to search for its leftmost match, and
// once anchored at a position too, with the rune before it as context (as withPrev), for
// patterns with a literal prefix (see open). A pattern whose prefix language is too deep or
// too large to compile (a concatenation of hundreds of parts) keeps none, and open falls
// back to the positions its matches can begin at.
func (p *pattern) compilePending(tree *syntax.Regexp) {
	lang := prefixLanguage(tree).String()
	pending, err1 := regexp.Compile(`(?:` + lang + `)\z`)
	at, err2 := regexp.Compile(`^(?:` + lang + `)\z`)
	prev, err3 := regexp.Compile(`^(?s:.)(?:` + lang + `)\z`)
	if err1 == nil && err2 == nil && err3 == nil {
		p.pending, p.pendingAt, p.pendingPrev = pending, at, prev
	}
}

// pendsAt reports whether the rest of s from c is a prefix of a match.
func (p *pattern) pendsAt(s string, c int) bool {
	if c == 0 {
		return p.pendingAt.MatchString(s)
	}
	_, n := utf8.DecodeLastRuneInString(s[:c])
	return p.pendingPrev.MatchString(s[c-n:])
}

// open returns the earliest position from which the rest of s is a prefix of a match of the
// pattern. A prefix that is not empty begins with one of the pattern's first bytes, so the
// search starts at the first of those, with the rune before it as context for \b and ^ (that
// rune is not a first byte, so no prefix starts there). A bounded pattern's prefix has at
// most longest runes, so the search looks only at the last UTFMax·(longest+1) bytes; an
// unbounded pattern searches from the start of the text.
func (p *pattern) open(s string) int {
	// A rune cut by the stream is not one the pattern can read yet: search the text before it.
	// The prefixes are closed under shortening, so that finds every position the whole rune
	// could be pending from, and the cut rune itself may begin a match.
	s = s[:partialRuneStart(s)]
	from := 0
	if p.longest > 0 {
		from = max(0, len(s)-utf8.UTFMax*(p.longest+1))
	}
	if p.pending == nil {
		// Without the prefix language: the earliest position within the longest match
		// (or the hint, for an unbounded pattern) of the end that a match can begin at.
		from = len(s)
		for n := 0; n < p.hint && from > 0; n++ {
			_, size := utf8.DecodeLastRuneInString(s[:from])
			from -= size
		}
		for from < len(s) && (!utf8.RuneStart(s[from]) || !p.first.has(s[from])) {
			from++
		}
		return from
	}
	if p.prefix != "" {
		return p.openAfterPrefix(s, from)
	}
	for from < len(s) && (!utf8.RuneStart(s[from]) || !p.first.has(s[from])) {
		from++
	}
	if from == len(s) {
		return len(s)
	}
	ctx := 0
	if from > 0 {
		_, ctx = utf8.DecodeLastRuneInString(s[:from])
	}
	loc := p.pending.FindStringIndex(s[from-ctx:])
	if loc == nil {
		return len(s) // unreachable: the empty prefix matches at the end
	}
	return from - ctx + loc[0]
}

// openAfterPrefix is open for a pattern whose matches all begin with a literal prefix: a
// prefix of a match is then either a beginning of the literal at the end of the text or
// begins with the literal, so only those positions are tried, in order.
func (p *pattern) openAfterPrefix(s string, from int) int {
	lit := p.prefix
	for j := from; j < len(s); {
		i := strings.Index(s[j:], lit)
		if i < 0 {
			break
		}
		if p.pendsAt(s, j+i) {
			return j + i
		}
		j += i + 1
	}
	for c := max(from, len(s)-len(lit)+1); c < len(s); c++ {
		if strings.HasPrefix(lit, s[c:]) && p.pendsAt(s, c) {
			return c
		}
	}
	return len(s)
}
