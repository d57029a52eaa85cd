package builtin

import (
	"math"
	"strings"
)

// How vendorRules are found. A prefix with a separator ('_', '-', '.') is keyed by its first
// separator and the byte before it ("shpat_" by "t_"), and tried when the pass meets that
// separator; a prefix without one is keyed by its first capital that is one of headBytes and
// the byte after it ("AIza" by "AI", "cmVmdGtu" by "Vm" two bytes in), and tried when the
// pass meets that capital; a prefix of small letters and digits only ("dapi", "cio", "oy2")
// is keyed by its first two bytes and tried from the first digit after a run of letters that
// begins with them (lowPrefixAt): a small letter begins most words, a digit after letters few.
// Either way a trigger looks at one bit of a 64-kbit pair set, and only a pair that begins
// some prefix reaches the few rules that share it. Adding a rule adds a bit, not a loop.

// vendorIndex maps a pair of bytes to the rules keyed by it.
type vendorIndex struct {
	sepPairs, headPairs, lowPairs byteSet64k
	sep, head, low                pairRules
	// rulePairs are the pairs of head that key rules; headPairs adds the markers found
	// inside tokens (AZDO, azureKeys).
	rulePairs byteSet64k
	// inner are the rules keyed by a capital inside their prefix (at > 0), which
	// vendorShaped cannot reach from a value's first two bytes.
	inner []indexedRule
}

// indexedRule is a rule and the offset in its prefix of the byte it is keyed by.
type indexedRule struct {
	r  *vendorRule
	at int
}

// headBytes are the capitals that key the prefixes without a separator. They rarely begin a
// pair of prose ("AI", "BS", "DO", "EA", "GR", "IG", "K1", "LT", "MC", "QQ", "RW", "SK", "Vm" …):
// the pass looks them up in headPairs before calling anything. Besides prefixes, they key
// the markers inside Azure's identifiable keys (azureKeys).
const headBytes = "ABDEFGIKLMQRSV"

// vendors is the index of vendorRules and databricksRules, built once.
var vendors = buildVendorIndex(&vendorsTable, coreVendorRules, tailVendorRules, moreVendorRules, round6VendorRules, databricksRules)

// vendorsTable holds vendors (its pair sets are 32 KiB, mostly zero: static storage, not heap).
var vendorsTable vendorIndex

func isSeparator(b byte) bool { return b == '_' || b == '-' || b == '.' }

// headKey is the offset of the capital that keys a prefix (or marker) without a separator:
// its first byte that is one of headBytes and is followed by another byte, or -1.
func headKey(p string) int {
	for k := 0; k+1 < len(p); k++ {
		if strings.IndexByte(headBytes, p[k]) >= 0 {
			return k
		}
	}
	return -1
}

func buildVendorIndex(x *vendorIndex, sets ...[]vendorRule) *vendorIndex {
	// key is the family (0 sep, 1 head, 2 low) and pair that key rule r, and its offset.
	key := func(r *vendorRule) (fam int, pair uint16, at int) {
		at = strings.IndexFunc(r.prefix, func(c rune) bool { return c < 0x80 && isSeparator(byte(c)) })
		h := headKey(r.prefix)
		switch {
		case at > 0:
			return 0, uint16(r.prefix[at-1])<<8 | uint16(r.prefix[at]), at
		case h >= 0:
			return 1, uint16(r.prefix[h])<<8 | uint16(r.prefix[h+1]), h
		case len(r.prefix) >= 3 && isLower(r.prefix[0]) && isLower(r.prefix[1]) && allIn(r.prefix, cLowNum):
			return 2, uint16(r.prefix[0])<<8 | uint16(r.prefix[1]), 0
		}
		panic("vendor rule " + r.kind + ": its prefix has no separator, no capital of " + headBytes + " and is not small letters and digits")
	}
	var n [3]int
	inner := 0
	each := func(f func(r *vendorRule)) {
		for _, set := range sets {
			for k := range set {
				f(&set[k])
			}
		}
	}
	each(func(r *vendorRule) {
		fam, _, at := key(r)
		n[fam]++
		if fam == 1 && at > 0 {
			inner++
		}
	})
	fams := [3]*pairRules{&x.sep, &x.head, &x.low}
	// One array for the three families' rules and the inner ones, one for their pairs.
	all := make([]indexedRule, 0, n[0]+n[1]+n[2]+inner)
	pairs := make([]uint16, 0, n[0]+n[1]+n[2])
	for f, p := range fams {
		p.rules = all[len(all) : len(all) : len(all)+n[f]]
		p.pairs = pairs[len(pairs) : len(pairs) : len(pairs)+n[f]]
		all = all[:len(all)+n[f]]
		pairs = pairs[:len(pairs)+n[f]]
	}
	each(func(r *vendorRule) {
		fam, pair, at := key(r)
		fams[fam].add(pair, indexedRule{r, at})
		b0, b1 := byte(pair>>8), byte(pair)
		switch fam {
		case 0:
			x.sepPairs.add(b0, b1)
		case 1:
			x.headPairs.add(b0, b1)
			x.rulePairs.add(b0, b1)
		case 2:
			x.lowPairs.add(b0, b1)
		}
	})
	x.inner = all[len(all):len(all):cap(all)]
	each(func(r *vendorRule) {
		if fam, _, at := key(r); fam == 1 && at > 0 {
			x.inner = append(x.inner, indexedRule{r, at})
		}
	})
	x.headPairs.add('A', 'Z') // the AZDO marker inside an Azure DevOps personal access token (azdoPATAt)
	for _, k := range azureKeys {
		x.headPairs.add(k.marker[k.h], k.marker[k.h+1])
	}
	return x
}

// pairRules are the rules of one family keyed by pairs of bytes, sorted by pair and, for
// one pair, in the order of the rules: a dense table in place of a map of slices.
type pairRules struct {
	pairs []uint16 // pairs[k] is the pair (first byte << 8 | second) that keys rules[k]
	rules []indexedRule
}

// add inserts x keyed by pair after the rules already keyed by it (the slices have room).
func (p *pairRules) add(pair uint16, x indexedRule) {
	k := len(p.pairs)
	for k > 0 && p.pairs[k-1] > pair {
		k--
	}
	p.pairs = append(p.pairs, 0)
	p.rules = append(p.rules, indexedRule{})
	copy(p.pairs[k+1:], p.pairs[k:])
	copy(p.rules[k+1:], p.rules[k:])
	p.pairs[k], p.rules[k] = pair, x
}

// get returns the rules keyed by the pair b0 b1, in the order of the rules.
func (p *pairRules) get(b0, b1 byte) []indexedRule {
	pair := uint16(b0)<<8 | uint16(b1)
	lo, hi := 0, len(p.pairs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.pairs[m] < pair {
			lo = m + 1
		} else {
			hi = m
		}
	}
	e := lo
	for e < len(p.pairs) && p.pairs[e] == pair {
		e++
	}
	return p.rules[lo:e]
}

// vendorSepAt tries the rules keyed by the separator at i; it reports whether one matched.
func (c *Classifier) vendorSepAt(sc *scanState, i int) bool {
	s := sc.s
	if i == 0 || !vendors.sepPairs.has(s[i-1], s[i]) {
		return false
	}
	for _, x := range vendors.sep.get(s[i-1], s[i]) {
		if start := i - x.at; start >= 0 && c.vendorToken(sc, x.r, start) {
			return true
		}
	}
	return false
}

// vendorHeadAt tries the rules keyed by the capital at i; it reports whether one matched.
func (c *Classifier) vendorHeadAt(sc *scanState, i int) bool {
	s := sc.s
	if i+1 >= len(s) || !vendors.headPairs.has(s[i], s[i+1]) {
		return false
	}
	if s[i] == 'A' && s[i+1] == 'Z' {
		return c.azdoPATAt(sc, i)
	}
	if vendors.rulePairs.has(s[i], s[i+1]) {
		for _, x := range vendors.head.get(s[i], s[i+1]) {
			if start := i - x.at; start >= 0 && c.vendorToken(sc, x.r, start) {
				return true
			}
		}
	}
	return azureMarkerPairs.has(s[i], s[i+1]) && c.azureKeyAt(sc, i)
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
	if e+1 < len(s) && s[e] == '.' && isAlnum(s[e+1]) && last != cGitLab {
		return false // a '.' and more of a name after it: a file or host name ("….ico-<hex>.png")
	}
	if last == cGitLab {
		for e > body && s[e-1] == '.' {
			e-- // a sentence's full stop
		}
	}
	if r.refuses(s[body:e]) {
		return false
	}
	c.emit(sc, r.det, start, e)
	return true
}

// refuses reports a body of r's shape that r still refuses: a placeholder, words after a
// shared prefix, a failed checksum, a character typed wrong.
func (r *vendorRule) refuses(v string) bool {
	if repeats(v, 6) || classMix(v) < 2 && len(v) > 1 || tokenPlaceholder(v) {
		return true // a placeholder: XXXXXX, 000000, one class only, abcdef…, …EXAMPLE…
	}
	if len(r.segs) == 1 && len(v) >= minGenericValue && !isOneCaseDraw(v) && (!identifying(r.prefix) || !hasDigit(v)) && isWordlike(v) {
		// A prefix that is a shared word ("test_", "key-") and words after it, or any prefix
		// and words without a digit ("mint_tokenForUserAccount", "console-settingsPanelView"):
		// an identifier. A random base62 body holds no digit about once in 8 at 12 characters
		// and once in 70 at 24, and reads as words far less often than that.
		return true
	}
	if r.check != nil && !r.check(v) {
		return true // fails the vendor's checksum
	}
	return r.narrow() && strayCharacters(v) // hex, or one case, with a character typed wrong (see lenient)
}

// accepts reports whether body, all of it, is a body r takes: a value that begins with r's
// prefix and has such a body is a token of the vendor wherever it stands, not a near miss.
func (r *vendorRule) accepts(body string) bool {
	e, ok := matchSegsLenient(body, 0, r.segs)
	if !ok {
		return false
	}
	if r.pad {
		for p := 0; p < 2 && e < len(body) && body[e] == '='; p++ {
			e++
		}
	}
	return e == len(body) && !r.refuses(body)
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
	if v := s[body:]; repeats(v, 6) || classMix(v) < 2 || tokenPlaceholder(v) {
		return false
	}
	c.emit(sc, r.det, start, len(s))
	return true
}

// tokenPlaceholder reports a token body written by hand for documentation or a test: six or
// more characters in sequence ("abcdef", "123456") or one of the longer words documentation
// writes ("EXAMPLE", "placeholder", "changeme", "redacted"), in either case. A random body of
// base62 holds such a run with a probability under 10⁻⁶ (the shorter placeholder words of
// isPlaceholder, "your" or "todo", are left out: a long random body holds one of them about
// once in a few thousand).
func tokenPlaceholder(v string) bool {
	if isSequence(v) {
		return true
	}
	for _, w := range tokenPlaceholderWords {
		for i := 0; i+len(w) <= len(v); i++ {
			if hasPrefixFold(v[i:], w) {
				return true
			}
		}
	}
	return false
}

var tokenPlaceholderWords = []string{"example", "placeholder", "changeme", "redacted"}

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

// A token of a vendor this package has no rule for: most vendors write their credentials
// as a short prefix that names them, a separator and a long random body (the shape of every
// rule above), so that shape is a secret wherever it stands, its vendor known or not. To keep
// out what has the same shape and is not a credential, the body must be long and random,
// the prefix must not be one of idPrefixes, and a value a vendor rule judges is left to it:
//
//   - prefix: two to twelve letters and digits of one case, beginning with a letter and
//     beginning a token ("acme_", "XYZ-"), then '_' or '-';
//   - then up to two more short words of the prefix ("live_", "v1-"), then a body of at
//     least minPrefixedBody letters, digits, '-' and '_' that ends the token (not followed by
//     '.', '+', '/', '=' or ':' and more of a token: a file or host name, base64, a hash);
//   - the body mixes letters and digits, is not hex alone (hashes and request ids are),
//     not a UUID, not words (isWordlike), not a placeholder, and has the entropy of a random
//     draw (as generic-secret's values need);
//   - the whole is not vendorShaped (a near miss of a vendor rule) and has no stray
//     character (strayCharacters).
//
// Ids of LLM APIs and payment APIs (chatcmpl-…, msg_…, call_…, cus_…) have bodies of 24 to
// 29 characters, under minPrefixedBody; those that are longer are in idPrefixes.
const (
	minPrefixedBody = 32
	maxPrefixedBody = 200
	maxPrefixWord   = 12
)

// idPrefixes are prefixes of identifiers that have a prefixed token's shape and are not
// secrets: object ids of LLM and payment APIs, hashes of lockfiles and subresource
// integrity, session and trace ids of checkout pages.
var idPrefixes = []string{
	"chatcmpl", "cmpl", "msg", "toolu", "call", "file", "resp", "run", "thread", "asst",
	"batch", "vs", "ftjob", "ft", "org", "proj", "req", "step", "modr", "gen", "srvtoolu",
	"sha1", "sha224", "sha256", "sha384", "sha512", "md5", "blake2b", "blake3", "xxh64",
	"cs", "pi", "seti", "cus", "sub", "in", "evt", "ch", "txn", "trace", "span",
	"id", "uuid", "guid", "ulid", "hash", "digest", "commit", "build", "sha",
}

// prefixedTokenAt matches, at the separator at i, a token of an unknown vendor (see above).
func (c *Classifier) prefixedTokenAt(sc *scanState, i int) {
	s := sc.s
	if !c.on(detGenericSecret) || i+1+minPrefixedBody > len(s) {
		return
	}
	for k := i + 1; k <= i+minPrefixedBody; k++ {
		if !isB64URL(s[k]) {
			return // too short: most separators are inside words and identifiers
		}
	}
	a := i
	upper, lower := false, false
	for a > 0 && i-a <= maxPrefixWord && isAlnum(s[a-1]) {
		a--
		upper = upper || isUpper(s[a])
		lower = lower || isLower(s[a])
	}
	if i-a < 2 || i-a > maxPrefixWord || upper == lower || !isAlpha(s[a]) || a > 0 && !tokenDelimiter(s[a-1]) {
		return
	}
	e := i + 1
	for e < len(s) && e-i <= maxPrefixedBody+2*(maxPrefixWord+1) && isB64URL(s[e]) {
		e++
	}
	if e < len(s) && (isB64URL(s[e]) || s[e] == '=' || e+1 < len(s) && !tokenDelimiter(s[e]) && s[e] != '.' && s[e] != '!' && s[e] != '?' || e+1 < len(s) && s[e] == '.' && isB64URL(s[e+1])) {
		return // longer than a token, or more of a token after it: a host or file name, base64, a hash, a symbol
	}
	body := i + 1
	var words [3]int // where the prefix's words begin
	words[0] = a
	n := 1
	for ; n < 3; n++ {
		k := body
		for k < e && k-body <= maxPrefixWord && isAlnum(s[k]) {
			k++
		}
		if k == e || k-body > maxPrefixWord || !isSeparator(s[k]) || !isPrefixWord(s[body:k]) {
			break
		}
		words[n] = body
		body = k + 1
	}
	v := s[body:e]
	if len(v) < minPrefixedBody || len(v) > maxPrefixedBody || wordIn(strings.ToLower(s[a:i]), idPrefixes) {
		return
	}
	if !randomBody(v) || strayCharacters(v) {
		return
	}
	for k, w := range words[:n] {
		if vendorShaped(s[w:e]) || nearVendorRule(s[w:e], k == 0) {
			return // a vendor's rule judges it, from the first word or a later one ("my-ghp_…")
		}
	}
	c.emit(sc, detGenericSecret, a, e)
}

// isPrefixWord reports a word that continues a prefix: letters, then at most two digits
// ("live", "test", "v1", "pat").
func isPrefixWord(w string) bool {
	n := 0
	for n < len(w) && isAlpha(w[n]) {
		n++
	}
	return n > 0 && len(w)-n <= 2 && allIn(w[n:], cDigit)
}

// randomBody reports a prefixed token's body that is a random draw: letters and digits
// mixed, not hex alone, not a UUID, not words, numbers or a placeholder, and with the
// entropy generic-secret asks of a value.
func randomBody(v string) bool {
	var letters, digits, hexOnly = 0, 0, true
	for i := 0; i < len(v); i++ {
		b := v[i]
		switch {
		case isDigit(b):
			digits++
		case isAlpha(b):
			letters++
			hexOnly = hexOnly && isHex(b)
		}
	}
	if digits == 0 || letters == 0 || hexOnly || repeats(v, 5) || isPlaceholder(v) {
		return false
	}
	draw := isOneCaseDraw(v)
	if !draw && (classMix(v) < 3 || isWordlike(v)) {
		return false
	}
	h := entropy(v)
	if draw {
		return h >= min(drawEntropyCap, drawEntropyRatio*math.Log2(float64(len(v))))
	}
	return h >= min(entropyCap, entropyRatio*math.Log2(float64(len(v))))
}

// tokenDelimiter reports a byte that may stand before or after a token written in text:
// white space, quotes, brackets, and the marks of assignments and lists. A token glued to
// other symbols ("x#key_…", "key_…%…") is part of something else.
func tokenDelimiter(b byte) bool {
	return isSpace(b) || strings.IndexByte("\"'`()[]{}<>=:,;|&\\", b) >= 0
}

// nearVendorRule reports a value that a vendor rule judges, whatever its prefix's length:
// it begins with the rule's prefix, or with that prefix one character off, and its body is
// of the rule's shape or one character off it (nearShape). vendorShaped asks the same only of
// the prefixes that name a vendor, because generic-secret takes values under a secret's key
// that begin with a shared word ("key-", "sk_"); a token of an unknown vendor, found without a
// key, is held to more. Without shared, the rules whose prefix is a shared word ("live_",
// "key-") are left out: inside a longer prefix ("zq_live_…") they are a word of it.
func nearVendorRule(v string, shared bool) bool {
	near := false
	eachVendorRule(func(r *vendorRule) bool {
		p := r.prefix
		if len(v) <= len(p) || len(p) < 3 && v[:len(p)] != p || !shared && !identifying(p) && !namesVendor(p) {
			return true
		}
		near = (v[:len(p)] == p || oneOff(v[:len(p)], p)) && r.nearShape(v[len(p):]) && r.nearParts(v[len(p):])
		return !near
	})
	if near {
		return true
	}
	for _, p := range builtinPrefixes {
		if len(v) > len(p) && (strings.HasPrefix(v, p) || len(p) >= 3 && oneOff(v[:len(p)], p)) && len(v)-len(p) >= 35 && len(v)-len(p) <= 37 {
			return true // GitHub's and npm's 36, AWS's 16 are below minPrefixedBody
		}
	}
	return false
}

// nearParts reports whether body, cut at the separators of r's runs, has as many parts as
// r has runs, each of its run's length or one character off it: "1234_" and 32 capitals
// is near a ClickUp token, 45 small letters and digits after "pk_" are not. A rule whose
// literals are not single separators is not cut.
func (r *vendorRule) nearParts(body string) bool {
	var seps string
	for _, g := range r.segs[1:] {
		if len(g.lit) != 1 || !isSeparator(g.lit[0]) && g.lit[0] != ':' {
			return true
		}
		if strings.IndexByte(seps, g.lit[0]) < 0 {
			seps += g.lit
		}
	}
	if r.segs[0].lit != "" {
		return true
	}
	k := 0
	for _, g := range r.segs {
		if k > 0 {
			k++ // the separator
		}
		n := 0
		for k < len(body) && strings.IndexByte(seps, body[k]) < 0 {
			k, n = k+1, n+1
		}
		if n < g.min-1 || n > g.max+1 {
			return false
		}
	}
	return k == len(body)
}

// hasDigit reports whether v holds an ASCII digit.
func hasDigit(v string) bool {
	for i := 0; i < len(v); i++ {
		if isDigit(v[i]) {
			return true
		}
	}
	return false
}
