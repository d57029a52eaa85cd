package builtin

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
)

// What makes an assigned value a secret: generic-secret's tests of a value, once its key has
// said that it may be one (assign.go).

// isSecretUUID reports a UUID that is not a placeholder (all zeros, 12345678-…, abcd…).
func isSecretUUID(v string) bool {
	return isUUID(v) && !isSequence(v) && !repeats(strings.ReplaceAll(v, "-", ""), 5)
}

// isSecretDigits reports a number of 12 digits or more that is not a placeholder, a run or a
// timestamp-like value of few distinct digits.
func isSecretDigits(v string) bool {
	return len(v) >= 12 && len(v) <= 64 && allIn(v, cDigit) && !isSequence(v) && !repeats(v, 4) && entropy(v) >= 2.8
}

// isSequence reports a value that holds six consecutive digits or letters in order, up or
// down, as placeholders do (123456789, abcdef, 9876543210).
func isSequence(v string) bool { return longestSequence(v) >= 6 }

// longestSequence is the length of the longest run of consecutive digits or letters in
// order, up or down, in v.
func longestSequence(v string) int {
	up, down, most := 1, 1, min(len(v), 1)
	for i := 1; i < len(v); i++ {
		a, b := lower(v[i-1]), lower(v[i])
		same := isDigit(a) && isDigit(b) || isLower(a) && isLower(b)
		switch {
		case same && b == a+1:
			up, down = up+1, 1
		case same && a == b+1:
			up, down = 1, down+1
		default:
			up, down = 1, 1
		}
		most = max(most, up, down)
	}
	return most
}

// Entropy thresholds of generic-secret, in bits per character.
//
// A string of n characters has at most log2(n) bits of Shannon entropy per character (every
// character distinct). Measured over 20,000 random strings per length, the 0.1th percentile of
// a random base62 or base64 value is 2.75 bits at 12 characters, 3.20 at 16, 3.48 at 20, 3.72
// at 24 and 4.05 at 32 — about 0.8·log2(n) — so requiring 0.8·log2(n) (at most 4.0) keeps
// ≥ 99.9 % of random tokens and drops repetitive values such as "hunter2hunter2" (2.81 < 3.05)
// or "Summer2024!Summer" (3.03 < 3.27). Hex has 4 bits at most; random hex of 20 or more
// characters stays above 2.7 (0.1th percentile 2.70 at 20 characters) while hex-looking words
// (deadbeef…) fall below. Entropy alone does not tell "process.env.OPENAI_API_KEY" (4.09) from
// a token, so the structural checks below run first.
//
// A value drawn from the 32 to 36 characters of one letter case and the digits repeats more:
// its 0.1th percentile is 2.98 bits at 16 characters, 3.44 at 24 and 3.78 at 32 (36
// characters; base32 2.90, 3.36, 3.69), so such a value needs 0.72·log2(n), at most 3.6.
const (
	drawEntropyRatio = 0.72
	drawEntropyCap   = 3.6
	entropyRatio     = 0.8
	entropyCap       = 4.0
	hexEntropyMin    = 2.7
	minGenericValue  = 12
	minHexValue      = 20
)

// isGenericSecret decides whether an assigned value is a credential: long enough, not a
// UUID, version, path, URL, reference to a variable or placeholder, not made of ordinary
// words and numbers, and high-entropy for its length.
func isGenericSecret(v string) bool {
	n := len(v)
	if n < minGenericValue || n > maxGenericSecret {
		return false
	}
	draw := isOneCaseDraw(v)
	if isUUID(v) || isVersion(v) || isReference(v) || isPlaceholder(v) || !draw && isWordlike(v) {
		return false
	}
	if vendorShaped(v) || strayCharacters(v) {
		return false // a vendor's format decides it, or a token with a character typed wrong
	}
	if isSSHPublicKeyBlob(v) {
		return false // the public half of a key pair, as authorized_keys and deploy keys hold it
	}
	hex := true
	var letters, digits int
	for i := 0; i < n; i++ {
		b := v[i]
		hex = hex && isHex(b)
		switch {
		case isAlpha(b):
			letters++
		case isDigit(b):
			digits++
		}
	}
	h := entropy(v)
	if hex {
		return n >= minHexValue && letters > 0 && digits > 0 && h >= hexEntropyMin
	}
	if draw {
		return h >= min(drawEntropyCap, drawEntropyRatio*math.Log2(float64(n)))
	}
	return h >= min(entropyCap, entropyRatio*math.Log2(float64(n)))
}

// entropy is the Shannon entropy of v's bytes, in bits per byte.
func entropy(v string) float64 {
	var count [256]uint16
	for i := 0; i < len(v); i++ {
		count[v[i]]++
	}
	h, n := 0.0, float64(len(v))
	for _, k := range count {
		if k > 0 {
			p := float64(k) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// isUUID reports the 8-4-4-4-12 hex form.
func isUUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if v[i] != '-' {
				return false
			}
		} else if !isHex(v[i]) {
			return false
		}
	}
	return true
}

// isVersion reports version strings: v1.2.3, 1.22.3-rc.1+build.45.
func isVersion(v string) bool {
	i := 0
	if i < len(v) && (v[i] == 'v' || v[i] == 'V') {
		i++
	}
	dots := 0
	for i < len(v) && (isDigit(v[i]) || v[i] == '.') {
		if v[i] == '.' {
			dots++
		}
		i++
	}
	return dots >= 1 && (i == len(v) || v[i] == '-' || v[i] == '+') && i > 0 && isDigit(v[i-1])
}

// isReference reports values that name a secret instead of holding one: $VAR, ${VAR},
// %VAR%, {{ .Values.x }}, and URLs. (Paths are made of words and fail isWordlike.)
func isReference(v string) bool {
	switch v[0] {
	case '$', '{':
		return true
	case '%':
		// %(name)s, %NAME% (a Windows variable); not a password that starts with '%'.
		return len(v) > 1 && v[1] == '(' || strings.IndexByte(v[1:], '%') == len(v)-2 && isWordlikeName(v[1:len(v)-1])
	}
	return strings.Contains(v, "://")
}

// innerDigit reports a digit between two letters of v ("Wue6IUS", not "key2" or "2024-db").
func innerDigit(v string) bool {
	for i := 1; i+1 < len(v); i++ {
		if isDigit(v[i]) && isAlpha(v[i-1]) {
			for k := i + 1; k < len(v) && isDigit(v[k]); k++ {
				i = k
			}
			if i+1 < len(v) && isAlpha(v[i+1]) {
				return true
			}
		}
	}
	return false
}

// isOneCaseDraw reports a value drawn at random from the letters of one case and the digits
// (capitals and digits, small letters and digits, base32): only letters and digits, every
// letter of one case, switching between letters and digits at least four times and at least
// once every seven characters. isWordlike's humps read such a value as acronyms (capitals)
// or as runs with vowels (small letters); identifiers of one case with numbers in them
// switch once to three times ("AES256GCM", "BILLING2025", "RSA4096SHA256").
func isOneCaseDraw(v string) bool {
	var upper, lower bool
	switches := 0
	for i := 0; i < len(v); i++ {
		b := v[i]
		switch {
		case isUpper(b):
			upper = true
		case isLower(b):
			lower = true
		case !isDigit(b):
			return false
		}
		if i > 0 && isDigit(b) != isDigit(v[i-1]) {
			switches++
		}
	}
	return upper != lower && switches >= 4 && 7*switches >= len(v)
}

// hasVowel reports whether a run of letters has a vowel (y included).
func hasVowel(w string) bool {
	for i := 0; i < len(w); i++ {
		switch w[i] | 0x20 {
		case 'a', 'e', 'i', 'o', 'u', 'y':
			return true
		}
	}
	return false
}

// isWordlikeName reports an environment variable name: letters, digits and underscores.
func isWordlikeName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return s != ""
}

var placeholderWords = []string{
	"example", "placeholder", "changeme", "change_me", "change-me", "your",
	"xxxx", "****", "redacted", "dummy", "sample", "...", "replace", "insert", "todo", "<", ">",
}

// isPlaceholder reports documentation placeholders.
func isPlaceholder(v string) bool {
	if isSequence(v) {
		return true
	}
	for _, w := range placeholderWords {
		for i := 0; i+len(w) <= len(v); i++ {
			if hasPrefixFold(v[i:], w) {
				return true
			}
		}
	}
	return false
}

// isWordlike reports values made of words and numbers, as identifiers, paths and phrases are:
// split into humps (at bytes that are not letters or digits, between letters and digits, and
// at camelCase and ACRONYMWord boundaries), at most one hump, or a third of them, is a letter
// or two cut out of a longer run ("a", "am" and "db" standing alone between separators are
// words). "testRSA2048PrivateKey", "process.env.OPENAI_API_KEY", "i-am-the-worst" and
// "production-db-2024" are wordlike; random tokens change case or class every two characters
// or so and are not.
func isWordlike(v string) bool {
	humps, short, letters, unspoken := 0, 0, 0, 0
	hump := func(a, b int) {
		humps++
		letters += b - a
		if b-a >= 3 && !isUpper(v[b-1]) && !hasVowel(v[a:b]) {
			unspoken++ // "Qdv": not a word, not an acronym ("db" and "ok" are words)
		}
		whole := (a == 0 || !isAlnum(v[a-1])) && (b == len(v) || !isAlnum(v[b]))
		if b-a <= 2 && !whole {
			short++
		}
	}
	for i := 0; i < len(v); {
		b := v[i]
		switch {
		case isDigit(b):
			for i < len(v) && isDigit(v[i]) {
				i++
			}
		case isUpper(b):
			k := i
			for k < len(v) && isUpper(v[k]) {
				k++
			}
			if k < len(v) && isLower(v[k]) {
				if k-i > 1 { // "RSAPrivate": "RSA", then "Private"
					hump(i, k-1)
					i = k - 1
					continue
				}
				for k < len(v) && isLower(v[k]) {
					k++
				}
			}
			hump(i, k)
			i = k
		case isLower(b):
			k := i
			for k < len(v) && isLower(v[k]) {
				k++
			}
			hump(i, k)
			i = k
		default:
			i++
		}
	}
	if unspoken >= 2 && 3*unspoken >= humps || unspoken >= 1 && innerDigit(v) ||
		humps > 0 && letters <= 4*humps && entropy(v) >= 4.5 {
		// Humps that cannot be spoken (with digits inside the value, as random tokens of 62
		// characters nearly always have), or short humps in a value this varied, are a
		// random token's case changes, not words: identifiers and phrases have vowels and repeat
		// their letters (entropy ≤ 4.1 bits per byte even at 30 characters); tokens drawn
		// from 62 characters do not.
		return false
	}
	return short <= 1 || 3*short <= humps
}

// isSSHPublicKeyBlob reports the base64 of an SSH public key as authorized_keys, known_hosts
// and deploy keys write it (RFC 4253 § 6.6, RFC 5656, PROTOCOL.u2f): a 4-byte length, then a
// key type beginning "ssh-", "ecdsa-" or "sk-" ("AAAAB3NzaC1yc2E…" of ssh-rsa, "AAAAC3NzaC1l…"
// of ssh-ed25519). It is public, not a credential.
func isSSHPublicKeyBlob(v string) bool {
	if len(v) < 32 || !strings.HasPrefix(v, "AAAA") {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(v[:32])
	if err != nil {
		return false
	}
	n := int(binary.BigEndian.Uint32(b))
	if n < 7 || n > 64 {
		return false
	}
	t := b[4:]
	return bytes.HasPrefix(t, []byte("ssh-")) || bytes.HasPrefix(t, []byte("ecdsa-")) || bytes.HasPrefix(t, []byte("sk-"))
}
