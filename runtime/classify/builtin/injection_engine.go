package builtin

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
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
//     the signals in a window (injWindow tokens, injMaxSpan bytes) weigh 1 or more together, the
//     window from its first signal to the last is a match.
//   - A base64 run that decodes to text is read again, decoded; a match inside makes the run
//     a match.
//
// Streaming: tokens are read left to right and every decision about a token depends only on
// the tokens before it and at most injLookahead after it, so the text before the earliest
// undecided start (a match still being read at the end of the text, a word still growing
// that could begin a rule, a signal that a later one could still complete) is settled, and
// Open is at most that start. No decision looks back further than injMaxSpan bytes, which
// with the longest match stays within the hold-back hint.

const (
	injLookahead  = 40  // most tokens a rule reads from its first
	injWindow     = 40  // tokens a window of signals spans
	injMaxSpan    = 240 // longest match in bytes, and longest window of signals
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
	injHint = max(injMaxSpan, injQuoteBytes+injCueBytes) + 16
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
	end     bool
}

type injSigRule struct {
	name  string
	w     float32
	slots []injSigSlot
	need  uint64
	noNeg bool
	noTo  bool
	noRep bool
}

type injSigTable struct {
	rules   []injSigRule
	lex     map[string]uint64
	setBit  map[string]uint64
	byWord  map[string][]int
	byPunct [256][]int
	firsts  []string // sorted first words, for the prefix check of a growing word
}

var injSig = compileInjSig(injSets, injRuleDefs)

// compileInjSig compiles the rules; a malformed rule is a programming error and panics.
func compileInjSig(sets map[string]string, defs []injRuleDef) *injSigTable {
	t := &injSigTable{lex: map[string]uint64{}, setBit: map[string]uint64{}, byWord: map[string][]int{}}
	names := make([]string, 0, len(sets))
	for n := range sets {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 64 {
		panic("builtin: too many injection word sets")
	}
	members := map[string][]string{}
	for i, n := range names {
		bit := uint64(1) << i
		t.setBit[n] = bit
		for _, w := range strings.Fields(sets[n]) {
			t.lex[w] |= bit
			members[n] = append(members[n], w)
		}
	}
	classOf := func(spec string) uint64 {
		var m uint64
		for _, n := range strings.FieldsFunc(spec, func(r rune) bool { return r == '|' || r == ',' }) {
			b, ok := t.setBit[n]
			if !ok {
				panic(fmt.Sprintf("builtin: injection rule names unknown set %q", n))
			}
			m |= b
		}
		return m
	}
	firsts := map[string]bool{}
	for ri, d := range defs {
		r := injSigRule{name: d.name, w: d.w}
		if d.need != "" {
			r.need = classOf(d.need)
		}
		for _, f := range strings.Fields(d.flags) {
			switch f {
			case "noNeg":
				r.noNeg = true
			case "noTo":
				r.noTo = true
			case "noRep":
				r.noRep = true
			default:
				panic(fmt.Sprintf("builtin: injection rule %q: unknown flag %q", d.name, f))
			}
		}
		for _, f := range strings.Fields(d.pattern) {
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
				}
				break
			}
			if k := strings.LastIndex(f, "*"); k >= 0 {
				fmt.Sscanf(f[k+1:], "%d", &sl.gap)
				if sl.gap <= 0 {
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
			// Inside braces '|' separates sets: {A|B}.
			var fb strings.Builder
			depth := 0
			for _, ch := range f {
				switch {
				case ch == '{':
					depth++
				case ch == '}':
					depth--
				case ch == '|' && depth > 0:
					ch = ','
				}
				fb.WriteRune(ch)
			}
			for _, alt := range strings.Split(fb.String(), "|") {
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
					sl.words = append(sl.words, alt)
				}
			}
			r.slots = append(r.slots, sl)
		}
		s0 := r.slots[0]
		if s0.opt || s0.gap > 0 || s0.end || s0.anyWord {
			panic(fmt.Sprintf("builtin: injection rule %q must begin with a mandatory slot", d.name))
		}
		for _, w := range s0.words {
			t.byWord[w] = append(t.byWord[w], ri)
			firsts[w] = true
		}
		for n, bit := range t.setBit {
			if s0.class&bit != 0 {
				for _, w := range members[n] {
					if l := t.byWord[w]; len(l) == 0 || l[len(l)-1] != ri {
						t.byWord[w] = append(t.byWord[w], ri)
					}
					firsts[w] = true
				}
			}
		}
		for k := 0; k < len(s0.puncts); k++ {
			t.byPunct[s0.puncts[k]] = append(t.byPunct[s0.puncts[k]], ri)
		}
		t.rules = append(t.rules, r)
	}
	for w := range firsts {
		t.firsts = append(t.firsts, w)
	}
	slices.Sort(t.firsts)
	return t
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
	idx        int // token index of its first token
	rule       int
	w          float32
}

// injScan is one call's state; it lives on the stack.
type injScan struct {
	t    *injSigTable
	s    string
	more bool
	ring [injRing]itok
	n    int // tokens read
	done bool
	sigs [32]injSignal
	nsig int
	// found are the matches, handed to the call's state at the end (so that the state does
	// not escape through this one).
	found [][2]int
}

// emit records a match.
func (x *injScan) emit(start, end int) { x.found = append(x.found, [2]int{start, end}) }

func (x *injScan) tok(i int) *itok { return &x.ring[i&(injRing-1)] }

// Bits of the sets the context checks use.
var (
	injNEG  = injSig.setBit["NEG"]
	injREQ  = injSig.setBit["REQ"]
	injCUE  = injSig.setBit["CUE"]
	injSoft = func() (t [256]bool) {
		for _, b := range []byte(",.\"'()[]{}*_~`-:/\\|<>#@=+&^%$0123456789") {
			t[b] = true
		}
		t[0x80] = true
		return
	}()
)

// lookup fills t.class from the lexicon.
func (x *injScan) lookup(t *itok) {
	t.class = 0
	if t.kind != tkWord || t.n == 0 {
		return
	}
	c, ok := x.t.lex[string(t.norm[:t.n])]
	if !ok && t.leet {
		// '1' was read as 'i'; it may have been an 'l'.
		raw := x.s[t.start:t.end]
		k := 0
		var alt [maxNormWord]byte
		copy(alt[:], t.norm[:t.n])
		changed := false
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
		if changed {
			c = x.t.lex[string(alt[:t.n])]
		}
	}
	t.class = c
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
	if sl.class&t.class != 0 {
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
	seen bool
}

// matchRule reads rule r from token i (which fits its first slot). It returns the outcome
// and the index of the match's last token.
func (x *injScan) matchRule(r *injSigRule, i int) (int, int) {
	first := x.tok(i)
	if first.open {
		return injPending, 0
	}
	var cur, nxt [24]injState
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
	add(&cur, &nc, injState{k: 1, seen: r.need&first.class != 0})
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
		if j >= x.n {
			if !x.done {
				panic("builtin: injection match read past the tokens")
			}
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
		hard := x.hard(t)
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
					add(&nxt, &nn, ns)
				}
				if !hard && injSoft[t.ch] && (st.k > 0) {
					add(&nxt, &nn, st) // a soft mark between words is skipped
				}
				if t.open {
					return injPending, 0
				}
				continue
			}
			if t.open {
				return injPending, 0
			}
			if sl.bol && t.nl == 0 {
				continue
			}
			if !x.matchWord(sl, t) {
				continue
			}
			seen := st.seen || r.need&t.class != 0
			if sl.gap > 0 {
				if int(st.g)+1 <= sl.gap {
					add(&nxt, &nn, injState{k: st.k, g: st.g + 1, seen: seen})
				}
				continue
			}
			add(&nxt, &nn, injState{k: st.k + 1, seen: seen})
		}
		cur, nc = nxt, nn
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
			if r.noNeg && t.class&injNEG != 0 {
				return true
			}
			if r.noTo && words == 1 && t.n == 2 && t.norm[0] == 't' && t.norm[1] == 'o' {
				for k, w := j-1, 0; k >= lo && w < 3; k-- {
					if p := x.tok(k); p.kind == tkWord {
						w++
						if p.class&injREQ != 0 {
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
					if p.class&injCUE != 0 {
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

// signal records a signal and emits the window it completes.
func (x *injScan) signal(sg injSignal) {
	// Drop the signals out of the window.
	k := 0
	for q := 0; q < x.nsig; q++ {
		if o := x.sigs[q]; sg.idx-o.idx <= injWindow && sg.end-o.start <= injMaxSpan {
			x.sigs[k] = o
			k++
		}
	}
	x.nsig = k
	if x.nsig == len(x.sigs) {
		copy(x.sigs[:], x.sigs[1:])
		x.nsig--
	}
	x.sigs[x.nsig] = sg
	x.nsig++
	var sum float32
	start, end := sg.start, sg.end
	for q := 0; q < x.nsig; q++ {
		o := x.sigs[q]
		dup := false
		for p := 0; p < q; p++ {
			if x.sigs[p].rule == o.rule {
				dup = true
				break
			}
		}
		if !dup {
			sum += o.w
		}
		start, end = min(start, o.start), max(end, o.end)
	}
	if sum >= 0.999 {
		x.emit(start, end)
	}
}

// evalStart runs every rule that can begin at token i. It returns injPending when a match
// from i is still undecided.
func (x *injScan) evalStart(i int) int {
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
		rules = x.t.byWord[string(t.norm[:t.n])]
	case tkPunct:
		if t.open {
			return injPending
		}
		rules = x.t.byPunct[t.ch]
	}
	out := injNoMatch
	for _, ri := range rules {
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
			if end-start > injMaxSpan || x.suppressed(r, i) {
				continue
			}
			if r.w >= 0.999 {
				x.emit(start, end)
			} else {
				x.signal(injSignal{start: start, end: end, idx: i, rule: ri, w: r.w})
			}
		}
	}
	return out
}

// injectionSignals runs the engine over s, emitting matches; with more set it returns where
// the pending text begins (len(s) when nothing is pending).
func (c *Classifier) injectionSignals(sc *scanState, more bool) int {
	return min(c.injectionTokens(sc, more), c.injectionBase64(sc, more))
}

// injectionTokens runs the rules over the tokens of s.
func (c *Classifier) injectionTokens(sc *scanState, more bool) int {
	s := sc.s
	var xs injScan
	x := &xs
	x.t, x.s, x.more = injSig, s, more
	open := len(s)
	// The phrase list's matches (injection.go) are turned off by the same context checks as
	// the rules: a phrase after a negation, after "asks you to", or inside a reported quote.
	var phrases []int
	for k, sp := range sc.spans {
		if detector(sp.Category>>detShift)-1 == detInjection {
			phrases = append(phrases, k)
		}
	}
	slices.SortFunc(phrases, func(a, b int) int { return sc.spans[a].Start - sc.spans[b].Start })
	lx := lexer{s: s, more: more}
	next := 0
	for !x.done {
		t := x.tok(x.n)
		if lx.next(t) {
			x.lookup(t)
			for len(phrases) > 0 && sc.spans[phrases[0]].Start <= int(t.start) {
				if sc.spans[phrases[0]].Start == int(t.start) && x.suppressed(&injPhraseContext, x.n) {
					sc.spans[phrases[0]].Category = -1
				}
				phrases = phrases[1:]
			}
			x.n++
		} else {
			x.done = true
		}
		for next < x.n && (x.n-next > injLookahead+1 || x.done) {
			if x.evalStart(next) == injPending {
				open = min(open, int(x.tok(next).start))
				x.done = true
				break
			}
			next++
		}
	}
	for _, f := range x.found {
		c.emit(sc, detInjection, f[0], f[1])
	}
	if more {
		// A signal may still be completed by one to come.
		kmin := next
		for q := 0; q < x.nsig; q++ {
			if sg := x.sigs[q]; kmin-sg.idx <= injWindow {
				open = min(open, sg.start)
			}
		}
	}
	return open
}

// injectionBase64 reads the base64 runs of s: a run that decodes to text with a match is a
// match. With more set it returns the start of a run still arriving at the end of s.
func (c *Classifier) injectionBase64(sc *scanState, more bool) int {
	s := sc.s
	open := len(s)
	if sc.depth > 0 {
		return open
	}
	for i := 0; i < len(s); {
		if !isB64Std(s[i]) {
			i++
			continue
		}
		j := i
		upper, lowerc := false, false
		for j < len(s) && isB64Std(s[j]) {
			switch b := s[j]; {
			case isUpper(b):
				upper = true
			case isLower(b):
				lowerc = true
			}
			j++
		}
		if more && j == len(s) {
			if (i == 0 || !isWordByte(s[i-1])) && j-i <= injB64Max && b64TextPrefix(s[i:j]) {
				open = min(open, i)
			}
			break
		}
		if n := j - i; n >= injB64Min && n <= injB64Max && upper && lowerc && (i == 0 || !isWordByte(s[i-1])) && b64TextPrefix(s[i:j]) {
			if c.injectionDecoded(s[i:j]) {
				c.emit(sc, detInjection, i, j)
			}
		}
		i = j
	}
	return open
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
