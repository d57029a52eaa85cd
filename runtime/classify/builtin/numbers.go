package builtin

// The number family: phone, credit-card, us-ssn and IPv4 addresses (ip-address) share one
// parse of a numeric token at the first digit, so a run of digits is looked at once. IBANs
// are found from the same trigger (pii.go).

const (
	maxNumGroups = 12
	maxNumToken  = 48
)

// numGroup is one run of digits of a numeric token.
type numGroup struct {
	start, end int // the digits
	// sep is the byte written between the previous group and this one: ' ', '-', '.', or ')'
	// when a closing parenthesis is directly followed by digits; 0 for the first group.
	sep   byte
	paren bool // the group is written in parentheses, as "(415)"
}

func (g numGroup) len() int { return g.end - g.start }

// numToken is a numeric token: digit groups joined by single separators.
type numToken struct {
	start, end int // extent, with a leading '+' and parentheses
	plus       bool
	valid      bool // boundaries are clean and the groups fit the arrays
	// joined is the byte (':', '/' or ',') that joins the token to digits after it, as in
	// "10.0.0.1:8080", "10.0.0.0/8" or "12,5"; 0 when the token ends at a boundary.
	joined byte
	// after is '-' when the token is written right after a minus sign, as a negative number in
	// code is, and '/' when it is written after a slash, as an id in a URL path is; only an
	// IPv4 address may follow a slash (http://10.0.0.1/).
	after byte
	// dotted: a '.' and a letter or digit follow the token, as in the reverse-DNS name
	// 1.0.0.127.in-addr.arpa.
	dotted bool
	n      int
	g      [maxNumGroups]numGroup
}

// parseNumber parses the numeric token whose first digit is at i. It always sets t.end, the
// position after which the digit handler may look again.
func parseNumber(s string, i int, t *numToken) {
	t.start, t.n, t.plus, t.valid, t.joined, t.after, t.dotted = i, 0, false, true, 0, 0, false
	// A parenthesis counts only around a whole group, as in "(415)"; "(4111 1111 …)" is a
	// number in parentheses, and the parenthesis is then just a boundary.
	open := false
	if i > 0 && s[i-1] == '(' && closesGroup(s, i) {
		open, t.start = true, i-1
	}
	if t.start > 0 && s[t.start-1] == '+' {
		t.plus = true
		t.start--
	}
	if p := t.start - 1; p >= 0 {
		b := s[p]
		switch {
		case isWordByte(b), b == '#':
			t.valid = false // inside a word ("abc123"), or "#123" order-style numbers
		case (b == '.' || b == '-' || b == '/' || b == ':' || b == ',') && p > 0 && isDigit(s[p-1]):
			t.valid = false // the tail of another number: "1,234", "05/17", "12:30"
		case b == '-', b == '/':
			t.after = b
		}
	}
	k := i
	var sep byte
	for {
		gs := k
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if t.n < maxNumGroups {
			t.g[t.n] = numGroup{start: gs, end: k, sep: sep, paren: open}
			t.n++
		} else {
			t.valid = false
		}
		end := k
		if open {
			k++ // closesGroup made sure of the ')'
			end = k
		}
		t.end = end
		if k >= len(s) {
			break
		}
		c := s[k]
		if open && isDigit(c) {
			sep, open = ')', false
			continue
		}
		open = false
		if (c == ' ' || c == '-' || c == '.') && k+1 < len(s) {
			if isDigit(s[k+1]) {
				sep = c
				k++
				continue
			}
			if s[k+1] == '(' && k+2 < len(s) && isDigit(s[k+2]) && closesGroup(s, k+2) {
				sep, open = c, true
				k += 2
				continue
			}
		}
		break
	}
	if t.end-t.start > maxNumToken {
		t.valid = false
	}
	if e := t.end; e < len(s) {
		b := s[e]
		switch {
		case isWordByte(b):
			t.valid = false // "2024th", "4111…1111x"
		case (b == '/' || b == ':' || b == ',') && e+1 < len(s) && isDigit(s[e+1]):
			t.joined = b // "05/17/2024", "12:30", "1,000"; only an address may carry a port or prefix
		case b == '.' && e+1 < len(s) && isAlnum(s[e+1]):
			t.dotted = true
		}
	}
}

// closesGroup reports whether the digits at i are followed by ')'.
func closesGroup(s string, i int) bool {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i < len(s) && s[i] == ')'
}

// numberAt handles a digit at i: IBAN first (it begins with the two letters before), then the
// numeric token.
func (c *Classifier) numberAt(sc *scanState, i int) {
	s := sc.s
	if c.on(detIBAN) && i >= 2 && c.ibanAt(sc, i-2) {
		return
	}
	var t numToken
	parseNumber(s, i, &t)
	sc.numNext = t.end
	if !t.valid || t.n == 0 {
		return
	}
	if c.numberMatch(sc, &t, 0, t.n) {
		return
	}
	// A space also joins numbers written side by side ("10.0.0.1 10.0.0.2"): try each chunk of
	// groups joined by a tighter separator on its own.
	a := 0
	for k := 1; k <= t.n; k++ {
		if k < t.n && t.g[k].sep != ' ' {
			continue
		}
		if a > 0 || k < t.n {
			c.numberMatch(sc, &t, a, k)
		}
		a = k
	}
}

// numberMatch tries the number detectors, most specific first, on groups [a, b) of t.
func (c *Classifier) numberMatch(sc *scanState, t *numToken, a, b int) bool {
	start, end := t.g[a].start, t.g[b-1].end
	if t.g[a].paren {
		start--
	}
	if a == 0 && t.plus {
		start = t.start
	}
	if t.g[b-1].paren {
		end++
	}
	s := sc.s
	var joined, after byte // what the groups are attached to, after and before
	if b == t.n {
		joined = t.joined
		if t.dotted {
			return false
		}
	}
	if a == 0 {
		after = t.after
	}
	if after == '-' {
		return false
	}
	if joined != 0 || after == '/' {
		// Only an address carries a port or a prefix length, or ends a URL's scheme.
		if c.on(detIP) && joined != ',' && isIPv4Groups(s, t, a, b) && !versionContext(s, start) {
			c.emit(sc, detIP, start, end)
			return true
		}
		return false
	}
	var d detector
	switch {
	case c.on(detCard) && isCard(s, t, a, b) && !identifierContext(s, start):
		d = detCard
	case c.on(detSSN) && isSSN(s, t, a, b, start) && !identifierContext(s, start):
		d = detSSN
	case c.on(detIP) && isIPv4Groups(s, t, a, b) && !versionContext(s, start):
		d = detIP
	case c.on(detPhone) && isPhone(s, t, a, b) && !identifierContext(s, start):
		d = detPhone
	default:
		return false
	}
	c.emit(sc, d, start, end)
	return true
}

// groupsShape returns the digit count of groups [a, b) and their common separator (0 for a
// single group, 255 when they differ), and whether any is parenthesized.
func groupsShape(t *numToken, a, b int) (digits int, sep byte, paren bool) {
	for k := a; k < b; k++ {
		g := t.g[k]
		digits += g.len()
		paren = paren || g.paren
		switch {
		case k == a:
		case k == a+1:
			sep = g.sep
		case g.sep != sep:
			sep = 255
		}
	}
	return digits, sep, paren
}

// isCard: 13–19 digits, contiguous or in groups of 4 (Amex 4-6-5, Diners 4-6-4) with one
// kind of separator, a plausible issuer prefix for the length, and a valid Luhn check digit.
func isCard(s string, t *numToken, a, b int) bool {
	digits, sep, paren := groupsShape(t, a, b)
	if digits < 13 || digits > 19 || paren || a == 0 && t.plus {
		return false
	}
	if ng := b - a; ng > 1 {
		if sep != ' ' && sep != '-' {
			return false
		}
		amex := ng == 3 && t.g[a].len() == 4 && t.g[a+1].len() == 6 && (t.g[a+2].len() == 5 || t.g[a+2].len() == 4)
		fours := true
		for k := a; k < b-1; k++ {
			fours = fours && t.g[k].len() == 4
		}
		if !amex && !(fours && ng >= 4) {
			return false
		}
	}
	var buf [19]byte
	n := 0
	for k := a; k < b; k++ {
		n += copy(buf[n:], s[t.g[k].start:t.g[k].end])
	}
	return luhn(buf[:n]) && plausibleIIN(buf[:n])
}

// luhn reports whether the digits carry a valid Luhn check digit.
func luhn(d []byte) bool {
	sum := 0
	for i := range d {
		v := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// plausibleIIN reports whether the issuer prefix of a card number is allocated to a card
// network that issues numbers of this length.
func plausibleIIN(d []byte) bool {
	p := func(k int) int { // the first k digits as a number
		v := 0
		for _, c := range d[:k] {
			v = v*10 + int(c-'0')
		}
		return v
	}
	n := len(d)
	switch p2 := p(2); {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55, p(4) >= 2221 && p(4) <= 2720: // Mastercard
		return n == 16
	case p2 == 34 || p2 == 37: // American Express
		return n == 15
	case p(3) >= 300 && p(3) <= 305, p2 == 36, p2 == 38, p2 == 39: // Diners Club
		return n >= 14 && n <= 19
	case p(4) >= 3528 && p(4) <= 3589: // JCB
		return n >= 16 && n <= 19
	case p(4) >= 2200 && p(4) <= 2204: // Mir
		return n >= 16 && n <= 19
	case p(4) == 6011, p(3) >= 644 && p(3) <= 649, p2 == 65, p2 == 62: // Discover, UnionPay
		return n >= 16 && n <= 19
	case p2 == 50, p2 >= 56 && p2 <= 69: // Maestro
		return n >= 13 && n <= 19
	}
	return false
}

// isSSN: AAA-GG-SSSS with dashes; right after an SSN cue (see ssnCue; the number starts at
// start) also with spaces or as nine digits. It excludes the ranges the SSA never issues
// (area 000, 666, 900–999; group 00; serial 0000) and the two numbers it voided after they
// were published.
func isSSN(s string, t *numToken, a, b, start int) bool {
	if a == 0 && t.plus {
		return false
	}
	var area, group, serial string
	switch b - a {
	case 1:
		g := t.g[a]
		if g.len() != 9 || g.paren || !ssnCue(s, start) {
			return false
		}
		area, group, serial = s[g.start:g.start+3], s[g.start+3:g.start+5], s[g.start+5:g.end]
	case 3:
		_, sep, paren := groupsShape(t, a, b)
		ga, gg, gs := t.g[a], t.g[a+1], t.g[a+2]
		if paren || ga.len() != 3 || gg.len() != 2 || gs.len() != 4 || sep != '-' && !(sep == ' ' && ssnCue(s, start)) {
			return false
		}
		area, group, serial = s[ga.start:ga.end], s[gg.start:gg.end], s[gs.start:gs.end]
	default:
		return false
	}
	switch {
	case area == "000", area == "666", area[0] == '9', group == "00", serial == "0000":
		return false
	case area == "078" && group == "05" && serial == "1120", area == "219" && group == "09" && serial == "9999":
		return false
	}
	return true
}

// ssnCue reports whether the number at start follows a word that says it is a Social
// Security number: "SSN", "SSN no.", "social security number", "Social Security No.", with
// ':', '#' or '=' before the number.
func ssnCue(s string, start int) bool {
	ws, we, ok := prevWord(s, start, ":#.=")
	if !ok {
		return false
	}
	if wordIn(s[ws:we], []string{"ssn", "ssns"}) {
		return true
	}
	if wordIn(s[ws:we], numberWords) {
		if ws, we, ok = prevWord(s, ws, ".#"); !ok {
			return false
		}
		if equalFoldASCII(s[ws:we], "ssn") {
			return true
		}
	}
	if !equalFoldASCII(s[ws:we], "security") {
		return false
	}
	ws, we, ok = prevWord(s, ws, "")
	return ok && equalFoldASCII(s[ws:we], "social")
}

// isIPv4Groups: four dot-separated octets ≤ 255 without leading zeros. Longer chains (a
// version like 10.0.1.2.3) are one token of five groups and fail here.
func isIPv4Groups(s string, t *numToken, a, b int) bool {
	if b-a != 4 || a == 0 && t.plus {
		return false
	}
	_, sep, paren := groupsShape(t, a, b)
	if sep != '.' || paren {
		return false
	}
	for k := a; k < b; k++ {
		if !validOctet(s[t.g[k].start:t.g[k].end]) {
			return false
		}
	}
	return true
}

// validOctet reports a decimal 0–255 without a leading zero.
func validOctet(d string) bool {
	if len(d) == 0 || len(d) > 3 || len(d) > 1 && d[0] == '0' {
		return false
	}
	v := 0
	for i := 0; i < len(d); i++ {
		v = v*10 + int(d[i]-'0')
	}
	return v <= 255
}

// identifierContext reports whether the number at start follows a word that makes it an
// identifier rather than personal data: "order 415-555-0132", "Invoice No. 123-45-6789".
func identifierContext(s string, start int) bool {
	return prevWordIn(s, start, identifierWords)
}

// versionContext reports whether a dotted quad follows a word that makes it a version or a
// section number rather than an address: "version 1.2.3.4", "section 2.1.4.3", "upgraded to
// 4.2.1.0".
func versionContext(s string, start int) bool {
	if prevWordIn(s, start, versionWords) {
		return true
	}
	ws, we, ok := prevWord(s, start, ":#.")
	return ok && wordIn(s[ws:we], linkWords) && prevWordIn(s, ws, versionWords)
}

// linkWords may stand between a version word and its number: "upgraded to 4.2.1.0".
var linkWords = []string{"to", "from", "of", "is", "was", "at", "on"}

var identifierWords = []string{
	"order", "orders", "invoice", "inv", "ref", "reference", "ticket", "case", "tracking",
	"sku", "serial", "account", "acct", "part", "po", "isbn", "issn", "transaction", "txn",
	"confirmation", "booking", "receipt", "claim", "policy", "item", "model", "product",
	"patent", "batch", "lot", "shipment", "container",
}

var versionWords = []string{
	"version", "ver", "v", "release", "build", "firmware", "chrome", "firefox", "python", "node",
	"kernel", "section", "chapter", "step", "figure", "fig", "table", "rule", "clause",
	"article", "paragraph", "item", "oid", "appendix", "revision", "rev", "patch", "sdk",
	"upgrade", "upgraded", "update", "updated", "installed", "bumped", "tag", "tagged",
}

// numberWords may stand between an identifier word and its number: "order no. 123".
var numberWords = []string{"no", "nr", "num", "number", "id", "code"}

// prevWordIn reports whether the word before start (looking past "no.", "number", '#', ':')
// is one of words.
func prevWordIn(s string, start int, words []string) bool {
	ws, we, ok := prevWord(s, start, ":#.")
	if !ok {
		return false
	}
	if wordIn(s[ws:we], numberWords) {
		if ws2, we2, ok := prevWord(s, ws, ":#."); ok && wordIn(s[ws2:we2], words) {
			return true
		}
	}
	return wordIn(s[ws:we], words)
}

// wordIn reports whether w equals one of the lower-case words, ignoring ASCII case.
func wordIn(w string, words []string) bool {
	for _, x := range words {
		if equalFoldASCII(w, x) {
			return true
		}
	}
	return false
}
