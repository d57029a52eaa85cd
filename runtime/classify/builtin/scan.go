package builtin

import (
	"cmp"
	"context"
	"math/bits"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Trigger bits of the byte table: a byte whose entry is zero is skipped by the single pass.
const (
	trigDigit      uint16 = 1 << iota // phone, credit-card, iban, us-ssn, IPv4
	trigAt                            // email, and the password of scheme://user:password@host
	trigColon                         // IPv6
	trigAssign                        // ':' and '=' of key=value assignments, '>' of <key>value
	trigComma                         // ',' of f("key", "value")
	trigDash                          // -----BEGIN, sk-, glpat-, xox?-
	trigUnderscore                    // gh?_, github_pat_
	trigUpperA                        // AKIA, ASIA, …
	trigUpperJ                        // the J of eyJ
	trigBoundary                      // a word boundary: the next byte may begin an anchor word
	trigCustom                        // first byte of a windowed custom pattern
	trigKeyword                       // first byte of a keyword that begins with a non-word byte
	trigDot                           // '.' and '~' inside vendor tokens (hvs., SG., dt0c01., Q~)
	trigHead                          // the first capital of a vendor prefix (AIza, EAAA, LTAI, SK) or of base64 (ZXlK, LS0t)
)

// Bits of Classifier.wordFirst.
const (
	firstInjection uint8 = 1 << iota
	firstKeyword
)

// byteSet64k is a set of byte pairs.
type byteSet64k [1024]uint64

func (p *byteSet64k) add(b0, b1 byte) { k := uint(b0)<<8 | uint(b1); p[k>>6] |= 1 << (k & 63) }
func (p *byteSet64k) has(b0, b1 byte) bool {
	k := uint(b0)<<8 | uint(b1)
	return p[k>>6]&(1<<(k&63)) != 0
}

// notLower8 flags, in their high bits, the bytes of x (eight bytes of text, the first in
// the low byte) that are not ASCII small letters. The lowest flag is always exact (a carry
// only comes from a flagged byte and only reaches the bytes above it), which is all the
// passes read.
func notLower8(x uint64) uint64 {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	y := x &^ high
	ge := y + (0x80-'a')*ones   // high bit: at least 'a'
	gt := y + (0x80-'z'-1)*ones // high bit: beyond 'z'
	return (^ge | gt | x) & high
}

// ctxStride is how many bytes the pass scans between two looks at the context.
const ctxStride = 64 << 10

// maxWindowed is how many custom patterns can use the windowed path; more go global. It keeps
// the per-pattern cursors on the stack.
const maxWindowed = 16

// detShift places the detector (plus one) above the category index in Span.Category while a
// call is running, so that finish can apply detector-specific rules; finish strips it.
const detShift = 16

// scanState is one call's state. It lives on the stack: a call that matches nothing allocates
// nothing here.
type scanState struct {
	s string
	// depth is how many encodings deep the text is (base64 inside a value, see encoded.go).
	depth int
	// held is 1 + the earliest start of a match that text after the end's white space
	// decides (see hold), 0 when there is none.
	held  int
	spans []classify.Span
	// The next positions at which a handler may start again, so that a token is parsed once.
	numNext    int
	ip6Next    int
	assignNext int
	namedNext  int
	customNext [maxWindowed]int
}

// add records a match of detector d (or a custom pattern when d is numDetectors) under
// category cat.
func (sc *scanState) add(start, end int, cat int16, d detector) {
	sc.spans = append(sc.spans, classify.Span{Start: start, End: end, Category: int(cat) | int(d+1)<<detShift})
}

// hold marks text from a as pending whatever the trailing run of the text is: a match that
// begins there is decided by text still to come after white space.
func (sc *scanState) hold(a int) {
	if sc.held == 0 || a+1 < sc.held {
		sc.held = a + 1
	}
}

// emit records a match of a built-in detector.
func (c *Classifier) emit(sc *scanState, d detector, start, end int) {
	sc.add(start, end, c.cat[d], d)
}

// scan is the single pass over s. With more set (Input.More), it also computes where the
// pending text begins (see pending.go) and returns only the spans that end before it, with
// that offset; otherwise the offset is 0.
func (c *Classifier) scan(ctx context.Context, s string, more bool) ([]classify.Span, int, error) {
	spans, open, v, err := c.scanView(ctx, s, more)
	if err != nil || v == nil || len(v.hidden) == 0 {
		return spans, open, err
	}
	return c.hiddenRuns(ctx, s, v.hidden, v.orig(len(v.s)), spans, open, more)
}

// scanView is scan without the hidden runs: the pass over s, or over its folded view when
// s holds invisible characters, other forms of ASCII letters or look-alikes (fold.go), with
// the offsets mapped back. It returns the view, or nil when s needed none.
func (c *Classifier) scanView(ctx context.Context, s string, more bool) ([]classify.Span, int, *foldedView, error) {
	at := -1
	if len(s) <= maxFolded {
		at = foldAt(s, more)
	}
	if at < 0 {
		spans, open, err := c.scanText(ctx, s, more)
		return spans, open, nil, err
	}
	v := foldView(s, at, more)
	spans, open, err := c.scanText(ctx, v.s, more)
	if err != nil {
		return nil, 0, nil, err
	}
	for k := range spans {
		spans[k].Start, spans[k].End = v.orig(spans[k].Start), v.orig(spans[k].End)
	}
	if more {
		open = v.orig(open)
	}
	return spans, open, &v, nil
}

// hiddenContext is how many bytes before a hidden run are read with it: the key or the words
// that make a value a secret stand within 64 bytes of it (named.go, assign.go).
const hiddenContext = 64

// minHidden is the fewest characters a finished hidden run must hold to be read: fewer hide
// no credential or instruction (the shortest secrets the pack reports have eight), and a
// text of many short runs would otherwise cost a scan of hiddenContext bytes for each.
const minHidden = 8

// hiddenRuns scans each run of s that reads otherwise than it is stored (fold.go) as it
// reads — tag characters as the ASCII they spell, text after a right-to-left override
// reversed — and adds what it finds to spans, over the characters that spell it. With more,
// a run that reaches the end of the view (viewEnd, the offset in s where it ends: an
// incomplete character after it may continue the run) is pending from its start (an
// override's run, from the override), and spans are settled against open as the pass
// settles its own.
func (c *Classifier) hiddenRuns(ctx context.Context, s string, runs []hiddenRun, viewEnd int, spans []classify.Span, open int, more bool) ([]classify.Span, int, error) {
	const tagSize = 4 // U+E0020–E007E are four bytes in UTF-8
	var b strings.Builder
	var from, to []int // for a reversed run: each byte's rune in s, where it begins and ends
	for _, r := range runs {
		// The words before the run, which a reader sees with it ("DB_PASSWORD=", "the key
		// is", a vendor's prefix), are read before it.
		cs := max(0, r.mark-hiddenContext)
		for cs < r.mark && !utf8.RuneStart(s[cs]) {
			cs++
		}
		b.Reset()
		b.WriteString(s[cs:r.mark])
		lead := r.mark - cs
		pending := more && r.end >= viewEnd
		if !pending && utf8.RuneCountInString(s[r.start:r.end]) < minHidden {
			continue // too short to hide anything
		}
		if pending && r.reversed {
			// What arrives next is read right after the words: they are pending as a text
			// that goes on would leave them, and the run from the override on.
			_, o, _, err := c.scanView(ctx, b.String(), true)
			if err != nil {
				return nil, 0, err
			}
			open = min(open, cs+o, r.mark)
			continue
		}
		if r.reversed {
			from, to = from[:0], to[:0]
			for e := r.end; e > r.start; {
				_, size := utf8.DecodeLastRuneInString(s[r.start:e])
				b.WriteString(s[e-size : e])
				for range size {
					from, to = append(from, e-size), append(to, e)
				}
				e -= size
			}
		} else {
			for i := r.start; i < r.end; i += tagSize {
				t, _ := utf8.DecodeRuneInString(s[i:])
				b.WriteByte(byte(t - 0xE0000))
			}
		}
		// The words and the run are read as their view only (scanView): hidden runs inside
		// them (an earlier run among the words, tags written backwards) are not read again,
		// so that a run costs one scan of at most hiddenContext bytes more than itself.
		if pending { // tags still arriving: the words and the run so far, as a stream
			_, o, _, err := c.scanView(ctx, b.String(), true)
			if err != nil {
				return nil, 0, err
			}
			if o < lead {
				open = min(open, cs+o)
			}
			open = min(open, r.mark)
			continue
		}
		found, _, _, err := c.scanView(ctx, b.String(), false)
		if err != nil {
			return nil, 0, err
		}
		for _, sp := range found {
			switch {
			case sp.End <= lead:
				continue // the words alone: the view found what is there
			case sp.Start < lead: // begins in the words: to the end of what it reads of the run
				sp.Start = cs + sp.Start
				if r.reversed {
					sp.End = r.end
				} else {
					sp.End = r.start + tagSize*(sp.End-lead)
				}
			case r.reversed:
				sp.Start, sp.End = from[sp.End-1-lead], to[sp.Start-lead]
			default:
				sp.Start, sp.End = r.start+tagSize*(sp.Start-lead), r.start+tagSize*(sp.End-lead)
			}
			spans = append(spans, sp)
		}
	}
	slices.SortFunc(spans, func(a, b classify.Span) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), cmp.Compare(a.Category, b.Category))
	})
	spans = slices.Compact(spans)
	if !more {
		return spans, 0, nil
	}
	spans, open = settleAt(spans, open)
	return spans, open, nil
}

// scanText is scan of a text that needs no folding.
func (c *Classifier) scanText(ctx context.Context, s string, more bool) ([]classify.Span, int, error) {
	if c.on(detInjection) {
		loadInjection() // the pack's tables, built on its first classification
		var rs injRegions
		rs.init(s, more)
		return c.scanWith(ctx, s, more, &rs)
	}
	return c.scanWith(ctx, s, more, nil)
}

// scanWith is scan, with rs gathering the prompt-injection engine's regions when the pack is
// on.
func (c *Classifier) scanWith(ctx context.Context, s string, more bool, rs *injRegions) ([]classify.Span, int, error) {
	var sc scanState
	sc.s = s
	n := len(s)
	// rs gathers the prompt-injection engine's regions as the pass finds its anchors: it is
	// handed to the pass rather than kept in sc, whose contents escape.
	inj := rs
	if n > 2 && inj != nil {
		c.injWordAt(&sc, inj, 0)
	}
	if n > 0 && c.wordFirst[s[0]] != 0 {
		c.wordAt(&sc, 0)
	}
	for lo := 0; lo < n; lo += ctxStride {
		if lo > 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		if inj != nil {
			c.passInj(&sc, inj, lo, min(n, lo+ctxStride))
		} else {
			c.pass(&sc, lo, min(n, lo+ctxStride))
		}
	}
	for _, p := range c.global {
		p.matchAll(&sc)
	}
	sigOpen := n
	if rs != nil {
		if injWholeText {
			rs.add(0, n, injAllRules)
		}
		sigOpen = c.injectionRun(&sc, rs, more)
	}
	if !more {
		return sc.finish(), 0, nil
	}
	open := min(c.open(s), sigOpen)
	if sc.held > 0 {
		open = min(open, sc.held-1)
	}
	open = sc.settle(open)
	return sc.finish(), open, nil
}

// pass runs the triggers of sc.s[lo:hi] without the prompt-injection pack (or on a
// decoded value's text). passInj is the same loop with the pack's work at boundaries: a
// change to one is a change to the other.
func (c *Classifier) pass(sc *scanState, lo, hi int) {
	s, n := sc.s, len(sc.s)
	trig := &c.trig
	quiet := c.quietLower
	for i := lo; i < hi; i++ {
		// Small letters, most of prose, trigger nothing (quietLower): they are skipped
		// eight at a time, which also spares a mispredicted branch at the end of every word.
		if quiet && i+8 <= hi {
			if m := notLower8(load8(s, i)); m == 0 {
				i += 7
				continue
			} else {
				i += bits.TrailingZeros64(m) >> 3
			}
		}
		t := trig[s[i]]
		if t == 0 {
			continue
		}
		// Without a detector of numbers, a digit matters only after a letter (the body of a
		// Databricks token, databricksAt).
		if t == trigDigit && !c.numbers && (i == 0 || !isAlpha(s[i-1])) {
			continue
		}
		// A comma matters to assignments only right after a string literal; elsewhere
		// it is just a boundary, as it is in prose.
		if t&trigComma != 0 && (i == 0 || s[i-1] != '"' && s[i-1] != '\'' && s[i-1] != ' ') {
			t &^= trigComma
			if t == 0 {
				continue
			}
		}
		// A '.' ends most sentences and a capital begins them: a vendor token needs a token
		// byte after its '.', and a capital the first two bytes of a prefix. Decide both here,
		// without a call, as the spaces below.
		if t&trigDot != 0 && (i+1 >= n || !isB64URL(s[i+1]) && s[i+1] != '~') {
			t &^= trigDot
		}
		if t&trigHead != 0 && (i+1 >= n || !headPairs.has(s[i], s[i+1])) {
			t &^= trigHead
		}
		// Spaces are the most frequent trigger: decide them here, without a call, from the
		// next two bytes.
		if t == trigBoundary {
			if i+2 < n {
				if !c.wordPairs.has(s[i+1], s[i+2]) {
					continue
				}
			} else if i+1 >= n || c.wordFirst[s[i+1]] == 0 {
				continue
			}
		}
		if t != 0 {
			c.trigger(sc, i, t)
		}
	}
}

// passInj is pass with the prompt-injection pack on: the same triggers, and at every
// boundary what the engine's regions need (see injRegions): the words that may be anchors of
// the engine or of the phrase list, runes of more than one byte, long words.
func (c *Classifier) passInj(sc *scanState, rs *injRegions, lo, hi int) {
	s, n := sc.s, len(sc.s)
	from := max(lo, rs.from)
	keywords := c.keywords.len() > 0
	trig := &c.trig
	quiet := c.quietLower
	for i := lo; i < hi; i++ {
		if quiet && i+8 <= hi { // as in pass
			if m := notLower8(load8(s, i)); m == 0 {
				i += 7
				continue
			} else {
				i += bits.TrailingZeros64(m) >> 3
			}
		}
		t := trig[s[i]]
		if t == 0 {
			continue
		}
		// Without a detector of numbers, a digit matters only after a letter (the body of a
		// Databricks token, databricksAt).
		if t == trigDigit && !c.numbers && (i == 0 || !isAlpha(s[i-1])) {
			continue
		}
		if t&trigBoundary != 0 {
			// The engine's anchors are words (wordAt); here, a long word of letters and
			// digits (a piece of a base64 run?) and a rune of more than one byte, which may
			// be a look-alike letter or an invisible character.
			if i-from >= 20 {
				rs.longRun(from, i)
			}
			from = i + 1
			if s[i] >= utf8.RuneSelf && (i+1 >= n || s[i+1] < 0x80 || s[i+1] >= 0xC0) {
				rs.highAt(i)
			}
			// A word that may be an anchor, by its first three bytes (injTriples): most
			// boundaries are decided by two loads and a bit.
			may := false
			if i+3 < n {
				m := injTriMask[(int(injTriClass[s[i+1]])*28+int(injTriClass[s[i+2]]))&1023]
				may = m>>injTriClass[s[i+3]]&1 != 0
				if m&injTriPairs != 0 {
					may = injSig.wordPairs.has(s[i+1], s[i+2])
				}
			} else {
				may = i+2 < n
			}
			if may && (s[i] < utf8.RuneSelf || !lastRuneIsWord(s[:i+1])) {
				// Most such words are none of the anchors: a word of fewer than eight ASCII
				// letters that the lexer ends there is passed over here when no anchor of
				// either layer has its length and its first and last letters (injWordFilter),
				// as injWordAt would pass it over.
				if p := i + 1; p+8 <= n {
					if bad := nonLetters8(load8(s, p)); bad&0xff == 0 && bad != 0 {
						j := p + bits.TrailingZeros64(bad)>>3
						if injWordFilter[j-p][(s[p]|0x20)-'a']&(1<<((s[j-1]|0x20)-'a')) == 0 && !injWordGoesOn(s, j) {
							may = false
						}
					}
				}
				if may {
					c.injWordAt(sc, rs, i+1)
				}
			}
		}
		// A comma matters to assignments only right after a string literal; elsewhere
		// it is just a boundary, as it is in prose.
		if t&trigComma != 0 && (i == 0 || s[i-1] != '"' && s[i-1] != '\'' && s[i-1] != ' ') {
			t &^= trigComma
			if t == 0 {
				continue
			}
		}
		// A '.' ends most sentences and a capital begins them: a vendor token needs a token
		// byte after its '.', and a capital the first two bytes of a prefix. Decide both here,
		// without a call, as the spaces below.
		if t&trigDot != 0 && (i+1 >= n || !isB64URL(s[i+1]) && s[i+1] != '~') {
			t &^= trigDot
		}
		if t&trigHead != 0 && (i+1 >= n || !headPairs.has(s[i], s[i+1])) {
			t &^= trigHead
		}
		// Spaces are the most frequent trigger: decide them here, without a call, from the
		// next two bytes.
		if t == trigBoundary {
			if !keywords {
				continue // the phrase list and the engine are reached above
			}
			if i+2 < n {
				if !c.wordPairs.has(s[i+1], s[i+2]) {
					continue
				}
			} else if i+1 >= n || c.wordFirst[s[i+1]] == 0 {
				continue
			}
		}
		if t != 0 {
			c.trigger(sc, i, t)
		}
	}
	if hi == n && n-from >= 20 {
		rs.longRun(from, n)
	}
	rs.from = from
}

// injWordAt runs the prompt-injection pack at p, the first byte of a word whose first three
// bytes may begin an anchor: the phrase list, and the signal engine's regions.
func (c *Classifier) injWordAt(sc *scanState, rs *injRegions, p int) {
	s := sc.s
	j := rs.wordAt(p)
	if !isAlpha(s[p]) {
		return
	}
	if j < 0 {
		j = wordEnd(s, p)
	}
	// The phrase list's filter, by length and first and last letters (injectionAt's own).
	if n := j - p; n < len(injection.lenFirst) && injection.lenFirst[n]&(1<<(lower(s[p])-'a')) != 0 &&
		injection.lenLast[n]&(1<<(lower(s[j-1])-'a')) != 0 {
		c.injectionAt(sc, p)
	}
}

// trigger runs the handlers of the trigger bits t at position i.
func (c *Classifier) trigger(sc *scanState, i int, t uint16) {
	s := sc.s
	if t&trigBoundary != 0 && i+1 < len(s) && c.wordFirst[s[i+1]] != 0 && (s[i] < utf8.RuneSelf || !lastRuneIsWord(s[:i+1])) {
		c.wordAt(sc, i+1)
	}
	if t&trigDigit != 0 {
		if c.numbers && i >= sc.numNext {
			c.numberAt(sc, i)
		}
		if i >= 4 && isAlpha(s[i-1]) && c.on(detGenericSecret) {
			c.databricksAt(sc, i)
		}
		if i > 0 && i >= sc.namedNext && isAlpha(s[i-1]) && (c.on(detGenericSecret) || c.on(detAWSSecretKey)) {
			c.namedSecretAt(sc, i)
		}
	}
	if t&trigAt != 0 {
		c.atSignAt(sc, i)
	}
	if t&trigColon != 0 && i >= sc.ip6Next {
		c.ipv6At(sc, i)
	}
	if t&trigAssign != 0 && s[i] == ':' {
		c.colonAt(sc, i)
		if strings.HasPrefix(s[i+1:], "//") {
			c.urlAt(sc, i)
		}
	}
	if t&trigAssign != 0 && i >= sc.assignNext {
		c.assignAt(sc, i)
	}
	if t&trigComma != 0 {
		c.callArgAt(sc, i)
	}
	if t&trigDash != 0 {
		c.dashAt(sc, i)
	}
	if t&trigUnderscore != 0 {
		c.underscoreAt(sc, i)
	}
	if t&trigUpperA != 0 {
		if c.on(detAWSAccessKey) {
			c.awsKeyAt(sc, i)
		}
		if i+1 < len(s) && headPairs.has(s[i], s[i+1]) {
			c.headAt(sc, i)
		}
	}
	if t&trigHead != 0 {
		c.headAt(sc, i)
	}
	if t&trigDot != 0 {
		c.dotAt(sc, i)
	}
	if t&trigUpperJ != 0 {
		c.jwtAt(sc, i)
	}
	if t&trigCustom != 0 {
		c.customAt(sc, i)
	}
	if t&trigKeyword != 0 {
		c.keywords.punctAt(sc, i)
	}
}

// wordAt runs the word-level matchers at p, the first byte of a word.
func (c *Classifier) wordAt(sc *scanState, p int) {
	f := c.wordFirst[sc.s[p]]
	if f&firstInjection != 0 {
		c.injectionAt(sc, p)
	}
	if f&firstKeyword != 0 {
		c.keywords.wordAt(sc, p)
	}
}

// finish sorts the spans by Start, End and category, applies the rule that generic-secret
// yields to a specific secret detector on the same bytes, strips the detector bits and drops
// duplicates. In a streaming call, settle has already dropped the pending spans: a pending
// specific secret must not take a settled generic-secret span with it.
func (sc *scanState) finish() []classify.Span {
	sp := sc.spans
	if len(sp) == 0 {
		return nil
	}
	slices.SortFunc(sp, func(a, b classify.Span) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End),
			cmp.Compare(a.Category&(1<<detShift-1), b.Category&(1<<detShift-1)), cmp.Compare(a.Category, b.Category))
	})
	yieldGeneric(sp)
	out := sp[:0]
	for _, s := range sp {
		if s.Category < 0 {
			continue
		}
		s.Category &= 1<<detShift - 1
		if len(out) > 0 && out[len(out)-1] == s {
			continue
		}
		out = append(out, s)
	}
	return out
}

// yieldGeneric marks (Category = -1) every generic-secret span that overlaps a span of a
// specific secret detector. sp is sorted by Start.
func yieldGeneric(sp []classify.Span) {
	det := func(s classify.Span) detector { return detector(s.Category>>detShift) - 1 }
	var any bool
	for _, s := range sp {
		if det(s) == detGenericSecret {
			any = true
			break
		}
	}
	if !any {
		return
	}
	// Spans that start before a generic span overlap it when they end after its start.
	maxEnd := -1
	for i := range sp {
		d := det(sp[i])
		switch {
		case isSecretDetector(d):
			maxEnd = max(maxEnd, sp[i].End)
		case d == detGenericSecret && maxEnd > sp[i].Start:
			sp[i].Category = -1
		}
	}
	// Spans that start after it overlap it when they start before its end.
	nextStart := int(^uint(0) >> 1)
	for i := len(sp) - 1; i >= 0; i-- {
		if sp[i].Category < 0 {
			continue
		}
		d := det(sp[i])
		switch {
		case isSecretDetector(d):
			nextStart = sp[i].Start
		case d == detGenericSecret && nextStart < sp[i].End:
			sp[i].Category = -1
		}
	}
}

// Byte classes. Token detectors treat any non-ASCII byte as a boundary, so that a token
// written next to CJK text or a currency sign is still found.

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
func isUpper(b byte) bool { return b >= 'A' && b <= 'Z' }
func isLower(b byte) bool { return b >= 'a' && b <= 'z' }
func isAlpha(b byte) bool { return isUpper(b) || isLower(b) }
func isAlnum(b byte) bool { return isAlpha(b) || isDigit(b) }
func isHex(b byte) bool   { return isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

// isWordByte reports an ASCII word byte, as \w.
func isWordByte(b byte) bool { return isAlnum(b) || b == '_' }

// isB64URL reports a base64url byte.
func isB64URL(b byte) bool { return isAlnum(b) || b == '-' || b == '_' }

// isSpace reports ASCII white space.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// lower folds an ASCII letter to lower case.
func lower(b byte) byte {
	if isUpper(b) {
		return b + 'a' - 'A'
	}
	return b
}

// isBoundaryByte reports a byte after which a word can begin: ASCII that is not \w, or a UTF-8
// continuation byte (the last byte of a non-ASCII rune, which may be punctuation such as “).
func isBoundaryByte(b byte) bool {
	if b < utf8.RuneSelf {
		return !isWordByte(b)
	}
	return b < 0xC0
}

// lastRuneIsWord reports whether the last rune of s is a letter, digit or underscore.
func lastRuneIsWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordRune(r)
}

// isWordRune reports a letter, digit or underscore, Unicode-aware.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isWordByte(byte(r))
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// hasPrefixFold reports whether s begins with the lower-case ASCII prefix p, ignoring case.
func hasPrefixFold(s, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if lower(s[i]) != p[i] {
			return false
		}
	}
	return true
}

// equalFoldASCII compares s with the lower-case ASCII word p, ignoring case.
func equalFoldASCII(s, p string) bool { return len(s) == len(p) && hasPrefixFold(s, p) }

// prevWord returns the word (ASCII letters) that ends before position end, skipping at most a
// few bytes of spaces and the punctuation in skip; ok is false when there is none.
func prevWord(s string, end int, skip string) (ws, we int, ok bool) {
	j := end
	for k := 0; j > 0 && k < 4; k++ {
		b := s[j-1]
		if b != ' ' && !containsByte(skip, b) {
			break
		}
		j--
	}
	we = j
	for j > 0 && isAlpha(s[j-1]) && we-j < 24 {
		j--
	}
	if j == we || j > 0 && isWordByte(s[j-1]) {
		return 0, 0, false
	}
	return j, we, true
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}
