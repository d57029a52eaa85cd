package builtin

import (
	"slices"
	"strings"
)

// A value that looks like a vendor's token is judged by the vendor's rule alone: when the
// rule refuses it (a body one character short or long, a character outside its alphabet, a
// wrong checksum) or its prefix is one character off a vendor's, generic-secret does not
// take it either. Such values are look-alikes — typos, test fixtures, documentation and
// hand-made examples — not credentials a vendor issued, and a random secret begins with a
// vendor's prefix by chance about once in 62³ values or less.

// builtinPrefixes are the prefixes of the token detectors that are not in vendorRules;
// the value that follows one is judged by builtinNear.
var builtinPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
	"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xoxc-", "xoxe.xoxp-", "xapp-",
	"sk-ant-", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-",
	"AKIA", "ASIA",
}

// builtinNear reports whether v, which begins with builtin prefix p, is a near miss of
// that detector's fixed shape: a GitHub token of 35 to 37 letters and digits (36 with a
// wrong checksum is refused by the detector), an AWS key id of 15 to 17 capitals and digits
// after its prefix. The detectors whose bodies have no fixed length (Slack, OpenAI,
// Anthropic, GitLab) leave a value they refuse to the generic tests.
func builtinNear(v, p string) bool {
	body := v[len(p):]
	switch p {
	case "ghp_", "gho_", "ghu_", "ghs_", "ghr_":
		return len(body) >= 35 && len(body) <= 37 && allIn(body, cB62)
	case "AKIA", "ASIA":
		return len(body) >= 15 && len(body) <= 17 && allIn(body, cUpNum)
	}
	return false
}

// minNearPrefix is the shortest prefix whose one-character-off spellings are refused: the
// one-off spellings of a shorter one are other vendors' prefixes as often as typos ("tfp_"
// of Typeform and "nfp_" of Netlify, "sk_" and "pk_"), or too easily hit by a random value
// ("AIza").
const minNearPrefix = 5

// nearPrefixes are the prefixes whose one-character-off spellings are refused, builtin and
// vendor.
var nearPrefixes = func() []string {
	keep := func(p string) bool { return len(p) >= minNearPrefix }
	n := 0
	for _, p := range builtinPrefixes {
		if keep(p) {
			n++
		}
	}
	eachVendorRule(func(r *vendorRule) bool {
		if keep(r.prefix) && identifying(r.prefix) {
			n++
		}
		return true
	})
	// One slice of at most n; a prefix already in it (a few vendors share one) is left out.
	out := make([]string, 0, n)
	add := func(p string) {
		if keep(p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range builtinPrefixes {
		add(p)
	}
	eachVendorRule(func(r *vendorRule) bool {
		if identifying(r.prefix) {
			add(r.prefix) // not a shared word: "masterk3y…" is not a typo of Gemini's "master-"
		}
		return true
	})
	return out
}()

// vendorShaped reports whether v begins with a builtin prefix, or with a vendor's
// identifying prefix and a body of the vendor's shape or one character off it (nearShape),
// or with one of nearPrefixes one character off.
func vendorShaped(v string) bool {
	for _, p := range builtinPrefixes {
		if strings.HasPrefix(v, p) && builtinNear(v, p) {
			return true
		}
	}
	if len(v) >= 2 && vendors.headPairs.has(v[0], v[1]) {
		for _, x := range vendors.head.get(v[0], v[1]) {
			if identifying(x.r.prefix) && strings.HasPrefix(v, x.r.prefix) && x.r.refusesNear(v[len(x.r.prefix):]) {
				return true
			}
		}
	}
	// Prefixes of small letters and digits ("dapi", "cio", "oy2"), and prefixes keyed by a
	// capital inside them ("cmVmdGtu"): judged by their rules when they are identifying
	// (four characters or more). A body one of a prefix's rules takes is no near miss of
	// another.
	if len(v) >= 2 && vendors.lowPairs.has(v[0], v[1]) && nearLow(v, vendors.low.get(v[0], v[1])) {
		return true
	}
	if nearLow(v, vendors.inner) {
		return true
	}
	for p := 1; p < len(v) && p <= 24; p++ {
		if !isSeparator(v[p]) {
			continue
		}
		if vendors.sepPairs.has(v[p-1], v[p]) {
			for _, x := range vendors.sep.get(v[p-1], v[p]) {
				if x.at == p && strings.HasPrefix(v, x.r.prefix) && x.r.refusesNear(v[len(x.r.prefix):]) &&
					(identifying(x.r.prefix) || namesVendor(x.r.prefix) && x.r.nearParts(v[len(x.r.prefix):])) {
					return true
				}
			}
		}
		break // prefixes are keyed by their first separator
	}
	for _, p := range nearPrefixes {
		if len(v) > len(p) && oneOff(v[:len(p)], p) {
			return true
		}
	}
	return false
}

// nearLow reports whether v begins with the identifying prefix of one of rules and its body
// is near the shape of one of them (nearShape) and taken by none of them.
func nearLow(v string, rules []indexedRule) bool {
	refused := false
	for _, x := range rules {
		r := x.r
		if !identifying(r.prefix) || !strings.HasPrefix(v, r.prefix) {
			continue
		}
		if r.accepts(v[len(r.prefix):]) {
			return false
		}
		refused = refused || r.nearShape(v[len(r.prefix):])
	}
	return refused
}

// refusesNear reports a body that is r's shape or one character off it (nearShape) and
// that r does not take: a body r takes is a token of the vendor, found or not by the
// vendor's trigger (a base64 body that begins with '+' or '/' after a '.'), never a near miss.
func (r *vendorRule) refusesNear(body string) bool {
	return r.nearShape(body) && !r.accepts(body)
}

// nearShape reports whether body is the body of r or one character off it: of the rule's
// length, or one shorter or longer than it allows, in the rule's alphabets but for at most
// one symbol that belongs to no token alphabet (a typo). A body farther from the rule than
// that — longer or shorter still, or with a character of another token alphabet, such as a
// '-' in a body of letters and digits — is judged as any other value is: it is another form
// of the vendor's token that the rule does not know, or no token of the vendor at all.
func (r *vendorRule) nearShape(body string) bool {
	lo, hi := 0, 0
	for _, g := range r.segs {
		lo += len(g.lit) + g.min
		hi += len(g.lit) + g.max
	}
	if r.pad {
		hi += 2
	}
	if len(body) < lo-1 || len(body) > hi+1 {
		return false
	}
	odd := 0
	for i := 0; i < len(body); i++ {
		b := body[i]
		// '=' belongs to the rule's alphabet only as the base64 padding that ends a body; one
		// inside a body is of another alphabet (base64's, or a value of '=' among letters).
		in := b == '=' && (r.pad || i >= len(body)-2) && strings.TrimRight(body[i:], "=") == ""
		for _, g := range r.segs {
			if g.cls.lenient().has(b) || strings.IndexByte(g.lit, b) >= 0 {
				in = true
				break
			}
		}
		if !in {
			if isB64URL(b) || strings.IndexByte("+/=.~:", b) >= 0 {
				return false // another token alphabet: not a typo
			}
			if odd++; odd > 1 {
				return false
			}
		}
	}
	return true
}

// genericPrefixWords are prefixes several vendors use, or words: a value that begins with
// one and fails one vendor's shape may be another's token.
var genericPrefixWords = []string{"key", "api", "sdk", "pat", "sat", "st", "web", "test", "live", "prod", "sand",
	"sandbox", "secret", "access", "account", "master", "token", "TEST", "private", "standard"}

// identifying reports whether a vendor's prefix names the vendor: four characters without a
// separator ("AIza"), or five or more with one that are not a shared word ("shpat_",
// "sk_live_"; not "pk_", "key-", "test_"). Only such a prefix refuses a value its rule
// refuses.
func identifying(prefix string) bool {
	sep := strings.IndexFunc(prefix, func(r rune) bool { return r < 0x80 && isSeparator(byte(r)) })
	if sep < 0 {
		return len(prefix) >= 4
	}
	if len(prefix) < 5 {
		return false
	}
	return !(sep == len(prefix)-1 && wordIn(prefix[:sep], genericPrefixWords))
}

// namesVendor reports a short prefix with a separator that is not a shared word ("npm_",
// "hf_", "NF-"; not "key-", "api_", "test_"): a value under a secret's key that begins with
// it and has the shape of the vendor's body, cut as the vendor cuts it, or one character off,
// is judged by the vendor's rule.
func namesVendor(prefix string) bool {
	sep := strings.IndexFunc(prefix, func(r rune) bool { return r < 0x80 && isSeparator(byte(r)) })
	return sep >= 2 && sep == len(prefix)-1 && !wordIn(strings.ToLower(prefix[:sep]), genericPrefixWords)
}

// oneOff reports whether a and p, of one length, differ in exactly one byte. A separator
// of p may be that byte only when a letter or digit stands for it and p has four other
// characters ("shpatz" for "shpat_"): one separator for another ("api_" for "api-") is
// another vendor's style, not a typo.
func oneOff(a, p string) bool {
	diff := 0
	for i := 0; i < len(p); i++ {
		if a[i] == p[i] {
			continue
		}
		if isSeparator(a[i]) || isSeparator(p[i]) && len(p) < 5 {
			return false
		}
		if diff++; diff > 1 {
			return false
		}
	}
	return diff == 1
}

// strayCharacters reports a value drawn from one alphabet but for one or two characters:
// hex with one or two other letters, or letters of one case with a single letter of the
// other. A random token of the larger alphabet almost never looks like that (a 20-character
// base62 value has at most two non-hex letters with a probability under 10⁻⁶, and a single
// capital among 12 or more small letters under 10⁻³); a token with a character typed
// wrong, or a look-alike made from one, does.
func strayCharacters(v string) bool {
	// A leading run of letters is a prefix ("dapi" of a Databricks token), not part of the
	// body drawn at random.
	p := 0
	for p < len(v) && p < 8 && isAlpha(v[p]) {
		p++
	}
	if p < len(v) && p < 8 {
		v = v[p:]
	}
	if len(v) < 16 {
		return false
	}
	var hexLetters, lower, upper, digits int
	for i := 0; i < len(v); i++ {
		b := v[i]
		switch {
		case isDigit(b):
			digits++
		case isLower(b):
			lower++
			if b <= 'f' {
				hexLetters++
			}
		case isUpper(b):
			upper++
			if b <= 'F' {
				hexLetters++
			}
		default:
			return false
		}
	}
	letters := lower + upper
	if other := letters - hexLetters; len(v) >= 20 && digits > 0 && hexLetters > 0 && other >= 1 && other <= 2 && (lower == 0 || upper == 0 || other == 1) {
		return true
	}
	return digits > 0 && (lower >= 12 && upper == 1 || upper >= 12 && lower == 1)
}
