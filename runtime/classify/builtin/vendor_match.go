package builtin

import "strings"

// How vendorRules are found. A prefix with a separator ('_', '-', '.') is keyed by its first
// separator and the byte before it ("shpat_" by "t_"), and tried when the pass meets that
// separator; a prefix without one ("AIza", "EAAA") is keyed by its first two bytes, and tried
// when the pass meets its first byte (one of headBytes). Either way a trigger looks at one
// bit of a 64-kbit pair set, and only a pair that begins some prefix reaches the few rules
// that share it. Adding a rule adds a bit, not a loop.

// vendorIndex maps a pair of bytes to the rules keyed by it.
type vendorIndex struct {
	sepPairs, headPairs byteSet64k
	sep, head           map[[2]byte][]indexedRule
}

// indexedRule is a rule and the offset in its prefix of the byte it is keyed by.
type indexedRule struct {
	r  *vendorRule
	at int
}

// headBytes are the first bytes of the prefixes without a separator. They are capitals that
// rarely begin a pair of prose ("AI", "DO", "EA", "IG", "LT", "RW", "SK" …): the pass looks them up in
// headPairs before calling anything.
const headBytes = "ADEFILRS"

// vendors is the index of vendorRules, built once.
var vendors = buildVendorIndex(vendorRules)

func isSeparator(b byte) bool { return b == '_' || b == '-' || b == '.' }

func buildVendorIndex(rules []vendorRule) *vendorIndex {
	x := &vendorIndex{sep: map[[2]byte][]indexedRule{}, head: map[[2]byte][]indexedRule{}}
	for k := range rules {
		r := &rules[k]
		at := strings.IndexFunc(r.prefix, func(c rune) bool { return c < 0x80 && isSeparator(byte(c)) })
		switch {
		case at > 0:
			key := [2]byte{r.prefix[at-1], r.prefix[at]}
			x.sep[key] = append(x.sep[key], indexedRule{r, at})
			x.sepPairs.add(key[0], key[1])
		case strings.IndexByte(headBytes, r.prefix[0]) >= 0:
			key := [2]byte{r.prefix[0], r.prefix[1]}
			x.head[key] = append(x.head[key], indexedRule{r, 0})
			x.headPairs.add(key[0], key[1])
		default:
			panic("vendor rule " + r.kind + ": its prefix has no separator and does not begin with one of " + headBytes)
		}
	}
	return x
}

// vendorSepAt tries the rules keyed by the separator at i; it reports whether one matched.
func (c *Classifier) vendorSepAt(sc *scanState, i int) bool {
	s := sc.s
	if i == 0 || !vendors.sepPairs.has(s[i-1], s[i]) {
		return false
	}
	for _, x := range vendors.sep[[2]byte{s[i-1], s[i]}] {
		if start := i - x.at; start >= 0 && c.vendorToken(sc, x.r, start) {
			return true
		}
	}
	return false
}

// vendorHeadAt tries the rules whose prefix begins at i; it reports whether one matched.
func (c *Classifier) vendorHeadAt(sc *scanState, i int) bool {
	s := sc.s
	if i+1 >= len(s) || !vendors.headPairs.has(s[i], s[i+1]) {
		return false
	}
	for _, x := range vendors.head[[2]byte{s[i], s[i+1]}] {
		if c.vendorToken(sc, x.r, i) {
			return true
		}
	}
	return false
}

// vendorToken matches rule r at start and records it.
func (c *Classifier) vendorToken(sc *scanState, r *vendorRule, start int) bool {
	if !c.on(r.det) {
		return false
	}
	s := sc.s
	if !strings.HasPrefix(s[start:], r.prefix) || !tokenStart(s, start) {
		return false
	}
	body := start + len(r.prefix)
	e, ok := matchSegsLenient(s, body, r.segs)
	if !ok {
		return c.longTokenPrefix(sc, r, start, body)
	}
	last := r.segs[len(r.segs)-1].cls.lenient()
	if r.pad {
		for p := 0; p < 2 && e < len(s) && s[e] == '='; p++ {
			e++
		}
	}
	if e < len(s) && (isWordByte(s[e]) || last.has(s[e])) {
		return false // longer than the format allows
	}
	if last == cGitLab {
		for e > body && s[e-1] == '.' {
			e-- // a sentence's full stop
		}
	}
	if v := s[body:e]; repeats(v, 6) || classMix(v) < 2 && len(v) > 1 {
		return false // a placeholder: XXXXXX, 000000, or one class only
	}
	if r.check != nil && !r.check(s[body:e]) {
		return false // fails the vendor's checksum
	}
	if r.narrow() && strayCharacters(s[body:e]) {
		return false // hex, or one case, with a character typed wrong (see lenient)
	}
	c.emit(sc, r.det, start, e)
	return true
}

// longPrefixBody is how much of a long token's body (one that can be longer than the
// hold-back hint) must have arrived for the token to match while it is still arriving.
const longPrefixBody = 64

// longTokenPrefix matches a token of a long rule r whose text ends inside it: like a JWT or
// a PEM block, it spans to the end of the text once longPrefixBody characters of its body
// are there, so that the hold-back hint (the longest bounded match) covers what it needs
// before it matches (see pending.go).
func (c *Classifier) longTokenPrefix(sc *scanState, r *vendorRule, start, body int) bool {
	s := sc.s
	if r.maxLen() <= maxGenericSecret || len(s)-body < longPrefixBody || !prefixOfSegs(s[body:], r.segs) {
		return false
	}
	if v := s[body:]; repeats(v, 6) || classMix(v) < 2 {
		return false
	}
	c.emit(sc, r.det, start, len(s))
	return true
}

// narrow reports whether a run of r's body is documented in a narrower alphabet than the
// one it is matched in (charClass.lenient).
func (r *vendorRule) narrow() bool {
	for _, g := range r.segs {
		if g.cls.lenient() != g.cls {
			return true
		}
	}
	return false
}

// maxLen is the longest token of r.
func (r *vendorRule) maxLen() int {
	n := len(r.prefix)
	for _, g := range r.segs {
		n += len(g.lit) + g.max
	}
	return n
}

// prefixOfSegs reports whether all of v is a beginning of a body of segs.
func prefixOfSegs(v string, segs []seg) bool {
	p := 0
	for _, g := range segs {
		k := 0
		for k < len(g.lit) && p < len(v) {
			if v[p] != g.lit[k] {
				return false
			}
			p, k = p+1, k+1
		}
		a := p
		for p < len(v) && p-a < g.max && g.cls.has(v[p]) {
			p++
		}
		if p == len(v) {
			return true
		}
		if p-a < g.min {
			return false
		}
	}
	return false
}

// matchSegsLenient is matchSegs with each run's alphabet widened (charClass.lenient).
func matchSegsLenient(s string, p int, segs []seg) (int, bool) {
	for _, g := range segs {
		if !strings.HasPrefix(s[p:], g.lit) {
			return 0, false
		}
		p += len(g.lit)
		a := p
		cls := g.cls.lenient()
		for p < len(s) && p-a < g.max && cls.has(s[p]) {
			p++
		}
		if p-a < g.min {
			return 0, false
		}
	}
	return p, true
}

// matchSegs matches segs from p, each run as long as it can be up to its max, and returns the
// end.
func matchSegs(s string, p int, segs []seg) (int, bool) {
	for _, g := range segs {
		if !strings.HasPrefix(s[p:], g.lit) {
			return 0, false
		}
		p += len(g.lit)
		a := p
		for p < len(s) && p-a < g.max && g.cls.has(s[p]) {
			p++
		}
		if p-a < g.min {
			return 0, false
		}
	}
	return p, true
}
