package builtin

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Custom patterns.
//
// A pattern whose longest match is bounded (at most 256 characters) and whose possible first
// bytes are selective (no more than two lower-case letters or white space, at most 64 bytes)
// is "windowed": the single pass stops at its first bytes, checks its literal prefix, and only
// then runs the regexp anchored on a window just long enough for the longest match, with the
// rune before as context so that \b and (?m)^ see what they would see in the whole text.
// Matches are the ones FindAllStringIndex would return: leftmost-first, non-overlapping.
//
// Any other pattern (unbounded, like ACME-\d+, or starting with almost any byte, like \w{8})
// runs once over the whole text with FindAllStringIndex. Its hint is capped at 256 characters:
// a longer match can have its head released while streaming unless holdBackChars is set
// explicitly.

// byteSet is a set of bytes.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }
func (b *byteSet) union(o byteSet) {
	b[0], b[1], b[2], b[3] = b[0]|o[0], b[1]|o[1], b[2]|o[2], b[3]|o[3]
}
func (b *byteSet) addRange(lo, hi int) {
	for c := lo; c <= hi; c++ {
		b.add(byte(c))
	}
}
func (b *byteSet) count() int {
	n := 0
	for c := range 256 {
		if b.has(byte(c)) {
			n++
		}
	}
	return n
}

// pattern is a compiled custom pattern.
type pattern struct {
	re       *regexp.Regexp // the pattern as authored
	atStart  *regexp.Regexp // ^(?:re), for a window at the start of the text
	withPrev *regexp.Regexp // ^(?s:.)(?:re), for a window with the rune before it
	prefix   string         // literal prefix every match begins with
	first    byteSet
	hint     int // longest match in characters; maxUnboundedRegex when unbounded
	longest  int // longest match in characters when bounded
	windowed bool
	slot     int // index into scanState.customNext
	cat      int16

	// The prefixes of re's matches at the end of the text (prefix.go): searched for,
	// anchored, and anchored after a rune of context.
	pending, pendingAt, pendingPrev *regexp.Regexp
}

// compilePattern compiles and analyses a custom pattern.
func compilePattern(src string) (*pattern, error) {
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	tree, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, err
	}
	raw := tree
	tree = tree.Simplify()
	first, empty := firstBytes(tree)
	if empty {
		return nil, errors.New("matches the empty string")
	}
	p := &pattern{re: re, first: first}
	p.prefix, _ = re.LiteralPrefix()
	longest, bounded := maxRunes(tree)
	p.hint = maxUnboundedRegex
	if bounded && longest <= maxUnboundedRegex {
		p.hint, p.longest = longest, longest
	}
	p.compilePending(raw)
	if bounded && longest <= maxUnboundedRegex && selective(first) {
		if p.atStart, err = regexp.Compile(`^(?:` + src + `)`); err != nil {
			return nil, err
		}
		if p.withPrev, err = regexp.Compile(`^(?s:.)(?:` + src + `)`); err != nil {
			return nil, err
		}
		p.windowed = true
	}
	return p, nil
}

// selective reports whether stopping at these first bytes is cheaper than running the regexp
// over the whole text: few bytes, and not the frequent ones of prose.
func selective(first byteSet) bool {
	frequent := 0
	for c := byte('a'); c <= 'z'; c++ {
		if first.has(c) {
			frequent++
		}
	}
	if first.has(' ') || first.has('\n') {
		frequent += 3
	}
	return frequent <= 2 && first.count() <= 64
}

// firstBytes returns the bytes a match can begin with and whether the expression can match
// the empty string. Non-ASCII runes contribute every byte ≥ 0x80.
func firstBytes(re *syntax.Regexp) (set byteSet, empty bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return set, true
		}
		addRune(&set, re.Rune[0], re.Flags&syntax.FoldCase != 0)
		return set, false
	case syntax.OpCharClass:
		for k := 0; k+1 < len(re.Rune); k += 2 {
			lo, hi := re.Rune[k], re.Rune[k+1]
			if lo < utf8.RuneSelf {
				set.addRange(int(lo), int(min(hi, utf8.RuneSelf-1)))
			}
			if hi >= utf8.RuneSelf {
				set.addRange(0x80, 0xFF)
			}
		}
		return set, false
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		set.addRange(0, 0xFF)
		return set, false
	case syntax.OpCapture, syntax.OpPlus:
		return firstBytes(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		set, _ = firstBytes(re.Sub[0])
		return set, true
	case syntax.OpRepeat:
		set, empty = firstBytes(re.Sub[0])
		return set, empty || re.Min == 0
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			s, e := firstBytes(sub)
			set.union(s)
			if !e {
				return set, false
			}
		}
		return set, true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, e := firstBytes(sub)
			set.union(s)
			empty = empty || e
		}
		return set, empty
	case syntax.OpNoMatch:
		return set, false
	}
	// Empty-width assertions and the empty match.
	return set, true
}

// addRune adds the first UTF-8 byte of r (and of its case variants when fold is set).
func addRune(set *byteSet, r rune, fold bool) {
	var buf [utf8.UTFMax]byte
	utf8.EncodeRune(buf[:], r)
	set.add(buf[0])
	if !fold {
		return
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		utf8.EncodeRune(buf[:], f)
		set.add(buf[0])
	}
}

// maxRunes returns the longest match in runes and whether it is bounded.
func maxRunes(re *syntax.Regexp) (int, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune), true
	case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return 1, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxRunes(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		n, ok := maxRunes(re.Sub[0])
		return 0, ok && n == 0
	case syntax.OpRepeat:
		n, ok := maxRunes(re.Sub[0])
		if !ok || re.Max < 0 && n > 0 {
			return 0, false
		}
		return n * max(re.Max, 0), true
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, sub := range re.Sub {
			n, ok := maxRunes(sub)
			if !ok {
				return 0, false
			}
			if re.Op == syntax.OpConcat {
				total += n
			} else {
				total = max(total, n)
			}
		}
		return total, true
	}
	return 0, true
}

// customAt runs the windowed patterns whose first bytes include s[i].
func (c *Classifier) customAt(sc *scanState, i int) {
	s := sc.s
	for _, p := range c.windowed {
		if i < sc.customNext[p.slot] || !p.first.has(s[i]) || !strings.HasPrefix(s[i:], p.prefix) {
			continue
		}
		// A window holding longest+1 runes whatever their width, so that $ and \b at the end
		// of a match see the real next rune.
		end := min(len(s), i+utf8.UTFMax*(p.longest+1))
		var loc []int
		ctx := 0
		if i == 0 {
			loc = p.atStart.FindStringIndex(s[:end])
		} else {
			_, ctx = utf8.DecodeLastRuneInString(s[:i])
			loc = p.withPrev.FindStringIndex(s[i-ctx : end])
		}
		if loc == nil {
			continue
		}
		e := i - ctx + loc[1]
		sc.add(i, e, p.cat, numDetectors)
		sc.customNext[p.slot] = e
	}
}

// matchAll runs a global pattern over the whole text.
func (p *pattern) matchAll(sc *scanState) {
	for _, loc := range p.re.FindAllStringIndex(sc.s, -1) {
		sc.add(loc[0], loc[1], p.cat, numDetectors)
	}
}

// Keywords.

// kwEntry is one keyword.
type kwEntry struct {
	word      string
	fold      bool
	cat       int16
	wordStart bool // begins with a word rune, so needs a boundary before it
	wordEnd   bool // ends with a word rune, so needs a boundary after it
}

// keywordIndex finds keywords by their first byte.
type keywordIndex struct {
	entries  []kwEntry
	byFirst  *[256][]int // entry indexes by first byte, longest word first
	hint     int
	maxBytes int // longest keyword in bytes
}

func (k *keywordIndex) len() int { return len(k.entries) }

// validWords checks a keyword list; the error names the item relative to the set.
func validWords(words []string) error {
	if len(words) == 0 {
		return errors.New("words: must not be empty")
	}
	for j, w := range words {
		switch {
		case strings.TrimSpace(w) == "":
			return fmt.Errorf("words[%d]: must not be blank", j)
		case !utf8.ValidString(w):
			return fmt.Errorf("words[%d]: must be valid UTF-8", j)
		}
	}
	return nil
}

// add indexes a keyword set.
func (k *keywordIndex) add(set KeywordSet, cat int16) {
	if k.byFirst == nil {
		k.byFirst = new([256][]int)
	}
	for _, w := range set.Words {
		first, _ := utf8.DecodeRuneInString(w)
		last, _ := utf8.DecodeLastRuneInString(w)
		e := kwEntry{word: w, fold: !set.CaseSensitive, cat: cat, wordStart: isWordRune(first), wordEnd: isWordRune(last)}
		idx := len(k.entries)
		k.entries = append(k.entries, e)
		var firsts byteSet
		addRune(&firsts, first, e.fold)
		for b := range 256 {
			if firsts.has(byte(b)) {
				k.byFirst[byte(b)] = append(k.byFirst[byte(b)], idx)
			}
		}
		k.hint = max(k.hint, utf8.RuneCountInString(w))
		k.maxBytes = max(k.maxBytes, len(w))
	}
	for _, l := range k.byFirst {
		slices.SortStableFunc(l, func(x, y int) int { return len(k.entries[y].word) - len(k.entries[x].word) })
	}
}

// build marks the keywords' first bytes: after a boundary for keywords that begin with a word
// rune, anywhere for the others.
func (k *keywordIndex) build(trig *[256]uint16, wordFirst *[256]uint8) {
	if k.byFirst == nil {
		return
	}
	for b, l := range k.byFirst {
		for _, idx := range l {
			if k.entries[idx].wordStart {
				wordFirst[b] |= firstKeyword
			} else {
				trig[b] |= trigKeyword
			}
		}
	}
}

// wordAt tries the keywords that begin with a word rune at p, the first byte of a word.
func (k *keywordIndex) wordAt(sc *scanState, p int) { k.at(sc, p, true) }

// punctAt tries the keywords that begin with another rune at i.
func (k *keywordIndex) punctAt(sc *scanState, i int) { k.at(sc, i, false) }

func (k *keywordIndex) at(sc *scanState, p int, wordStart bool) {
	s := sc.s
	if k.byFirst == nil {
		return
	}
	for _, idx := range k.byFirst[s[p]] {
		e := &k.entries[idx]
		end := p + len(e.word)
		if e.wordStart != wordStart || end > len(s) {
			continue
		}
		cand := s[p:end]
		if e.fold && !strings.EqualFold(cand, e.word) || !e.fold && cand != e.word {
			continue
		}
		if e.wordEnd && endsInWord(s, end) {
			continue
		}
		if matchedAt(sc, p, e.cat) {
			continue // a longer keyword of this category already matched here
		}
		sc.add(p, end, e.cat, numDetectors)
	}
}

// matchedAt reports whether a span of category cat starting at p was just recorded.
func matchedAt(sc *scanState, p int, cat int16) bool {
	for j := len(sc.spans) - 1; j >= 0 && sc.spans[j].Start == p; j-- {
		if sc.spans[j].Category&(1<<detShift-1) == int(cat) {
			return true
		}
	}
	return false
}
