package builtin

import (
	"encoding/base64"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The prompt-injection signal engine (issue 42). It runs beside the phrase list of
// injection.go, under the same category, in a pass of its own over the token stream
// (injection_lex.go), with the rules of injection_rules.go:
//
//   - Every token that can begin a rule starts a match of that rule, read forwards as a small
//     automaton (optional slots, gaps of bounded length) over at most injLookahead tokens; the
//     match that ends first is the rule's match from that token. A rule may require a word of
//     some sets in the match (a qualifier: "previous", "your", "all"), and may be suppressed by
//     what comes just before it (a negation, "asks you to", a quote that a defensive prompt
//     reports).
//   - A rule of weight 1 is a match. A lighter rule is a signal; when the distinct rules of
//     the signals within injSigWindow bytes weigh 1 or more together, the stretch from the first
//     signal to the last is a match.
//   - Rules run only from the tokens that can begin a match around an anchor (regions, below).
//   - A base64 run that decodes to text is read again, decoded; a match inside makes the run
//     a match.
//
// Streaming: tokens are read left to right and every decision about a token depends only on
// the tokens before it and at most injLookahead after it, so the text before the earliest
// undecided start (a match still being read at the end of the text, a word still growing
// that could begin a rule, a signal that a later one could still complete) is settled, and
// Open is at most that start. No decision looks back further than injHint bytes, the
// hold-back hint.

const (
	injLookahead  = 40  // most tokens a rule reads from its first
	injMaxSpan    = 240 // longest match of one rule in bytes
	injSigWindow  = 320 // longest window of signals that add up to a match
	injRing       = 128 // tokens kept: the lookahead and the look-back of the context checks
	injNegBack    = 8   // words looked back for a negation
	injQuoteBack  = 40  // tokens looked back for an open quote
	injCueBack    = 8   // words looked back, before the quote, for a reporting word
	injB64Min     = 32  // shortest base64 run read
	injB64Max     = 344 // longest base64 run read (258 decoded bytes)
	injNegBytes   = 80  // bytes looked back for a negation or a request
	injQuoteBytes = 160 // bytes looked back for an open quote
	injCueBytes   = 64  // bytes looked back before the quote for a reporting word
	// injHint is the engine's hold-back hint: its longest match, and its longest look-back
	// (a quote and the words before it), whichever is longer.
	injHint = max(injSigWindow, injQuoteBytes+injCueBytes) + 16
	// Between two tokens of a match: at most maxInjectionGap bytes of white space, and at
	// most injSoftRun soft marks skipped in a row (each a rune and its white space).
	injSoftRun  = 2
	injGapBytes = maxInjectionGap + injSoftRun*(4+maxInjectionGap)
)

// Slot kinds of a compiled rule.
type injSigSlot struct {
	words   []string
	class   uint64
	puncts  string
	anyWord bool
	opt     bool
	gap     int // 0: one token; n > 0: 0 to n words
	bol     bool
	upper   bool
	cap     bool // the word must begin with a capital
	end     bool
	anchor  bool // chosen by hand as the rule's anchor (regions)
}

type injSigRule struct {
	name  string
	w     float32
	slots []injSigSlot
	need  uint64
	noNeg bool
	noTo  bool
	noRep bool
	// group is the rule whose signals this one's count as: signals of rules of one group
	// (the flag doc: the marks of a document; reply: instructions about the reply) count
	// once in a window.
	group     int
	groupName string
}

type injSigTable struct {
	rules []injSigRule
	// sets are the names of the word sets, sorted: set i is class bit i.
	sets []string
	// lex holds each normalised word of a set or a rule's first slot: its sets and the rules
	// it can begin; filter[n][f] has bit l set when a word of n bytes beginning with f and
	// ending with l is in lex (letters as 0-25, digits as 26-35), so that most words of a
	// text are passed over without a lookup.
	lex     wordTable[injWord]
	filter  [maxNormWord + 1][36]uint64
	byPunct [256][]int
	firsts  []string // sorted first words, for the prefix check of a growing word
	// anchors are the words of each rule's rarest mandatory slot; a region of the text is
	// read only around one (regions). anchorPairs holds their first two bytes, both cases.
	anchorPairs byteSet64k
	// anchorIdx maps an anchor word to the rules it anchors, each with how far before it a
	// match can begin (anchorSlot). wordPairs holds the first two bytes a word that
	// normalises to an anchor can be written with (digits of leetspeak, '@' and '$', a
	// hyphen or an apostrophe between its first letters), and wordFirst their first.
	anchorIdx wordTable[[]injAnchorRule]
	wordPairs byteSet64k
	wordFirst [256]bool
	// triples holds the first three bytes of the anchor words written in letters, as classes
	// of injTriClass: the single pass's test for a word that begins with two letters. The
	// pass reads injTriples, a copy that needs no pointer and no bounds check.
	triples      [512]uint64
	maxWalk      int                         // the most words any rule reads before its anchor
	anchorFilter [maxNormWord + 1][36]uint64 // as filter, for the anchors
	firstFilter  [maxNormWord + 1][36]uint64 // as filter, for the words that begin a rule
}

// The prompt-injection pack's tables: the engine's (injSig) and the phrase list's
// (injection, injection.go), built on the pack's first use (loadInjection).
var (
	injSig *injSigTable
	// injTriples is injSig.triples with the first three letters of the phrase list's
	// anchors (injection.go), which the pass reaches through the same test.
	injTriples [512]uint64
	// Bits of the sets the context checks use.
	injNEG, injREQ, injCUE uint64
)

// injTriMask is injTriples by the classes of a word's first two bytes: entry c0*28+c1 has bit
// c2 set when the triple (c0, c1, c2) of two letters and a class is in injTriples, and
// injTriPairs when the word is decided by wordPairs instead (a letter then a byte of class
// injTriOther, or a first byte of that class and a second that is not injTriEnd). One load
// and a shift decide a boundary where three branches did.
var injTriMask [1024]uint32

// injWordFilter[n][f] has bit l set when an anchor of n ASCII letters (n < 8), of the signal
// engine or of the phrase list, may begin with letter f and end with letter l (letters as
// 0-25): the union of the engine's anchorFilter and the phrase list's lenFirst and lenLast,
// which injWordAt tests after its call.
var injWordFilter [8][26]uint32

// wordFilter returns injWordFilter for the engine's anchors and the phrase list's.
func wordFilter(t *injSigTable, phrases *injTable) (w [8][26]uint32) {
	for n := range 8 {
		for f := range 26 {
			if n >= 2 {
				w[n][f] = uint32(t.anchorFilter[n][f]) & (1<<26 - 1)
			}
			if phrases.lenFirst[n]&(1<<f) != 0 {
				w[n][f] |= phrases.lenLast[n]
			}
		}
	}
	return w
}

// injTriPairs is the bit of injTriMask that sends a word to wordPairs.
const injTriPairs = 1 << 31

// triMask returns injTriMask for the triples t.
func triMask(t *[512]uint64) (m [1024]uint32) {
	for c0 := range 28 {
		for c1 := range 28 {
			var e uint32
			switch {
			case c0 < injTriOther && c1 < injTriOther:
				for c2 := range 28 {
					if k := (c0*26+c1)*28 + c2; t[k>>6]&(1<<(k&63)) != 0 {
						e |= 1 << c2
					}
				}
			case c0 < injTriOther && c1 == injTriOther, c0 == injTriOther && c1 != injTriEnd:
				e = injTriPairs
			}
			m[c0*28+c1] = e
		}
	}
	return m
}

// phraseTriples returns t with the first three letters of the phrase list's anchors added.
func phraseTriples(t [512]uint64, phrases *injTable) [512]uint64 {
	for w := range phrases.byAnchor {
		if len(w) < 2 || !isLower(w[1]) {
			panic(fmt.Sprintf("builtin: injection phrase anchor %q must begin with two letters", w))
		}
		addTriple(&t, w[0], w[1], injTriOther)
		switch {
		case len(w) == 2:
			addTriple(&t, w[0], w[1], injTriEnd)
		case isLower(w[2]):
			addTriple(&t, w[0], w[1], injTriClass[w[2]])
		default:
			addTriple(&t, w[0], w[1], injTriEnd)
		}
	}
	return t
}

// injCommon are words too frequent in ordinary text to anchor a rule when another slot can.
const injCommon = `a an the to of and or in on is are be it its not no now from with for as at by this that what will do all any me us my have has i im if when can just only say tell give show write put list read type use make add include provide you your ur u there here so then than also one two new made end stop free set get got take go come see know think look want need like time year day way people man woman life world work part place case point number fact thing good great small large long little own other old right big high different early young important few public same able last next first every each many much more most some such very well back after before over under again out up down off about into through during without within between against among until while where why how who which whom whose was were been being had did does done would could should may might must shall can't don't said says say use used using help show shows called call find found give gave keep kept let put run set turn start end`

// slotWords calls f with each word of slot sl: its own words, then each word of the lexicon
// once for each of sl's sets it is in.
func (t *injSigTable) slotWords(sl *injSigSlot, f func(w string)) {
	for _, w := range sl.words {
		f(w)
	}
	if sl.class == 0 {
		return
	}
	for i := range t.lex.vals {
		for range bits.OnesCount64(t.lex.vals[i].class & sl.class) {
			f(t.lex.keys[i])
		}
	}
}

// anchorSlot returns r's rarest mandatory word slot: the one with the fewest common words
// (common, sorted), then the fewest words. Every match of r holds one of its words. It
// returns too how far before the anchor a match can begin.
func (t *injSigTable) anchorSlot(r *injSigRule, common []string) (at, back int) {
	bestScore, bestAt := -1, -1
	for at := range r.slots {
		sl := &r.slots[at]
		if sl.opt || sl.gap > 0 || sl.end || sl.anyWord || len(sl.words) == 0 && sl.class == 0 {
			continue
		}
		n, penalty := 0, 0
		t.slotWords(sl, func(w string) {
			n++
			_, isCommon := slices.BinarySearch(common, w)
			switch {
			case isCommon || len(w) < 2 || isDigit(w[0]):
				penalty += 1000
			case len(w) == 2:
				penalty += 100
			}
		})
		score := n
		if at == 0 {
			score -= 5 // an anchor that begins the rule costs the least to read from
		}
		if sl.anchor {
			score = -1000
		}
		score += penalty
		if bestAt < 0 || score < bestScore {
			bestScore, bestAt = score, at
		}
	}
	if bestAt < 0 {
		panic(fmt.Sprintf("builtin: injection rule %q has no word slot to anchor it", r.name))
	}
	// How far before the anchor a match can begin: each slot before it holds at most its
	// count of words, each at most twice its longest normalised spelling in ASCII (a word
	// written with other bytes is a region of its own, from injMaxSpan back), with white
	// space and the soft marks matchRule allows between words.
	reach := 0
	for k := range r.slots[:bestAt] {
		sl := &r.slots[k]
		longest := 1
		if sl.anyWord {
			longest = injMaxSpan
		}
		t.slotWords(sl, func(w string) { longest = max(longest, len(w)) })
		reach += max(1, sl.gap) * (2*longest + injGapBytes)
	}
	return bestAt, min(reach, injMaxSpan)
}

// injAnchorRule is a rule an anchor word stands for.
type injAnchorRule struct {
	rule int32
	back int32 // bytes before the anchor a match can begin (anchorSlot)
	// words is the most words a match can hold before the anchor (0: the anchor begins the
	// rule).
	words int32
}

// injMask is a set of rules.
type injMask [2]uint64

func (m *injMask) set(r int)      { m[r>>6&1] |= 1 << (r & 63) }
func (m *injMask) has(r int) bool { return m[r>>6&1]&(1<<(r&63)) != 0 }

// injAllRules is the set of every rule.
var injAllRules = injMask{^uint64(0), ^uint64(0)}

func upperASCII(b byte) byte {
	if isLower(b) {
		return b - 'a' + 'A'
	}
	return b
}

// Classes of injTriClass besides the letters (0-25): a byte that may go on a word (a digit, a
// mark the lexer keeps inside a word, a byte of a longer rune), and any other.
const (
	injTriOther = 26
	injTriEnd   = 27
)

// injTriClass is the class of a byte for the triples of injSigTable.
var injTriClass = func() (t [256]uint8) {
	for b := range 256 {
		switch {
		case isAlpha(byte(b)):
			t[b] = lower(byte(b)) - 'a'
		case isDigit(byte(b)), b >= utf8.RuneSelf, b == '\'', b == '-', b == '_', b == '@', b == '$':
			t[b] = injTriOther
		default:
			t[b] = injTriEnd
		}
	}
	return
}()

func addTriple(t *[512]uint64, l0, l1, c byte) {
	k := (int(l0-'a')*26+int(l1-'a'))*28 + int(c)
	t[k>>6] |= 1 << (k & 63)
}

// injSpellings appends to v the bytes a normalised letter l can be written with at the start
// of a word (second: as its second byte, where a hyphen, an apostrophe, '@' or '$' may stand).
func injSpellings(v []byte, l byte, second bool) []byte {
	v = append(v, l, upperASCII(l))
	for d := range 10 {
		if leetLetter[d] == l || d == 1 && l == 'l' {
			v = append(v, byte('0'+d))
		}
	}
	if second {
		v = append(v, '-', '\'', 0xE2) // 0xE2 begins ’
		switch l {
		case 'a':
			v = append(v, '@')
		case 's':
			v = append(v, '$')
		}
	}
	return v
}

// injWord is a word of the lexicon.
type injWord struct {
	class uint64
	rules []int
}

// filterIndex maps a normalised byte to 0-35, or -1.
func filterIndex(b byte) int {
	switch {
	case b >= 'a' && b <= 'z':
		return int(b - 'a')
	case b >= '0' && b <= '9':
		return 26 + int(b-'0')
	}
	return -1
}

// first reports whether w may begin a rule (a cheap test before the lookup).
func (t *injSigTable) first(w []byte) bool {
	if len(w) == 0 || len(w) > maxNormWord {
		return false
	}
	f, l := filterIndex(w[0]), filterIndex(w[len(w)-1])
	return f >= 0 && l >= 0 && t.firstFilter[len(w)][f]&(1<<l) != 0
}

// known reports whether w may be in the lexicon (a cheap test before the lookup).
func (t *injSigTable) known(w []byte) bool {
	if len(w) == 0 || len(w) > maxNormWord {
		return false
	}
	f, l := filterIndex(w[0]), filterIndex(w[len(w)-1])
	return f >= 0 && l >= 0 && t.filter[len(w)][f]&(1<<l) != 0
}

// compileInjSig compiles the rules; a malformed rule is a programming error and panics.
//
// It runs at init, so it builds the tables in place, in as few allocations as it can: the
// words are substrings of the definitions, and the rules' slots and words, the words' rules
// and the anchors' rules are each one slice shared by all.
func compileInjSig(sets map[string]string, defs []injRuleDef) *injSigTable {
	t := &injSigTable{}
	names := make([]string, 0, len(sets))
	nwords := 0
	for n, ws := range sets {
		names = append(names, n)
		nwords += strings.Count(ws, " ") + 1
	}
	slices.Sort(names)
	if len(names) > 64 {
		panic("builtin: too many injection word sets")
	}
	t.sets = names
	nslots, nalts := 0, 0
	for _, d := range defs {
		for f := range strings.FieldsSeq(d.pattern) {
			nslots++
			nalts += strings.Count(f, "|") + 1
		}
	}
	t.lex = newWordTable[injWord](nwords + len(defs))
	for i, n := range names {
		bit := uint64(1) << i
		for w := range strings.FieldsSeq(sets[n]) {
			t.lex.vals[t.lex.add(w)].class |= bit
		}
	}
	classOf := func(spec string) uint64 {
		var m uint64
		for n := range strings.FieldsFuncSeq(spec, func(r rune) bool { return r == '|' || r == ',' }) {
			i, ok := slices.BinarySearch(names, n)
			if !ok {
				panic(fmt.Sprintf("builtin: injection rule names unknown set %q", n))
			}
			m |= 1 << i
		}
		return m
	}
	var groups []string // the first rule's name of each group
	var groupAt []int
	allSlots := make([]injSigSlot, 0, nslots)
	allWords := make([]string, 0, nalts)
	t.rules = make([]injSigRule, 0, len(defs))
	for ri, d := range defs {
		r := injSigRule{name: d.name, w: d.w}
		if d.need != "" {
			r.need = classOf(d.need)
		}
		for f := range strings.FieldsSeq(d.flags) {
			switch f {
			case "noNeg":
				r.noNeg = true
			case "noTo":
				r.noTo = true
			case "noRep":
				r.noRep = true
			case "doc", "reply":
				r.groupName = f // resolved below
			default:
				panic(fmt.Sprintf("builtin: injection rule %q: unknown flag %q", d.name, f))
			}
		}
		first := len(allSlots)
		for f := range strings.FieldsSeq(d.pattern) {
			var sl injSigSlot
			for {
				switch {
				case strings.HasPrefix(f, "?"):
					sl.opt, f = true, f[1:]
					continue
				case strings.HasPrefix(f, "^"):
					sl.bol, f = true, f[1:]
					continue
				case strings.HasPrefix(f, "!"):
					sl.upper, f = true, f[1:]
					continue
				case strings.HasPrefix(f, "@"):
					sl.anchor, f = true, f[1:]
					continue
				case strings.HasPrefix(f, "+"):
					sl.cap, f = true, f[1:]
					if f == "" {
						sl.anyWord = true // "+" alone: one word, capitalised
					}
					continue
				}
				break
			}
			if k := strings.LastIndex(f, "*"); k >= 0 {
				gap, err := strconv.Atoi(f[k+1:])
				if sl.gap = gap; err != nil || sl.gap <= 0 {
					panic(fmt.Sprintf("builtin: injection rule %q: bad gap %q", d.name, f))
				}
				f = f[:k]
				if f == "" {
					sl.anyWord = true
				}
			}
			if f == "$" {
				sl.end = true
			}
			// The alternatives are separated by '|', except inside braces, where '|' separates
			// sets: {A|B}.
			words := len(allWords)
			for rest := f; ; {
				alt, depth := rest, 0
				for k := 0; k < len(rest); k++ {
					switch rest[k] {
					case '{':
						depth++
					case '}':
						depth--
					case '|':
						if depth <= 0 {
							alt = rest[:k]
						}
					}
					if len(alt) < len(rest) {
						break
					}
				}
				switch {
				case f == "" || f == "$":
				case strings.HasPrefix(alt, "{"):
					sl.class |= classOf(strings.Trim(alt, "{}"))
				case alt == ":pipe":
					sl.puncts += "|"
				case alt == ":colon":
					sl.puncts += ":"
				case strings.HasPrefix(alt, ":") && len(alt) == 2:
					sl.puncts += alt[1:]
				default:
					allWords = append(allWords, alt)
				}
				if len(alt) == len(rest) {
					break
				}
				rest = rest[len(alt)+1:]
			}
			if len(allWords) > words {
				sl.words = allWords[words:len(allWords):len(allWords)]
			}
			allSlots = append(allSlots, sl)
		}
		r.slots = allSlots[first:len(allSlots):len(allSlots)]
		r.group = ri
		if r.groupName != "" {
			if k := slices.Index(groups, r.groupName); k >= 0 {
				r.group = groupAt[k]
			} else {
				groups, groupAt = append(groups, r.groupName), append(groupAt, ri)
			}
		}
		if len(r.slots) == 0 {
			panic(fmt.Sprintf("builtin: injection rule %q has no slot", d.name))
		}
		s0 := &r.slots[0]
		if s0.opt || s0.gap > 0 || s0.end || s0.anyWord {
			panic(fmt.Sprintf("builtin: injection rule %q must begin with a mandatory slot", d.name))
		}
		for _, w := range s0.words {
			t.lex.add(w)
		}
		for k := 0; k < len(s0.puncts); k++ {
			t.byPunct[s0.puncts[k]] = append(t.byPunct[s0.puncts[k]], ri)
		}
		t.rules = append(t.rules, r)
	}
	if len(t.rules) > 128 {
		panic("builtin: too many injection rules for a rule set")
	}
	// The rules each word can begin, in the order of the rules: one slice, cut per word. A
	// rule begins with the words of its first slot (each time one is listed) and with the
	// words of its first slot's sets (once; the words added after the sets belong to none).
	// The first pass counts them per word, the second puts them in place; last is the last
	// rule paired with each word.
	last := make([]int32, len(t.lex.keys), max(len(t.lex.keys), cap(t.lex.keys)))
	count := make([]int32, len(t.lex.keys)+1)
	eachStart := func(f func(w, r int)) {
		for i := range last {
			last[i] = -1
		}
		for ri := range t.rules {
			s0 := &t.rules[ri].slots[0]
			for _, w := range s0.words {
				k := t.lex.index([]byte(w))
				f(k, ri)
				last[k] = int32(ri)
			}
			if s0.class != 0 {
				for i := range t.lex.vals {
					if t.lex.vals[i].class&s0.class != 0 && last[i] != int32(ri) {
						f(i, ri)
						last[i] = int32(ri)
					}
				}
			}
		}
	}
	eachStart(func(w, _ int) { count[w+1]++ })
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	byWord := make([]int, count[len(count)-1])
	nfirsts := 0
	for i := range t.lex.vals {
		if a, e := count[i], count[i+1]; e > a {
			t.lex.vals[i].rules = byWord[a:a:e]
			nfirsts++
		}
	}
	eachStart(func(w, r int) { t.lex.vals[w].rules = append(t.lex.vals[w].rules, r) })
	t.firsts = make([]string, 0, nfirsts)
	for i, w := range t.lex.keys {
		if len(t.lex.vals[i].rules) > 0 {
			t.firsts = append(t.firsts, w)
			if f, l := filterIndex(w[0]), filterIndex(w[len(w)-1]); f >= 0 && l >= 0 {
				t.firstFilter[len(w)][f] |= 1 << l
			}
		}
	}
	slices.Sort(t.firsts)
	for _, w := range t.lex.keys {
		f, l := filterIndex(w[0]), filterIndex(w[len(w)-1])
		if f < 0 || l < 0 {
			panic(fmt.Sprintf("builtin: injection word %q cannot be indexed", w))
		}
		t.filter[len(w)][f] |= 1 << l
	}
	// The anchors, and the rules each stands for: pairs in the order of the rules, then one
	// slice cut per anchor.
	ncommon := 0
	for range strings.FieldsSeq(injCommon) {
		ncommon++
	}
	common := make([]string, 0, ncommon)
	for w := range strings.FieldsSeq(injCommon) {
		common = append(common, w)
	}
	slices.Sort(common)
	type anchorRule struct {
		w  int32
		ar injAnchorRule
	}
	t.anchorIdx = newWordTable[[]injAnchorRule](len(t.rules) * 4)
	anchored := make([]anchorRule, 0, len(t.rules)*8)
	last = last[:0]
	var spell0, spell1 [16]byte
	for ri := range t.rules {
		r := &t.rules[ri]
		at, back := t.anchorSlot(r, common)
		ar := injAnchorRule{rule: int32(ri), back: int32(back)}
		for _, sl := range r.slots[:at] {
			ar.words += int32(max(1, sl.gap))
		}
		t.maxWalk = max(t.maxWalk, int(ar.words))
		t.slotWords(&r.slots[at], func(w string) {
			k := t.anchorIdx.add(w)
			for len(last) < len(t.anchorIdx.keys) {
				last = append(last, -1)
			}
			if last[k] != int32(ri) {
				anchored = append(anchored, anchorRule{int32(k), ar})
				last[k] = int32(ri)
			}
			if len(w) >= 2 {
				if !isLower(w[1]) {
					panic(fmt.Sprintf("builtin: injection anchor %q must begin with two letters", w))
				}
				addTriple(&t.triples, w[0], w[1], injTriOther)
				switch {
				case len(w) == 2:
					addTriple(&t.triples, w[0], w[1], injTriEnd)
				case isLower(w[2]):
					addTriple(&t.triples, w[0], w[1], injTriClass[w[2]])
				}
				for _, b0 := range injSpellings(spell0[:0], w[0], false) {
					t.wordFirst[b0] = true
					for _, b1 := range injSpellings(spell1[:0], w[1], true) {
						t.wordPairs.add(b0, b1)
					}
				}
			}
		})
		t.slotWords(&r.slots[at], func(w string) {
			if f, l := filterIndex(w[0]), filterIndex(w[len(w)-1]); f >= 0 && l >= 0 {
				t.anchorFilter[len(w)][f] |= 1 << l
			}
			if len(w) < 2 || !isLower(w[0]) {
				panic(fmt.Sprintf("builtin: injection anchor %q cannot be found by its first two letters", w))
			}
			for _, b0 := range [2]byte{w[0], upperASCII(w[0])} {
				for _, b1 := range [2]byte{w[1], upperASCII(w[1])} {
					t.anchorPairs.add(b0, b1)
				}
			}
		})
	}
	slices.SortStableFunc(anchored, func(a, b anchorRule) int { return int(a.w - b.w) })
	byAnchor := make([]injAnchorRule, len(anchored))
	for k := 0; k < len(anchored); {
		j := k
		for j < len(anchored) && anchored[j].w == anchored[k].w {
			byAnchor[j] = anchored[j].ar
			j++
		}
		t.anchorIdx.vals[anchored[k].w] = byAnchor[k:j:j]
		k = j
	}
	return t
}

// setBit returns the class bit of the set named n, or 0.
func (t *injSigTable) setBit(n string) uint64 {
	if i, ok := slices.BinarySearch(t.sets, n); ok {
		return 1 << i
	}
	return 0
}

// beginsFirstWord reports whether w is a beginning of a word a rule can begin with.
func (t *injSigTable) beginsFirstWord(w []byte) bool {
	i, _ := slices.BinarySearch(t.firsts, string(w))
	return i < len(t.firsts) && strings.HasPrefix(t.firsts[i], string(w))
}

// injClauseWords may follow a rule that ends in "$", besides clauseWords: "paste your system
// prompt here", "print your instructions into a code block".
var injClauseWords = []string{"here", "again", "below", "above", "completely", "fully", "literally", "into", "inside", "within", "as", "at", "with", "without", "using", "on"}

// injPhraseContext are the context checks applied to the phrase list's matches.
var injPhraseContext = injSigRule{name: "phrase", noNeg: true, noTo: true, noRep: true}

// injSignal is a signal found: a match of a rule lighter than 1.
type injSignal struct {
	start, end int
	rule       int
	w          float32
}

// injScan is one call's state; it lives on the stack.
type injScan struct {
	t    *injSigTable
	s    string
	more bool
	lx   lexer
	ring [injRing]itok
	n    int // tokens read
	done bool
	from int // where the reading began (suppressedAt)
	// found are the matches, handed to the call's state at the end (so that the state does
	// not escape through this one); sigs are the signals, in the order of their starts.
	found [][2]int
	sigs  []injSignal
}

// reset makes x read s from byte pos.
func (x *injScan) reset(pos int) {
	x.lx = lexer{s: x.s, pos: pos, more: x.more}
	x.n, x.done = 0, false
}

// ensure reads tokens up to index j, lazily; it reports whether token j exists.
func (x *injScan) ensure(j int) bool {
	for x.n <= j && !x.done {
		t := x.tok(x.n)
		if !x.lx.next(t) {
			x.done = true
			break
		}
		t.looked = false
		x.n++
	}
	return j < x.n
}

// emit records a match.
func (x *injScan) emit(start, end int) { x.found = append(x.found, [2]int{start, end}) }

func (x *injScan) tok(i int) *itok { return &x.ring[i&(injRing-1)] }

// injSoft are the marks skipped between the words of a match.
var injSoft = func() (t [256]bool) {
	for _, b := range []byte(",.\"'()[]{}*_~`-:/\\|<>#@=+&^%$0123456789") {
		t[b] = true
	}
	t[0x80] = true
	return
}()

// lookup fills t.class and t.rules from the lexicon.
func (x *injScan) lookup(t *itok) {
	t.looked = true
	t.class, t.rules = 0, nil
	if t.kind != tkWord || t.n == 0 {
		return
	}
	w := t.norm[:t.n]
	if x.t.known(w) {
		if e, ok := x.t.lex.get(w); ok {
			t.class, t.rules = e.class, e.rules
			return
		}
	}
	if !t.leet {
		return
	}
	// '1' was read as 'i'; it may have been an 'l'.
	raw := x.s[t.start:t.end]
	var alt [maxNormWord]byte
	copy(alt[:], w)
	changed := false
	k := 0
	for j := 0; j < len(raw) && k < int(t.n); j++ {
		b := raw[j]
		if !isAlnum(b) {
			continue
		}
		if b == '1' {
			alt[k] = 'l'
			changed = true
		}
		k++
	}
	if changed && x.t.known(alt[:t.n]) {
		if e, ok := x.t.lex.get(alt[:t.n]); ok {
			t.class, t.rules = e.class, e.rules
		}
	}
}

// cls returns t's classes, looking the word up on first use.
func (x *injScan) cls(t *itok) uint64 {
	if !t.looked {
		x.lookup(t)
	}
	return t.class
}

// hard reports whether a token ends every pattern before it: a sentence mark followed by
// white space (or the end), or a blank line before it.
func (x *injScan) hard(t *itok) bool {
	if t.nl >= 2 {
		return true
	}
	if t.kind != tkPunct {
		return false
	}
	switch t.ch {
	case '.', '!', '?', ';':
		e := int(t.end)
		if e < len(x.s) && !isSpace(x.s[e]) && t.ch == '.' {
			return false // a dot inside a name or an address
		}
		return true
	}
	return false
}

// matchWord reports whether word token t fits slot sl.
func (x *injScan) matchWord(sl *injSigSlot, t *itok) bool {
	if t.kind != tkWord {
		return false
	}
	if sl.cap && !isUpper(x.s[t.start]) {
		return false
	}
	if sl.anyWord {
		return true
	}
	if sl.upper {
		raw := x.s[t.start:t.end]
		for k := 0; k < len(raw); k++ {
			if isLower(raw[k]) {
				return false
			}
		}
	}
	if sl.class != 0 && sl.class&x.cls(t) != 0 {
		return true
	}
	for _, w := range sl.words {
		if len(w) == int(t.n) && string(t.norm[:t.n]) == w {
			return true
		}
	}
	return false
}

// Outcomes of a rule's match from one token.
const (
	injNoMatch = iota
	injMatched
	injPending
)

type injState struct {
	k, g int8
	sk   int8 // soft marks skipped since the last word
	seen bool
}

// matchRule reads rule r from token i (which fits its first slot). It returns the outcome
// and the index of the match's last token.
func (x *injScan) matchRule(r *injSigRule, i int) (int, int) {
	first := x.tok(i)
	if first.open {
		return injPending, 0
	}
	var bufs [2][24]injState
	cur, nxt := &bufs[0], &bufs[1] // swapped after each token, not copied
	nc := 0
	add := func(buf *[24]injState, n *int, st injState) {
		for {
			for j := 0; j < *n; j++ {
				if buf[j] == st {
					return
				}
			}
			if *n < len(buf) {
				buf[*n] = st
				*n++
			}
			if int(st.k) < len(r.slots) && (r.slots[st.k].opt || r.slots[st.k].gap > 0) {
				st = injState{k: st.k + 1, seen: st.seen}
				continue
			}
			return
		}
	}
	add(cur, &nc, injState{k: 1, seen: r.need != 0 && r.need&x.cls(first) != 0})
	accepted := func(st injState) bool {
		return int(st.k) == len(r.slots) && (r.need == 0 || st.seen)
	}
	last := i
	for j := i + 1; ; j++ {
		for q := 0; q < nc; q++ {
			if accepted(cur[q]) {
				if x.tok(last).open {
					return injPending, 0
				}
				return injMatched, last
			}
		}
		if nc == 0 {
			return injNoMatch, 0
		}
		if !x.ensure(j) {
			// The end of the text: a clause end is met if the text is over, or if a line break
			// or more white space than a phrase may hold follows the last token.
			tail := x.s[x.tok(x.n-1).end:]
			if !x.more || strings.IndexByte(tail, '\n') >= 0 || len(tail) > maxInjectionGap {
				for q := 0; q < nc; q++ {
					st := cur[q]
					if int(st.k) < len(r.slots) && r.slots[st.k].end && (r.need == 0 || st.seen) && int(st.k)+1 == len(r.slots) {
						return injMatched, last
					}
				}
				return injNoMatch, 0
			}
			return injPending, 0
		}
		if j-i > injLookahead {
			return injNoMatch, 0
		}
		t := x.tok(j)
		hard := x.hard(t) || int(t.wsLen) > maxInjectionGap
		nn := 0
		for q := 0; q < nc; q++ {
			st := cur[q]
			if int(st.k) >= len(r.slots) {
				continue
			}
			sl := &r.slots[st.k]
			if sl.end {
				if t.kind == tkPunct || t.nl > 0 || int(t.wsLen) > maxInjectionGap || (wordIn(string(t.norm[:t.n]), clauseWords) || wordIn(string(t.norm[:t.n]), injClauseWords)) && !t.open {
					if int(st.k)+1 == len(r.slots) && (r.need == 0 || st.seen) {
						if x.tok(last).open {
							return injPending, 0
						}
						return injMatched, last
					}
				}
				if t.open {
					return injPending, 0
				}
				continue
			}
			if t.nl >= 2 {
				continue
			}
			if t.kind == tkPunct {
				if strings.IndexByte(sl.puncts, t.ch) >= 0 && (!sl.bol || t.nl > 0 || t.start == 0) {
					ns := injState{k: st.k + 1, seen: st.seen}
					if sl.gap > 0 {
						ns = injState{k: st.k, g: st.g + 1, seen: st.seen}
						if int(ns.g) > sl.gap {
							continue
						}
					}
					add(nxt, &nn, ns)
				}
				if !hard && injSoft[t.ch] && st.k > 0 && st.sk < injSoftRun {
					sk := st
					sk.sk++
					add(nxt, &nn, sk) // a soft mark between words is skipped
				}
				if t.open {
					return injPending, 0
				}
				continue
			}
			if t.open {
				return injPending, 0
			}
			if sl.bol && t.nl == 0 || int(t.wsLen) > maxInjectionGap {
				continue
			}
			if !x.matchWord(sl, t) {
				continue
			}
			seen := st.seen || r.need != 0 && r.need&x.cls(t) != 0
			if sl.gap > 0 {
				if int(st.g)+1 <= sl.gap {
					add(nxt, &nn, injState{k: st.k, g: st.g + 1, seen: seen})
				}
				continue
			}
			add(nxt, &nn, injState{k: st.k + 1, seen: seen})
		}
		cur, nxt, nc = nxt, cur, nn
		last = j
	}
}

// suppressed reports whether a context check of r turns off its match from token i.
func (x *injScan) suppressed(r *injSigRule, i int) bool {
	lo := max(0, x.n-injRing)
	if r.noNeg || r.noTo {
		words := 0
		for j := i - 1; j >= lo && words < injNegBack; j-- {
			t := x.tok(j)
			if int(t.start) < int(x.tok(i).start)-injNegBytes {
				break
			}
			if t.kind == tkPunct {
				if x.hard(t) || t.ch == ',' || t.ch == ':' {
					break
				}
				continue
			}
			words++
			if r.noNeg && x.cls(t)&injNEG != 0 {
				return true
			}
			if r.noTo && words == 1 && t.n == 2 && t.norm[0] == 't' && t.norm[1] == 'o' {
				for k, w := j-1, 0; k >= lo && w < 3; k-- {
					if p := x.tok(k); p.kind == tkWord {
						w++
						if x.cls(p)&injREQ != 0 {
							return true
						}
					}
				}
			}
			if x.tok(j).nl > 0 {
				break
			}
		}
	}
	if r.noRep {
		depth := 0
		for j := i - 1; j >= lo && j >= i-injQuoteBack; j-- {
			t := x.tok(j)
			if t.nl >= 2 || int(t.start) < int(x.tok(i).start)-injQuoteBytes {
				break
			}
			if t.kind != tkPunct || (t.ch != '"' && t.ch != '\'') {
				continue
			}
			if x.closingQuote(j) {
				depth++
				continue
			}
			if depth > 0 {
				depth--
				continue
			}
			// An open quote before the match: is it reported?
			for k, w := j-1, 0; k >= lo && w < injCueBack; k-- {
				p := x.tok(k)
				if int(p.start) < int(t.start)-injCueBytes {
					break
				}
				if p.kind == tkWord {
					w++
					if x.cls(p)&injCUE != 0 {
						return true
					}
				} else if x.hard(p) {
					break
				}
			}
			return false
		}
	}
	return false
}

// closingQuote reports whether the quote token j closes a quotation: it follows a word or a
// mark without white space between, or is a closing curly quote.
func (x *injScan) closingQuote(j int) bool {
	t := x.tok(j)
	r := x.s[t.start:t.end]
	switch r {
	case "”", "’", "»":
		return true
	case "“", "‘", "«":
		return false
	}
	return !t.ws && t.start > 0
}

// combine emits every window of signals whose distinct rules weigh 1 or more together: for
// each signal, the signals that began at most injMaxSpan bytes before its end, in the order
// of their starts (sigs is in that order).
func (x *injScan) combine() {
	sigs := x.sigs
	for k := range sigs {
		var sum float32
		start, end := sigs[k].start, sigs[k].end
		for j := k; j >= 0; j-- {
			o := sigs[j]
			if sigs[k].end-o.start > injSigWindow {
				break
			}
			dup := false
			for p := j + 1; p <= k; p++ {
				if sigs[p].rule == o.rule {
					dup = true
					break
				}
			}
			if !dup {
				sum += o.w
			}
			start, end = min(start, o.start), max(end, o.end)
		}
		if sum >= 0.999 && end-start <= injSigWindow {
			x.emit(start, end)
		}
	}
}

// suppressedAt reports whether a context check of r turns off its match from byte start: the
// text before it is read again, from at most injHint bytes back.
// cx is the scanner that reads the context again.
func (x *injScan) suppressedAt(r *injSigRule, start int, cx *injScan) bool {
	if !r.noNeg && !r.noTo && !r.noRep {
		return false
	}
	lo := max(0, start-injHint)
	for k := 0; k < 64 && lo > 0 && !isSpace(x.s[lo-1]); k++ {
		lo--
	}
	// The tokens cx read for the match before are read on, when they began no later and
	// their last is before this start: the tokens within the look-back are the same.
	if cx.t == nil || cx.from > lo || cx.n == 0 || int(cx.tok(cx.n-1).start) >= start || int(cx.tok(cx.n-1).start) < lo {
		cx.t, cx.s, cx.more = x.t, x.s, false
		cx.reset(lo)
		cx.from = lo
	}
	for {
		if !cx.ensure(cx.n) {
			return false
		}
		if t := cx.tok(cx.n - 1); int(t.start) >= start {
			return cx.suppressed(r, cx.n-1)
		}
	}
}

// evalStart runs every rule that can begin at token i. It returns injPending when a match
// from i is still undecided.
func (x *injScan) evalStart(i int, cx *injScan, m *injMask) int {
	t := x.tok(i)
	var rules []int
	switch t.kind {
	case tkWord:
		if t.n == 0 {
			return injNoMatch
		}
		if t.open {
			// A word still growing: pending if it can become a first word, a digit counting
			// as any letter (it is leetspeak once letters follow).
			w := t.norm[:t.n]
			if slices.ContainsFunc(w, isDigit) && !twoDigits(w) || x.t.beginsFirstWord(w) {
				return injPending
			}
			return injNoMatch
		}
		if !t.leet && !x.t.first(t.norm[:t.n]) {
			return injNoMatch // a leet word is looked up: its '1' may be an 'l'
		}
		x.cls(t)
		rules = t.rules
	case tkPunct:
		if t.open {
			return injPending
		}
		rules = x.t.byPunct[t.ch]
	}
	out := injNoMatch
	for _, ri := range rules {
		if !m.has(ri) {
			continue
		}
		r := &x.t.rules[ri]
		s0 := &r.slots[0]
		if t.kind == tkWord && !x.matchWord(s0, t) {
			continue
		}
		if s0.bol && t.nl == 0 && t.start != 0 {
			continue
		}
		res, last := x.matchRule(r, i)
		switch res {
		case injPending:
			out = injPending
		case injMatched:
			start, end := int(t.start), int(x.tok(last).end)
			if end-start > injMaxSpan || x.suppressedAt(r, int(t.start), cx) {
				continue
			}
			if r.w >= 0.999 {
				x.emit(start, end)
			} else {
				x.sigs = append(x.sigs, injSignal{start: start, end: end, rule: r.group, w: r.w})
			}
		}
	}
	return out
}

// injectionTokens runs the engine over a text no pass has read (a decoded base64 run): the
// regions are found by a scan of its own (regionsScan).
func (c *Classifier) injectionTokens(sc *scanState, more bool) int {
	var rs injRegions
	rs.init(sc.s, more)
	if injWholeText {
		rs.add(0, len(sc.s), injAllRules)
	} else {
		rs.scan()
	}
	return c.injectionRun(sc, &rs, more)
}

// injectionRun runs the rules over the regions gathered in rs (by the single pass of scan.go
// through wordAt and highAt, or by scan), and with more set over the end of s, where a match
// may be pending; it emits the matches and returns where the pending text begins (len(s)
// when nothing is pending).
func (c *Classifier) injectionRun(sc *scanState, rs *injRegions, more bool) int {
	s := sc.s
	x := &rs.x
	if more {
		rs.add(max(0, len(s)-injMaxSpan-16), len(s), injAllRules)
	}
	rs.flush()
	open := rs.open
	// The phrase list's matches (injection.go) are turned off by the same context checks as
	// the rules: a phrase after a negation, after "asks you to", or inside a reported quote.
	for k := range sc.spans {
		if sp := &sc.spans[k]; detector(sp.Category>>detShift)-1 == detInjection && sp.Start <= open &&
			x.suppressedAt(&injPhraseContext, sp.Start, &rs.cx) {
			sp.Category = -1
		}
	}
	// Regions read again where one reached back into another are out of order.
	slices.SortStableFunc(x.sigs, func(a, b injSignal) int { return a.start - b.start })
	x.combine()
	if more {
		// A signal may still be completed by one to come.
		for _, sg := range x.sigs {
			if len(s)-sg.start <= injSigWindow {
				open = min(open, sg.start)
			}
		}
	}
	for _, f := range x.found {
		c.emit(sc, detInjection, f[0], f[1])
	}
	if sc.depth == 0 {
		open = min(open, c.injectionBase64(sc, more, rs))
	}
	return open
}

// Regions: the rules are run only from the tokens that can begin a match. A match holds an
// anchor (a word of its rule's rarest mandatory slot); for each rule an anchor word stands
// for, the words before it are read backwards, as far as the rule can reach, for one that can
// begin the rule, and the rule runs from there to the anchor (at the anchor alone when it is
// the rule's first slot). A word that a look-alike or an invisible character could be hiding
// (a non-ASCII letter) may be any anchor: every rule runs from injMaxSpan bytes before it. A
// word written with digits, '@' or '$' is read as the lexer reads it, and is an anchor when
// it reads as one. Tokens after a start are read only as far as a rule reads them, and the
// context before a match only when it is found, so ordinary text costs the single pass and
// little more.

// injWholeText makes the engine try every token of the text (tests compare).
var injWholeText = false

// injRegions gathers the regions as they are found, in the order of their anchors, and runs
// the rules over each once it is complete: no list is kept, so a call allocates nothing for
// them.
type injRegions struct {
	x, cx   injScan
	cur     [2]int
	curMask injMask
	have    bool
	done    int // the regions before this byte have been run
	open    int
	// long are the starts of words of 20 or more letters and digits, with both: where a
	// base64 run can be (injectionBase64); past len(long) every run is read.
	long  [64]int
	nlong int
	from  int // the single pass: the first byte after the last boundary it saw
	// toks are the tokens before an anchor (anchor, walkBack), kept here so that a call
	// does not clear them for every anchor.
	toks [injWalkMax]injWalked
	// whole says every token is tried (injWholeText): the pass finds no regions.
	whole bool
	// highDone is the end of the last word highAt read.
	highDone int
}

// init prepares rs for a call on s.
func (rs *injRegions) init(s string, more bool) {
	rs.x.t, rs.x.s, rs.x.more = injSig, s, more
	rs.open = len(s)
	rs.whole = injWholeText
}

// longWord records a long word at i.
func (rs *injRegions) longWord(i int) {
	if rs.nlong < len(rs.long) {
		rs.long[rs.nlong] = i
	}
	rs.nlong++
}

// longRun records s[i:j], a run of word bytes between two boundaries, when it is a long word
// of letters and digits.
func (rs *injRegions) longRun(i, j int) {
	if rs.whole {
		return
	}
	s := rs.x.s
	letters, digits := false, false
	for k := i; k < j; k++ {
		b := s[k]
		letters = letters || isAlpha(b)
		digits = digits || isDigit(b)
	}
	if letters && digits {
		rs.longWord(i)
	}
}

// add adds the starts from lo to hi for the rules of m. Anchors come in order, but a region
// may reach back into one already run: that part is run again for the rules of m.
func (rs *injRegions) add(lo, hi int, m injMask) {
	if rs.open < len(rs.x.s) {
		return
	}
	if lo < rs.done {
		rs.open = min(rs.open, rs.x.region(lo, min(hi, rs.done-1), &m, &rs.cx))
		lo = rs.done
		if lo > hi {
			return
		}
	}
	if rs.have && lo <= rs.cur[1]+64 {
		rs.cur = [2]int{min(rs.cur[0], lo), max(rs.cur[1], hi)}
		rs.curMask[0] |= m[0]
		rs.curMask[1] |= m[1]
		return
	}
	rs.flush()
	rs.cur, rs.curMask, rs.have = [2]int{lo, hi}, m, true
}

// flush runs the rules over the current region.
func (rs *injRegions) flush() {
	if !rs.have || rs.open < len(rs.x.s) {
		return
	}
	rs.have = false
	rs.done = rs.cur[1] + 1
	rs.open = rs.x.region(rs.cur[0], rs.cur[1], &rs.curMask, &rs.cx)
}

// injWordBuf is a word read as the lexer reads it (injNormWord).
type injWordBuf struct {
	norm, alt [maxNormWord]byte
	n         int
	hasAlt    bool // alt is the word with each '1' read as 'l'
	high      bool // the word holds a letter of another script or an invisible character
}

// injNormWord reads the word that begins at p as the lexer does (letters, digits, an
// apostrophe, hyphen or underscore between them, '@' and '$' inside it, leetspeak digits read
// as letters, look-alike letters of other scripts as the Latin letter, invisible characters
// skipped). ok is false when it cannot say (a rune cut at the end of the text).
func injNormWord(s string, p int, w *injWordBuf) (end int, ok bool) {
	i := p
	letters, digits := 0, 0
	over := false
	w.n, w.hasAlt, w.high = 0, false, false
	put := func(ch byte) {
		if w.n < maxNormWord {
			w.norm[w.n] = ch
			w.n++
		} else {
			over = true
		}
	}
	letterAt := func(i int) bool {
		switch lexClass[s[i]] {
		case lcLetter, lcDigit:
			return true
		case lcHigh:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return foldLetter(r) != 0
		}
		return false
	}
loop:
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
			if r == utf8.RuneError && n <= 1 {
				return i, false
			}
			if invisible(r) {
				w.high = true
				i += n
				continue
			}
			if l := foldLetter(r); l != 0 {
				w.high = true
				put(l)
				letters++
				i += n
				continue
			}
			if r == '’' && i+n < len(s) && letterAt(i+n) && letters+digits > 0 {
				i += n
				continue
			}
		case lcOther:
			if (b == '\'' || b == '-' || b == '_') && letters+digits > 0 && i+1 < len(s) && letterAt(i+1) {
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
		}
		break loop
	}
	if over {
		w.n = 0
		return i, true
	}
	if letters > 0 && digits > 0 && digits <= letters+1 && !twoDigits(w.norm[:w.n]) {
		for k := range w.n {
			if d := w.norm[k]; d >= '0' && d <= '9' {
				w.norm[k] = leetLetter[d-'0']
			}
		}
		// The lexicon lookup reads a '1' as 'l' when it does not know the word with 'i'.
		w.alt = w.norm
		k := 0
		for j := p; j < i && k < w.n; j++ {
			if b := s[j]; isAlnum(b) {
				if b == '1' {
					w.alt[k] = 'l'
					w.hasAlt = true
				}
				k++
			}
		}
	}
	return i, true
}

// injWordGoesOn reports whether the lexer reads the byte at j, after letters, as part of the
// word: a digit, a mark it keeps inside words, a byte of a longer rune.
func injWordGoesOn(s string, j int) bool {
	switch b := s[j]; {
	case isDigit(b), b >= utf8.RuneSelf:
		return true
	case b == '\'' || b == '-' || b == '_' || b == '@' || b == '$':
		return j+1 < len(s) && (isAlnum(s[j+1]) || s[j+1] >= utf8.RuneSelf)
	}
	return false
}

// midWord reports whether the lexer reads p, a word byte after a boundary, as part of the
// word before it ("role-play", "don't", "p@ss", "don’t").
func midWord(s string, p int) bool {
	if p < 2 {
		return false
	}
	switch b := s[p-1]; b {
	case '\'', '-':
		return isAlnum(s[p-2])
	case '@', '$':
		for k := p - 2; k >= 0 && k >= p-2-maxNormWord && isAlnum(s[k]); k-- {
			if isAlpha(s[k]) {
				return true
			}
		}
		return false
	}
	return p >= 4 && s[p-3:p] == "’" && isAlnum(s[p-4])
}

// wordAt looks at the word that begins at p, after a boundary: an anchor adds its regions.
//
// It returns the end of the ASCII letters the word begins with, or -1 when it did not read
// them.
func (rs *injRegions) wordAt(p int) int {
	if rs.whole {
		return -1
	}
	s := rs.x.s
	t := rs.x.t
	if p+1 >= len(s) || !t.wordPairs.has(s[p], s[p+1]) || midWord(s, p) {
		return -1
	}
	// Most words are ASCII letters alone: read eight at a time, filtered by their length and
	// their first and last letters, and looked up; any other word is read as the lexer does.
	j := p
	for {
		if j+8 > len(s) {
			for j < len(s) && isAlpha(s[j]) {
				j++
			}
			break
		}
		if bad := nonLetters8(load8(s, j)); bad != 0 {
			j += bits.TrailingZeros64(bad) >> 3
			break
		}
		j += 8
	}
	if j == len(s) || !injWordGoesOn(s, j) {
		n := j - p
		if n < 2 || n > maxNormWord {
			return j
		}
		f, l := filterIndex(lower(s[p])), filterIndex(lower(s[j-1]))
		if f < 0 || l < 0 || t.anchorFilter[n][f]&(1<<l) == 0 {
			return j
		}
		var lw [maxNormWord]byte
		for k := range n {
			lw[k] = lower(s[p+k])
		}
		if ars, ok := t.anchorIdx.get(lw[:n]); ok {
			rs.anchor(p, ars)
		}
		return j
	}
	var w injWordBuf
	if _, ok := injNormWord(s, p, &w); !ok || w.n < 2 || w.high {
		return j // a word with a letter of another script is highAt's
	}
	if ars, ok := t.anchorIdx.get(w.norm[:w.n]); ok {
		rs.anchor(p, ars)
	}
	if w.hasAlt {
		if ars, ok := t.anchorIdx.get(w.alt[:w.n]); ok {
			rs.anchor(p, ars)
		}
	}
	return j
}

// highAt looks at the rune that ends at i (a continuation byte followed by a byte that is
// none): a letter of another script or an invisible character may hide any anchor.
//
// The word that holds it is read as the lexer reads it, and is an anchor when it reads as one;
// where the word cannot be told (a word of many such runes, a rune cut short), every rule runs
// from injMaxSpan bytes before it.
func (rs *injRegions) highAt(i int) {
	if rs.whole {
		return
	}
	s := rs.x.s
	r, n := utf8.DecodeLastRuneInString(s[:i+1])
	if r < utf8.RuneSelf || !invisible(r) && foldLetter(r) == 0 {
		return
	}
	a := i + 1 - n
	if a < rs.highDone {
		return // the word was read at an earlier rune of it
	}
	p, ok := injWordStart(s, a)
	var w injWordBuf
	end := 0
	if ok {
		end, ok = injNormWord(s, p, &w)
	}
	if !ok || end <= a || p > 0 && midWord(s, p) {
		if !invisible(r) || a > 0 && injWordByte(s, a) {
			rs.add(max(0, a-injMaxSpan), a, injAllRules)
		}
		return
	}
	rs.highDone = end
	t := rs.x.t
	if w.n < 2 {
		return
	}
	if ars, ok := t.anchorIdx.get(w.norm[:w.n]); ok {
		rs.anchor(p, ars)
	}
	if w.hasAlt {
		if ars, ok := t.anchorIdx.get(w.alt[:w.n]); ok {
			rs.anchor(p, ars)
		}
	}
}

// injWordByte reports whether the byte before a ends a letter, digit or look-alike letter.
func injWordByte(s string, a int) bool {
	if s[a-1] < utf8.RuneSelf {
		return isAlnum(s[a-1])
	}
	r, _ := utf8.DecodeLastRuneInString(s[:a])
	return foldLetter(r) != 0
}

// injWordStart returns where the lexer's word that holds the rune at a begins: back over
// letters, digits, look-alike letters, invisible characters and the marks the lexer keeps
// inside a word, then forward to the first byte that can begin a word. ok is false when the
// word is longer than any the lexicon knows could be written.
func injWordStart(s string, a int) (int, bool) {
	k := a
	for k > 0 {
		if a-k > 4*maxNormWord+16 {
			return 0, false
		}
		b := s[k-1]
		if isAlnum(b) {
			k--
			continue
		}
		if (b == '\'' || b == '-' || b == '_' || b == '@' || b == '$') && k >= 2 && (isAlnum(s[k-2]) || s[k-2] >= utf8.RuneSelf) {
			k--
			continue
		}
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeLastRuneInString(s[:k])
			if foldLetter(r) != 0 || invisible(r) || r == '’' {
				k -= size
				continue
			}
		}
		break
	}
	// The lexer begins a word at a letter, a digit or a look-alike letter.
	for k < a {
		if isAlnum(s[k]) {
			return k, true
		}
		if s[k] >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[k:])
			if foldLetter(r) != 0 {
				return k, true
			}
			k += size
			continue
		}
		k++
	}
	return a, true
}

// injWalked is a token before an anchor (anchor): a word, or a punctuation mark (ch).
type injWalked struct {
	start int
	ch    byte
	words int // words from it to the anchor, itself included
	// rules are the rules the word can begin (of its spelling with '1' read as 'l' too, in
	// alt): the lexicon's, which holds every word of a first slot.
	rules, alt []int
	w          injWordBuf
}

// injWalkMax is the most tokens anchor reads back.
const injWalkMax = 32

// anchor adds the regions of the anchor word at p for the rules it stands for: for a rule
// whose anchor is its first slot, the anchor itself; for another, from the farthest token
// before it, as far as the rule reaches in words, that can fill its first slot.
func (rs *injRegions) anchor(p int, rules []injAnchorRule) {
	var m injMask
	lo := p
	walked := false
	toks := &rs.toks
	nt := 0
	full := false // the tokens before p were read as far as any rule reaches
	for _, ar := range rules {
		if ar.words == 0 {
			// A rule that must begin a line ("From:", "Regards") is not run from a word
			// inside one.
			if !rs.x.t.rules[ar.rule].slots[0].bol || injLineStart(rs.x.s, p) {
				m.set(int(ar.rule))
			}
			continue
		}
		if !walked {
			walked = true
			most := 0
			for _, o := range rules {
				most = max(most, int(o.words))
			}
			nt, full = rs.walkBack(p, most, toks)
		}
		s0 := &rs.x.t.rules[ar.rule].slots[0]
		found, beyond := -1, false
		for q := 0; q < nt; q++ {
			if toks[q].words > int(ar.words) {
				beyond = true
				break
			}
			if rs.fitsFirst(int(ar.rule), s0, &toks[q]) {
				found = toks[q].start
			}
		}
		switch {
		case found >= 0:
			m.set(int(ar.rule))
			lo = min(lo, found)
		case !beyond && !full:
			// The walk stopped at what it cannot read: from as far back as the rule reaches.
			m.set(int(ar.rule))
			lo = min(lo, max(0, p-int(ar.back)))
		}
	}
	if m != (injMask{}) {
		rs.add(lo, p, m)
	}
}

// injLineStart reports whether only white space holding a line break, or none at the start
// of the text, comes before p (a token the lexer says begins a line).
func injLineStart(s string, p int) bool {
	for ; p > 0; p-- {
		switch s[p-1] {
		case '\n':
			return true
		case ' ', '\t', '\r', '\f', '\v':
			continue
		}
		return false
	}
	return true
}

// fitsFirst reports whether the token w can begin rule r (fill its first slot, sl).
func (rs *injRegions) fitsFirst(r int, sl *injSigSlot, w *injWalked) bool {
	if w.ch != 0 {
		return strings.IndexByte(sl.puncts, w.ch) >= 0
	}
	return slices.Contains(w.rules, r) || slices.Contains(w.alt, r)
}

// walkBack reads the tokens before p, nearest first, as far as a match from one of them
// could reach p: not past a sentence end, a blank line, more white space than a phrase may
// hold or injMaxSpan bytes, nor past a letter of another script or an invisible character (a
// region of its own covers what lies before it). full is false when it stopped at what it
// cannot read (a word the lexer would read otherwise), or at injWalkMax tokens; it reads no
// further than most words.
func (rs *injRegions) walkBack(p, most int, out *[injWalkMax]injWalked) (n int, full bool) {
	s := rs.x.s
	j := p
	words := 0
	for {
		if words >= most {
			return n, true
		}
		if n == len(out) {
			return n, false
		}
		// White space before the token.
		ws, nl := 0, 0
		for j > 0 && isSpace(s[j-1]) {
			ws++
			if s[j-1] == '\n' {
				nl++
			}
			if nl >= 2 || ws > maxInjectionGap {
				return n, true
			}
			j--
		}
		if j == 0 || p-j > injMaxSpan {
			return n, true
		}
		b := s[j-1]
		if b < utf8.RuneSelf && !isAlnum(b) {
			if b == '!' || b == '?' || b == ';' || b == '.' && (j >= len(s) || isSpace(s[j])) {
				return n, true
			}
			out[n] = injWalked{start: j - 1, ch: b, words: words}
			n++
			j--
			continue
		}
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeLastRuneInString(s[:j])
			if r == '’' && j-size > 0 && isAlnum(s[j-size-1]) && j < len(s) && isAlnum(s[j]) {
				return n, false // inside a word
			}
			if !invisible(r) && foldLetter(r) == 0 {
				out[n] = injWalked{start: j - size, ch: foldPunct(r), words: words}
				n++
				j -= size
				continue
			}
		}
		// The word that ends at j: word bytes, with the marks the lexer keeps inside a word.
		k := j
		letters := true
		for k > 0 && p-k <= injMaxSpan+maxNormWord {
			b := s[k-1]
			if isAlpha(b) {
				k--
				continue
			}
			if isDigit(b) {
				letters = false
				k--
				continue
			}
			if (b == '\'' || b == '-' || b == '_' || b == '@' || b == '$') && k >= 2 && (isAlnum(s[k-2]) || s[k-2] >= utf8.RuneSelf) {
				letters = false
				k--
				continue
			}
			break
		}
		if k > 0 && s[k-1] >= utf8.RuneSelf || s[j-1] >= utf8.RuneSelf {
			// Look-alike letters or invisible characters in the word: read it as the lexer.
			var ok bool
			if k, ok = injWordStart(s, j); !ok || k >= j {
				return n, false
			}
			letters = false
		}
		if j < len(s) && s[j] >= utf8.RuneSelf {
			letters = false // a ’ may join it to the anchor side
		}
		o := &out[n]
		if letters {
			// ASCII letters alone, the most frequent word: no need to read it as the lexer.
			if j-k > maxNormWord {
				o.w.n = 0
			} else {
				o.w.n = j - k
				for q := k; q < j; q++ {
					o.w.norm[q-k] = lower(s[q])
				}
			}
			o.w.hasAlt = false
		} else if end, ok := injNormWord(s, k, &o.w); !ok || end != j {
			return n, false
		}
		if k > 0 && midWord(s, k) {
			return n, false
		}
		o.rules, o.alt = nil, nil
		t := rs.x.t
		if w := o.w.norm[:o.w.n]; len(w) > 0 && t.first(w) {
			e, _ := t.lex.get(w)
			o.rules = e.rules
		}
		if w := o.w.alt[:o.w.n]; o.w.hasAlt && t.first(w) {
			e, _ := t.lex.get(w)
			o.alt = e.rules
		}
		words++
		o.start, o.ch, o.words = k, 0, words
		n++
		j = k
	}
}

// scan finds the regions of a text no pass has read: as the single pass of scan.go does, at
// every word after a boundary and every rune of more than one byte.
func (rs *injRegions) scan() {
	s := rs.x.s
	from := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !isBoundaryByte(b) {
			continue
		}
		if i-from >= 20 {
			rs.longRun(from, i)
		}
		from = i + 1
		if b >= utf8.RuneSelf && (i+1 >= len(s) || s[i+1] < 0x80 || s[i+1] >= 0xC0) {
			rs.highAt(i)
		}
		if i+1 < len(s) && rs.x.t.wordFirst[s[i+1]] && (b < utf8.RuneSelf || !lastRuneIsWord(s[:i+1])) {
			rs.wordAt(i + 1)
		}
	}
	if len(s)-from >= 20 {
		rs.longRun(from, len(s))
	}
}

// region runs the rules of m from every token that begins in s[lo:hi]; it returns where
// pending text begins, or len(s).
func (x *injScan) region(lo, hi int, m *injMask, cx *injScan) int {
	s := x.s
	from := lo
	for k := 0; k < 64 && from > 0 && !isSpace(s[from-1]); k++ {
		from--
	}
	// Begin on the white space before, so that the first token knows what precedes it as
	// the lexer counts it: line breaks up to two, bytes up to 255.
	for k, nl := 0, 0; from > 0 && isSpace(s[from-1]) && (k < 255 || nl < 2); k++ {
		if s[from-1] == '\n' {
			nl++
		}
		from--
	}
	x.reset(from)
	for i := 0; x.ensure(i); i++ {
		t := x.tok(i)
		if int(t.start) < lo {
			continue
		}
		if int(t.start) > hi {
			break
		}
		if x.evalStart(i, cx, m) == injPending {
			return int(t.start)
		}
	}
	return len(s)
}

// injectionBase64 reads the base64 runs of s: a run that decodes to text with a match is a
// match. With more set it returns the start of a run still arriving at the end of s.
func (c *Classifier) injectionBase64(sc *scanState, more bool, rs *injRegions) int {
	s := sc.s
	open := len(s)
	// A run still arriving at the end of the text.
	if more {
		i := len(s)
		for i > 0 && b64Byte[s[i-1]] {
			i--
		}
		if i < len(s) && (i == 0 || !isWordByte(s[i-1])) && len(s)-i <= injB64Max && b64TextPrefix(s[i:]) {
			open = i
		}
	}
	run := func(i int) int {
		for i > 0 && b64Byte[s[i-1]] {
			i--
		}
		j := i
		for j < len(s) && b64Byte[s[j]] {
			j++
		}
		if more && j == len(s) {
			return j
		}
		if n := j - i; n >= injB64Min && n <= injB64Max && (i == 0 || !isWordByte(s[i-1])) && b64TextPrefix(s[i:j]) && hasUpperAndLower(s[i:j]) {
			if c.injectionDecoded(s[i:j]) {
				c.emit(sc, detInjection, i, j)
			}
		}
		return j
	}
	if rs.nlong <= len(rs.long) {
		done := 0
		for _, at := range rs.long[:rs.nlong] {
			if at >= done {
				done = run(at)
			}
		}
		return open
	}
	for i := 0; i < len(s); {
		if !b64Byte[s[i]] {
			i++
			continue
		}
		i = max(i+1, run(i))
	}
	return open
}

// nonLetters8 returns the bytes of x (eight bytes of text, load8) that are not ASCII letters,
// as the high bit of each (the lowest set bit is the first such byte; the bits above it may
// be wrong).
func nonLetters8(x uint64) uint64 {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	y := x | 0x20*ones // 'A'-'Z' to 'a'-'z'; no other byte lands in 'a'-'z'
	ge := y + (0x80-'a')*ones
	gt := y + (0x80-'z'-1)*ones
	return (^ge | gt | x) & high
}

// load8 reads s[j:j+8] as a little-endian word.
func load8(s string, j int) uint64 {
	// One slice, one bounds check: the compiler then reads the eight bytes with one load
	// (with the check on s[j+7] alone, each byte kept its own check, j could be negative).
	s = s[j : j+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// b64Byte marks the bytes of base64 (both alphabets) and its padding.
var b64Byte = func() (t [256]bool) {
	for b := range 256 {
		t[b] = isB64Std(byte(b))
	}
	return
}()

// hasUpperAndLower reports whether s has both an upper-case and a lower-case ASCII letter.
func hasUpperAndLower(s string) bool {
	u, l := false, false
	for i := 0; i < len(s); i++ {
		u = u || isUpper(s[i])
		l = l || isLower(s[i])
	}
	return u && l
}

func isB64Std(b byte) bool {
	return isAlnum(b) || b == '+' || b == '/' || b == '=' || b == '-' || b == '_'
}

// b64TextPrefix reports whether run can begin the base64 of printable ASCII: the first
// character of every group of four encodes the top six bits of a byte from 0x20 to 0x7e,
// one of I-Z and a-f.
func b64TextPrefix(run string) bool {
	for k := 0; k < len(run); k += 4 {
		if b := run[k]; !(b >= 'I' && b <= 'Z' || b >= 'a' && b <= 'f') {
			return false
		}
	}
	return true
}

// injectionDecoded reports whether the base64 run b decodes to printable text with a match.
func (c *Classifier) injectionDecoded(b string) bool {
	b = strings.TrimRight(b, "=")
	var buf [injB64Max]byte
	enc := base64.RawStdEncoding
	if strings.ContainsAny(b, "-_") {
		enc = base64.RawURLEncoding
	}
	n, err := enc.Decode(buf[:], []byte(b))
	if err != nil || n == 0 {
		return false
	}
	d := buf[:n]
	spaces := 0
	for _, ch := range d {
		if ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r' || ch >= 0x7f {
			return false
		}
		if ch == ' ' {
			spaces++
		}
	}
	if spaces == 0 {
		return false
	}
	inner := scanState{s: string(d), depth: 1}
	c.injectionTokens(&inner, false)
	return len(inner.spans) > 0
}
