package builtin

import (
	"unicode"
	"unicode/utf8"
)

// The pii pack's detectors other than the number family (numbers.go): email, iban, and IPv6
// addresses (ip-address).

// atSignAt handles an '@' at i: it reads the local part backwards and the domain forwards.
// The userinfo of a URL is not an address, but its password is a generic secret.
func (c *Classifier) atSignAt(sc *scanState, i int) {
	s := sc.s
	if c.urlPasswordAt(sc, i) {
		return
	}
	a := i
	for a > 0 && i-a < 64 {
		if isLocalByte(s[a-1]) {
			a--
			continue
		}
		// An apostrophe between letters or digits, as in o'brien@example.ie.
		if s[a-1] == '\'' && a >= 2 && isAlnum(s[a-2]) && a < i && isAlnum(s[a]) {
			a--
			continue
		}
		// Internationalized addresses (RFC 6531) have letters beyond ASCII.
		r, n := utf8.DecodeLastRuneInString(s[:a])
		if s[a-1] < utf8.RuneSelf || !isAddressRune(r) {
			break
		}
		a -= n
	}
	for a < i && s[a] == '.' {
		a++
	}
	if a == i {
		return
	}
	if urlUserinfo(s, a) {
		return
	}
	if !c.on(detEmail) || s[i-1] == '.' {
		return
	}
	// The domain: labels of letters, digits and '-' joined by dots.
	b := i + 1
	for b < len(s) && b-a <= maxEmail {
		if isAlnum(s[b]) || s[b] == '-' || s[b] == '.' {
			b++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[b:])
		if s[b] < utf8.RuneSelf || !isAddressRune(r) {
			break
		}
		b += n
	}
	if b-a > maxEmail {
		return
	}
	for b > i+1 && (s[b-1] == '.' || s[b-1] == '-') {
		b--
	}
	if b < len(s) && (s[b] == '_' || s[b] == ':' && b+1 < len(s) && !isSpace(s[b+1])) {
		return // an scp-like git remote (git@github.com:org/repo.git) or an identifier
	}
	if !validDomain(s[i+1 : b]) {
		return
	}
	c.emit(sc, detEmail, a, b)
}

// urlUserinfo reports whether the local part at a is the userinfo of a URL
// (https://user@host, https://user:password@host) rather than an address; mailto: is not.
func urlUserinfo(s string, a int) bool {
	if a >= 2 && s[a-1] == '/' && s[a-2] == '/' {
		return true
	}
	if a == 0 || s[a-1] != ':' {
		return false
	}
	j := a - 1
	for j > 0 && a-j < 128 && (isLocalByte(s[j-1]) || s[j-1] == '~') {
		j--
	}
	return j >= 2 && s[j-1] == '/' && s[j-2] == '/'
}

// isAddressRune reports a non-ASCII letter or digit that may be part of an internationalized
// address. Scripts written without spaces (Han, kana, Hangul, Thai) are left out: in them an
// address is usually written right next to the surrounding words, and taking those in would
// be worse than missing the rare address written in them.
func isAddressRune(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) &&
		!unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai)
}

// isLocalByte reports the bytes of an email local part that appear in practice.
func isLocalByte(b byte) bool {
	return isAlnum(b) || b == '.' || b == '_' || b == '%' || b == '+' || b == '-'
}

// validDomain: two or more labels of 1–63 bytes that neither begin nor end with '-', no empty
// label, and an alphabetic top-level domain of two or more letters (or an xn-- label). It
// rejects retina asset names such as icon@2x.png.
func validDomain(d string) bool {
	if len(d) == 0 || len(d) > 253 {
		return false
	}
	labels, start := 0, 0
	var first string
	for k := 0; k <= len(d); k++ {
		if k < len(d) && d[k] != '.' {
			continue
		}
		l := d[start:k]
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		if labels == 0 {
			first = l
		}
		labels++
		if k == len(d) {
			if !validTLD(l) {
				return false
			}
		}
		start = k + 1
	}
	if labels < 2 {
		return false
	}
	if labels == 2 && len(first) >= 2 && (first[len(first)-1] == 'x' || first[len(first)-1] == 'X') {
		allDigits := true
		for k := 0; k < len(first)-1; k++ {
			allDigits = allDigits && isDigit(first[k])
		}
		if allDigits {
			return false // "@2x.png"
		}
	}
	return true
}

func validTLD(l string) bool {
	if len(l) > 4 && hasPrefixFold(l, "xn--") {
		return true
	}
	if len(l) < 2 || len(l) > 63 {
		return false
	}
	for _, r := range l {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// ibanRegistry are the IBAN lengths of the countries in the SWIFT IBAN registry. A country
// that is not listed is not matched.
var ibanRegistry = [...]struct {
	cc string
	n  uint8
}{
	{"AD", 24}, {"AE", 23}, {"AL", 28}, {"AT", 20}, {"AZ", 28}, {"BA", 20},
	{"BE", 16}, {"BG", 22}, {"BH", 22}, {"BI", 27}, {"BR", 29}, {"BY", 28},
	{"CH", 21}, {"CR", 22}, {"CY", 28}, {"CZ", 24}, {"DE", 22}, {"DJ", 27},
	{"DK", 18}, {"DO", 28}, {"EE", 20}, {"EG", 29}, {"ES", 24}, {"FI", 18},
	{"FK", 18}, {"FO", 18}, {"FR", 27}, {"GB", 22}, {"GE", 22}, {"GI", 23},
	{"GL", 18}, {"GR", 27}, {"GT", 28}, {"HN", 28}, {"HR", 21}, {"HU", 28},
	{"IE", 22}, {"IL", 23}, {"IQ", 23}, {"IS", 26}, {"IT", 27}, {"JO", 30},
	{"KW", 30}, {"KZ", 20}, {"LB", 28}, {"LC", 32}, {"LI", 21}, {"LT", 20},
	{"LU", 20}, {"LV", 21}, {"LY", 25}, {"MC", 27}, {"MD", 24}, {"ME", 22},
	{"MK", 19}, {"MN", 20}, {"MR", 27}, {"MT", 31}, {"MU", 30}, {"NI", 28},
	{"NL", 18}, {"NO", 15}, {"OM", 23}, {"PK", 24}, {"PL", 28}, {"PS", 29},
	{"PT", 25}, {"QA", 29}, {"RO", 24}, {"RS", 22}, {"RU", 33}, {"SA", 24},
	{"SC", 31}, {"SD", 18}, {"SE", 24}, {"SI", 19}, {"SK", 24}, {"SM", 27},
	{"SO", 23}, {"ST", 25}, {"SV", 28}, {"TL", 23}, {"TN", 24}, {"TR", 26},
	{"UA", 29}, {"VA", 22}, {"VG", 24}, {"XK", 20}, {"YE", 30},
}

// ibanLengths is ibanRegistry by country: the length, or 0 for a country not listed.
var ibanLengths = func() (t [26][26]uint8) {
	for _, e := range ibanRegistry {
		t[e.cc[0]-'A'][e.cc[1]-'A'] = e.n
	}
	return t
}()

// ibanLength returns the IBAN length of the country b0 b1, and whether it is registered.
func ibanLength(b0, b1 byte) (int, bool) {
	if !isUpper(b0) || !isUpper(b1) {
		return 0, false
	}
	n := int(ibanLengths[b0-'A'][b1-'A'])
	return n, n > 0
}

// ibanAt tries an IBAN whose country code begins at a: two capitals, two check digits, and the
// country's BBAN length, written contiguously or in groups of four separated by single spaces;
// the mod-97 remainder must be 1. It reports whether it matched (and then moved the digit
// cursor past it).
func (c *Classifier) ibanAt(sc *scanState, a int) bool {
	s := sc.s
	if a+4 > len(s) || !isUpper(s[a]) || !isUpper(s[a+1]) || !isDigit(s[a+2]) || !isDigit(s[a+3]) ||
		a > 0 && isWordByte(s[a-1]) {
		return false
	}
	n, ok := ibanLength(s[a], s[a+1])
	if !ok {
		return false
	}
	grouped := a+4 < len(s) && s[a+4] == ' '
	var buf [34]byte
	m, k := 0, a
	for m < n {
		if k >= len(s) {
			return false
		}
		if grouped && m > 0 && m%4 == 0 {
			if s[k] != ' ' {
				return false
			}
			k++
			if k >= len(s) {
				return false
			}
		}
		b := s[k]
		if !isUpper(b) && !isDigit(b) {
			return false
		}
		buf[m] = b
		m++
		k++
	}
	if k < len(s) && isWordByte(s[k]) {
		return false
	}
	if !ibanChecksum(buf[:n]) {
		return false
	}
	c.emit(sc, detIBAN, a, k)
	sc.numNext = k
	return true
}

// ibanChecksum computes ISO 13616 mod 97 over the rearranged IBAN (country and check digits
// moved to the end, letters as 10–35).
func ibanChecksum(iban []byte) bool {
	r := 0
	add := func(b byte) {
		if isDigit(b) {
			r = (r*10 + int(b-'0')) % 97
		} else {
			r = (r*100 + int(b-'A') + 10) % 97
		}
	}
	for _, b := range iban[4:] {
		add(b)
	}
	for _, b := range iban[:4] {
		add(b)
	}
	return r == 1
}

// ipv6At handles a ':' at i: it reads the surrounding run of hex digits, colons and dots and
// validates it as an IPv6 address (compressed forms and an embedded IPv4 tail included).
func (c *Classifier) ipv6At(sc *scanState, i int) {
	s := sc.s
	prev := i > 0 && (isHex(s[i-1]) || s[i-1] == ':')
	next := i+1 < len(s) && (isHex(s[i+1]) || s[i+1] == ':')
	if !prev && !next {
		return
	}
	isIPByte := func(b byte) bool { return isHex(b) || b == ':' || b == '.' }
	a := i
	for a > 0 && i-a <= maxIP && isIPByte(s[a-1]) {
		a--
	}
	b := i + 1
	for b < len(s) && b-a <= maxIP && isIPByte(s[b]) {
		b++
	}
	sc.ip6Next = b
	for a < b && s[a] == '.' {
		a++
	}
	for b > a && s[b-1] == '.' {
		b--
	}
	if b-a >= 2 && s[b-1] == ':' && s[b-2] != ':' {
		b-- // "fe80::1:" at the end of a clause
	}
	if b-a > maxIP || b-a < 3 || a > 0 && isWordByte(s[a-1]) || b < len(s) && isWordByte(s[b]) {
		return
	}
	if !validIPv6(s[a:b]) {
		return
	}
	c.emit(sc, detIP, a, b)
	sc.numNext = max(sc.numNext, b) // an embedded IPv4 tail is part of this match
}

// validIPv6 parses an IPv6 address without a zone. It rejects "::" alone and eight groups of
// at most two hex digits, which are MAC-like hex dumps (de:ad:be:ef:…) rather than addresses.
func validIPv6(s string) bool {
	groups, longest, i := 0, 0, 0
	ellipsis := false
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		ellipsis, i = true, 2
	}
	for i < len(s) {
		j := i
		for j < len(s) && j-i < 5 && isHex(s[j]) {
			j++
		}
		if j < len(s) && s[j] == '.' {
			if groups > 6 || !validIPv4(s[i:]) {
				return false
			}
			groups += 2
			longest = 4
			break
		}
		if j == i || j-i > 4 {
			return false
		}
		groups++
		longest = max(longest, j-i)
		i = j
		if i == len(s) {
			break
		}
		if s[i] != ':' {
			return false
		}
		i++
		if i < len(s) && s[i] == ':' {
			if ellipsis {
				return false
			}
			ellipsis = true
			i++
		} else if i == len(s) {
			return false
		}
	}
	if groups == 0 {
		return false
	}
	if ellipsis {
		return groups < 8
	}
	return groups == 8 && longest > 2
}

// validIPv4 parses a dotted quad.
func validIPv4(s string) bool {
	parts, start := 0, 0
	for k := 0; k <= len(s); k++ {
		if k < len(s) && s[k] != '.' {
			if !isDigit(s[k]) {
				return false
			}
			continue
		}
		if !validOctet(s[start:k]) {
			return false
		}
		parts++
		start = k + 1
	}
	return parts == 4
}
