package builtin

import "strings"

// detector identifies a built-in detector. Its name is also its category id.
type detector uint8

const (
	detEmail detector = iota
	detPhone
	detCard
	detIBAN
	detSSN
	detIP
	detAWSAccessKey
	detAWSSecretKey
	detGitHub
	detGitLab
	detSlack
	detOpenAI
	detAnthropic
	detPrivateKey
	detJWT
	detGenericSecret
	detInjection
	numDetectors
)

// Longest matches, in characters, per detector. Every detector reads ASCII only, so characters
// and bytes agree for them. They are the detectors' contribution to the hold-back hint and are
// also enforced by the validators, so the hint is an upper bound and not a guess.
const (
	maxEmail          = 254 // RFC 5321 path limit
	maxPhone          = 32  // "+" and 15 digits (E.164) with separators, parentheses, "(0)"
	maxCard           = 23  // 19 digits in groups of 4 with separators
	maxIBAN           = 42  // 34 characters in groups of 4 with spaces
	maxSSN            = 11  // AAA-GG-SSSS
	maxIP             = 45  // ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255
	maxAWSAccessKey   = 20
	maxAWSSecretKey   = 40
	maxGitHub         = 255 // GitHub documents tokens of up to 255 characters
	maxGitLab         = 86  // glpat- and up to 80 characters
	maxSlack          = 255
	maxOpenAI         = 255
	maxAnthropic      = 255
	maxPEMHeader      = 37 // the BEGIN line of an ENCRYPTED key; the block spans to its END or the text's end
	maxPEMLabel       = 21 // "ENCRYPTED PRIVATE KEY", the longest label of a BEGIN line
	maxJWTHeader      = 256
	encodedPEMHeader  = (maxPEMHeader + 1 + 2) / 3 * 4 // the base64 of a BEGIN line and its line break
	maxGenericSecret  = 256                            // longest value; the key is not part of the span
	maxUnboundedRegex = 256
)

// Left context, in bytes: how far before a match a detector reads to decide it. The engine
// re-sends at least HoldBackHint characters before the text it has not released, so
// the hint covers this too (see pending.go).
const (
	// prevWord reads up to 4 bytes of punctuation and 24 letters, and the byte before them;
	// the number family reads up to three words back ("social security number 123…",
	// "upgraded to 4.2.1.0").
	numberContext = 3 * (4 + 24 + 1)
	// An assignment's value may follow spaces, an operator, a quote and a 64-byte key, and the
	// key may be named before a type ("var apiKey string = …") or by a name/value pair
	// (<add key="ApiKey" value="…"/>).
	assignContext = 200
)

// detectors lists the built-in detectors in canonical order: pii, secrets, prompt-injection.
var detectors = [numDetectors]struct {
	name string
	// hint is the detector's longest match in characters, or its left context when
	// that is longer.
	hint int
	// trig are the trigger bits the detector needs in the byte table.
	trig uint16
}{
	detEmail:        {"email", maxEmail, trigAt},
	detPhone:        {"phone", max(maxPhone, numberContext), trigDigit},
	detCard:         {"credit-card", max(maxCard, numberContext), trigDigit},
	detIBAN:         {"iban", maxIBAN, trigDigit},
	detSSN:          {"us-ssn", max(maxSSN, numberContext), trigDigit},
	detIP:           {"ip-address", max(maxIP, numberContext), trigDigit | trigColon},
	detAWSAccessKey: {"aws-access-key", maxAWSAccessKey, trigUpperA},
	detAWSSecretKey: {"aws-secret-key", max(maxAWSSecretKey, assignContext), trigAssign | trigComma},
	detGitHub:       {"github-token", maxGitHub, trigUnderscore},
	detGitLab:       {"gitlab-token", maxGitLab, trigDash},
	detSlack:        {"slack-token", maxSlack, trigDash | trigAssign}, // ':' of a webhook URL
	detOpenAI:       {"openai-key", maxOpenAI, trigDash},
	detAnthropic:    {"anthropic-key", maxAnthropic, trigDash},
	detPrivateKey:   {"private-key", maxPEMHeader, trigDash | trigHead | trigAssign}, // AGE-, RWRTY0Iy, LS0t…, key: <base64>
	detJWT:          {"jwt", maxJWTHeader, trigUpperJ | trigHead | trigAssign},       // ZXlK…, key: <base64>
	// generic-secret also reports the vendor tokens (vendors.go), webhook URLs and command-line
	// passwords: '@' of URL passwords, '-' '_' '.' '~' of prefixes, capitals that begin one.
	// A digit after a letter may be the first of a Databricks token's body ("dapi1…").
	detGenericSecret: {"generic-secret", maxGenericSecret, trigAssign | trigComma | trigAt | trigDash | trigUnderscore | trigDot | trigHead | trigUpperA | trigDigit},
	detInjection:     {"prompt-injection", 0, trigBoundary}, // hint computed from the phrase list
}

// packs are the named detector packs.
var packs = map[string][]detector{
	"pii":              {detEmail, detPhone, detCard, detIBAN, detSSN, detIP},
	"secrets":          {detAWSAccessKey, detAWSSecretKey, detGitHub, detGitLab, detSlack, detOpenAI, detAnthropic, detPrivateKey, detJWT, detGenericSecret},
	"prompt-injection": {detInjection},
}

func detectorByName(name string) (detector, bool) {
	for d := range numDetectors {
		if detectors[d].name == name {
			return d, true
		}
	}
	return 0, false
}

// isSecretDetector reports whether d is one of the secrets pack's specific detectors, to which
// generic-secret yields.
func isSecretDetector(d detector) bool {
	return d >= detAWSAccessKey && d < detGenericSecret
}

// on reports whether detector d is enabled.
func (c *Classifier) on(d detector) bool { return c.cat[d] >= 0 }

// build fills the trigger tables and the hint once the configuration is known.
func (c *Classifier) build() {
	var bits uint16
	for d := range numDetectors {
		if !c.on(d) {
			continue
		}
		bits |= detectors[d].trig
		if d != detGenericSecret && detectors[d].trig&trigDigit != 0 {
			c.numbers = true
		}
		h := detectors[d].hint
		if d == detInjection {
			h = injectionHint
		}
		c.hint = max(c.hint, h)
	}
	// Vendor tokens count their longest bounded match; a longer one is a streaming prefix
	// that matches once its prefix and longPrefixBody characters are there (vendor_match.go).
	eachVendorRule(func(r *vendorRule) bool {
		if c.on(r.det) {
			c.hint = max(c.hint, min(r.maxLen(), len(r.prefix)+longPrefixBody, maxGenericSecret))
			if r.maxLen() <= maxGenericSecret {
				c.hint = max(c.hint, r.maxLen())
			}
		}
		return true
	})
	// A base64-encoded PEM block matches once its BEGIN line is decoded (encoded.go).
	if c.on(detPrivateKey) {
		c.hint = max(c.hint, encodedPEMHeader)
	}
	// Word-level matchers (prompt injection, keywords) look at words after a boundary.
	words := bits&trigBoundary != 0 || c.keywords.len() > 0
	for b := range 256 {
		var t uint16
		switch {
		case b >= '0' && b <= '9':
			t = trigDigit
		case b == '@':
			t = trigAt
		case b == ':':
			t = trigColon | trigAssign
		case b == '=', b == '>':
			t = trigAssign
		case b == ',':
			t = trigComma
		case b == '-':
			t = trigDash
		case b == '_':
			t = trigUnderscore
		case b == 'A':
			t = trigUpperA
		case b == 'J':
			t = trigUpperJ
		case b == '.', b == '~':
			t = trigDot
		case strings.IndexByte(headBytes+"ZL", byte(b)) >= 0:
			t = trigHead
		}
		// ':' serves IPv6 (trigColon) and assignments (trigAssign); keep only what is on.
		t &= bits
		if words && isBoundaryByte(byte(b)) {
			t |= trigBoundary
		}
		c.trig[b] = t
	}
	for _, p := range c.windowed {
		for b := range 256 {
			if p.first.has(byte(b)) {
				c.trig[b] |= trigCustom
			}
		}
		c.hint = max(c.hint, p.hint)
	}
	for _, p := range c.global {
		c.hint = max(c.hint, p.hint)
	}
	c.keywords.build(&c.trig, &c.wordFirst)
	for b0 := range 256 {
		if c.wordFirst[b0]&firstKeyword != 0 {
			for b1 := range 256 {
				c.wordPairs.add(byte(b0), byte(b1))
			}
		}
	}
	c.hint = max(c.hint, c.keywords.hint)
	c.quietLower = true
	for b := 'a'; b <= 'z'; b++ {
		c.quietLower = c.quietLower && c.trig[b] == 0
	}
}
