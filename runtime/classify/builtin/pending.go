package builtin

import (
	"strings"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Pending text: the streaming half of Classify (Input.More, Result.Open).
//
// When more text may follow, the end of the text is not a boundary. A match that text still
// to come could extend, cut short or turn into a non-match, and a beginning that it could
// turn into a match, are pending: Classify reports where the earliest of them starts (Open)
// and returns only the spans that end at or before it. Everything before Open is settled:
// whatever follows, a classification of the longer text finds exactly the same spans there.
// The engine releases a stream only up to Open, so a credential whose head has arrived is
// never released before its tail has (issue 14).
//
// Open is computed per detector family from the text alone, as the start of the trailing
// stretch that the family's matches could still reach into:
//
//   - tokens (email, IPv6, secrets, JWTs, assignment values, URL passwords, vendor tokens,
//     webhook URLs, command-line values, base64 values): the trailing run of printable ASCII
//     and of the letters and digits addresses may hold. No such match holds white space, and
//     none looks past the byte right after it, so only a match inside that run can still
//     change; one that ends before it is decided. Two exceptions are handled apart: a value
//     on a line of its own inside an XML element is decided by the end tag after white space,
//     so it holds the text back from its start (scanState.hold) until the end tag is there;
//     and a token that can be longer than the hint (a 1Password or Fly.io token, a base64 PEM
//     block) matches to the end of the text once its beginning decides it, as a JWT does.
//   - numbers (phone, credit-card, us-ssn, IPv4): the trailing run of digits and of the
//     separators, parentheses and '+' a numeric token is written with, plus the bytes that
//     decide how it ends (':', '/', ','); nothing when the run ends in the tail of another
//     number ("12:30", "1,250"), which never matches.
//   - iban: a trailing stretch that is a beginning of an IBAN (country, check digits, BBAN in
//     groups), or a complete IBAN whose end is the end of the text.
//   - private-key: a beginning of a BEGIN line at the end of the text; an unclosed block is
//     a span that ends at the end of the text (below).
//   - prompt-injection and keywords: the earliest word from which the words up to the end
//     of the text are a beginning of a phrase (or keyword), as the matchers fold case —
//     including a complete phrase whose last word, clause end or optional words after it
//     are still to come (pending_phrases.go).
//   - custom patterns: the earliest position from which the rest of the text is a prefix of
//     something the pattern matches (prefix.go).
//
// Then, because the families' matches can overlap and a span is all or nothing, settle drops
// every span that ends after Open, lowering Open to the start of any span it cuts, until none
// does; a span that ends at the end of the text is pending too, as its end is not known. The
// matchers keep no state that would let a pending match hide a settled one: their cursors
// skip only bytes after the start of the match that set them.
//
// Left context: matches that depend on text before them (an identifier word before a number,
// a key before a value) read a bounded stretch back, and HoldBackHint counts it where it is
// longer than the match (numberContext, assignContext in detectors.go). The engine re-sends
// at least HoldBackHint characters before the previous Open, so a pending match is judged with
// the same context as in the whole text.

// tokenDetectors are the detectors whose matches are runs without white space, or that have
// such matches: private-key's age and minisign keys and base64-encoded PEM blocks are tokens.
var tokenDetectors = [...]detector{
	detEmail, detIP, detAWSAccessKey, detAWSSecretKey, detGitHub, detGitLab, detSlack,
	detOpenAI, detAnthropic, detPrivateKey, detJWT, detGenericSecret,
}

// numberDetectors are the detectors of the numeric-token family (numbers.go).
var numberDetectors = [...]detector{detPhone, detCard, detSSN, detIP}

// open returns the offset at which the pending text of s begins, before settle.
func (c *Classifier) open(s string) int {
	open := len(s)
	for _, d := range tokenDetectors {
		if c.on(d) {
			open = min(open, tokenRunStart(s))
			break
		}
	}
	for _, d := range numberDetectors {
		if c.on(d) {
			open = min(open, numberRunStart(s))
			break
		}
	}
	if c.on(detIBAN) {
		open = min(open, ibanOpen(s))
	}
	if c.on(detPrivateKey) {
		open = min(open, pemHeaderOpen(s))
	}
	if c.on(detInjection) {
		open = min(open, injectionOpen(s))
	}
	if c.keywords.len() > 0 {
		open = min(open, c.keywords.open(s))
	}
	for _, p := range c.windowed {
		open = min(open, p.open(s))
	}
	for _, p := range c.global {
		open = min(open, p.open(s))
	}
	return open
}

// settle drops the spans that are not settled: a span that ends at the end of the text (its
// end is not known yet) or after open. A span that starts before open and ends after it
// lowers open to its start, so that no settled prefix of it is released; that can cut
// another span, so it repeats until no span ends after open. It returns the final open.
func (sc *scanState) settle(open int) int {
	for _, sp := range sc.spans {
		if sp.End == len(sc.s) {
			open = min(open, sp.Start)
		}
	}
	sc.spans, open = settleAt(sc.spans, open)
	return open
}

// settleAt keeps the spans that end at or before open, after lowering open to the start of
// any span it cuts, until it cuts none (settle; scan's hidden runs, which add spans after
// the pass has settled its own). It returns the spans kept, in spans' array, and open.
func settleAt(spans []classify.Span, open int) ([]classify.Span, int) {
	for cut := true; cut; {
		cut = false
		for _, sp := range spans {
			if sp.Start < open && sp.End > open {
				open, cut = sp.Start, true
			}
		}
	}
	kept := spans[:0]
	for _, sp := range spans {
		if sp.End <= open {
			kept = append(kept, sp)
		}
	}
	return kept, open
}

// partialRuneStart returns where an incomplete UTF-8 sequence at the end of s begins: a rune
// cut by the stream, whose class is not known yet. It returns len(s) when s ends with a
// complete rune (or with invalid bytes that no later byte can complete).
func partialRuneStart(s string) int {
	for k := 1; k < utf8.UTFMax && k <= len(s); k++ {
		b := s[len(s)-k]
		if b < utf8.RuneSelf {
			return len(s)
		}
		if utf8.RuneStart(b) {
			if !utf8.FullRuneInString(s[len(s)-k:]) {
				return len(s) - k
			}
			return len(s)
		}
	}
	return len(s)
}

// tokenRunStart returns the start of the trailing run of bytes that a token match can hold:
// printable ASCII, the letters and digits of internationalized addresses, and a rune still
// arriving.
func tokenRunStart(s string) int {
	j := partialRuneStart(s)
	for j > 0 {
		b := s[j-1]
		if b > ' ' && b < utf8.RuneSelf-1 {
			j--
			continue
		}
		if b < utf8.RuneSelf {
			break
		}
		r, n := utf8.DecodeLastRuneInString(s[:j])
		if !isAddressRune(r) {
			break
		}
		j -= n
	}
	return j
}

// numberRunStart returns the start of a numeric token that more text could extend or change:
// the trailing run of digits, of the separators between groups (' ', '-', '.'), of '(' ')'
// '+', and of ':', '/', ',' that decide whether a token is joined to the next one. Inside a
// token two of those non-digits are adjacent only around a parenthesis or after '+' ("+(",
// " (", ") "), so the run stops at any other pair. The token begins at its first digit, '('
// or '+'.
func numberRunStart(s string) int {
	j := len(s)
	for j > 0 {
		b := s[j-1]
		if isDigit(b) {
			j--
			continue
		}
		if strings.IndexByte(" -.()+/:,", b) < 0 {
			break
		}
		if j < len(s) && !isDigit(s[j]) && b != '(' && b != ')' && b != '+' && s[j] != '(' && s[j] != ')' {
			break
		}
		j--
	}
	for j < len(s) && !isDigit(s[j]) && s[j] != '(' && s[j] != '+' {
		j++
	}
	// Digits right after a digit and ':', '/' or ',' are the tail of another number
	// ("12:30", "05/17", "1,250") and never match; neither does a token joined to them by
	// ',' , and one joined by ':' or '/' is decided once the digit after the join is there.
	// So when the run ends in such a tail — digits and single separators after the last
	// join, no parenthesis or '+' that could begin a token of its own — nothing in it is
	// pending.
	for q := len(s) - 2; q > j; q-- {
		b := s[q]
		if b == '(' || b == ')' || b == '+' {
			break
		}
		if (b == ',' || b == ':' || b == '/') && isDigit(s[q-1]) && isDigit(s[q+1]) {
			return len(s)
		}
	}
	return j
}

// ibanOpen returns the start of a trailing IBAN that is not complete or whose end is the end
// of the text, or len(s).
func ibanOpen(s string) int {
	for a := max(0, len(s)-maxIBAN-1); a < len(s); a++ {
		if isUpper(s[a]) && (a == 0 || !isWordByte(s[a-1])) && ibanPendingAt(s, a) {
			return a
		}
	}
	return len(s)
}

// ibanPendingAt reports whether the text from a is a beginning of an IBAN as ibanAt reads
// one (two capitals of a registered country, two check digits, the BBAN contiguous or in
// groups of four), or a complete one that ends at the end of the text.
func ibanPendingAt(s string, a int) bool {
	t := s[a:]
	if len(t) < 2 {
		return len(t) == 1 && isUpper(t[0])
	}
	n, ok := ibanLength(t[0], t[1])
	if !ok || !isUpper(t[0]) || !isUpper(t[1]) {
		return false
	}
	grouped := len(t) > 4 && t[4] == ' '
	m, k := 0, 0
	for m < n {
		if k >= len(t) {
			return true
		}
		if grouped && m > 0 && m%4 == 0 {
			if t[k] != ' ' {
				return false
			}
			if k++; k >= len(t) {
				return true
			}
		}
		b := t[k]
		switch {
		case m == 2 || m == 3:
			if !isDigit(b) {
				return false
			}
		case !isUpper(b) && !isDigit(b):
			return false
		}
		m++
		k++
	}
	return k == len(t)
}

// pemBegin is the start of every private-key BEGIN line.
const pemBegin = "-----BEGIN "

// pemHeaderOpen returns the start of a private-key BEGIN line that is still arriving at the
// end of the text, or len(s). (A complete header starts a block that ends at its END line or,
// unclosed, at the end of the text; such a span is pending through settle.)
func pemHeaderOpen(s string) int {
	for a := max(0, len(s)-len(pemBegin)-maxPEMLabel-len("-----")); a < len(s); a++ {
		if s[a] != '-' || a > 0 && s[a-1] == '-' {
			continue
		}
		t := s[a:]
		if len(t) <= len(pemBegin) {
			if strings.HasPrefix(pemBegin, t) {
				return a
			}
			continue
		}
		if !strings.HasPrefix(t, pemBegin) {
			continue
		}
		rest := t[len(pemBegin):]
		for _, label := range pemLabels {
			if strings.HasPrefix(label+"-----", rest) {
				return a
			}
		}
	}
	return len(s)
}
