package builtin

import (
	"math"
	"strings"
)

// Assignment detectors: aws-secret-key and generic-secret look at `key = value` written in
// code, config files, environment files, JSON, YAML, headers and URLs. The trigger is the
// operator ('=' or ':', also ":=", "=>", ".=", "?=", "+=" and "::="); the key before it
// decides whether the value is looked at, and the value decides whether it is a secret. Keys
// are also found where the value is not assigned to them directly: behind a type name (var
// apiKey string = …), in a name/value pair (<add key="ApiKey" value="…"/>, "- name:
// DB_PASSWORD" then "value: …"), as an XML element (<password>…</password>, trigger '>')
// and as the first argument of a call (setProperty("db.password", "…"), trigger ',' after a
// string literal). The
// span is the value only.

// keyKind is what a key name says about its value.
type keyKind uint8

const (
	keyNone keyKind = iota
	keySecret
	keyAWSSecret
	keyAuthorization // the value may begin with an auth scheme: "Bearer <token>"
)

// secretKeyWords end a key name whose value is a credential: api_key, apiKey, X-Api-Key,
// token, access_token, client_secret, DB_PASSWORD, passwd, …
var secretKeyWords = []string{
	"key", "keys", "apikey", "token", "tokens", "secret", "secrets", "password", "passwd", "pwd",
	"pass", "passphrase", "credential", "credentials", "auth", "authorization",
}

// notSecretKeyWords, before the last word, make a key name a non-credential: public_key,
// page_token, primaryKey, sort_key, cache_key, authenticity_token (Rails' anti-forgery
// token), …
var notSecretKeyWords = []string{
	"public", "pub", "page", "next", "prev", "continuation", "sort", "partition", "primary",
	"foreign", "cache", "idempotency", "lookup", "row", "object", "max", "num", "total",
	"hot", "map", "dict", "authenticity",
}

// maxAssignBlanks is how many spaces or tabs may stand between a key and its operator, and
// between the operator and the value. Aligned assignments need more than a few: gofmt lines
// up the '=' of a const block and the values of a composite literal, and config files are
// often aligned by hand. The bound keeps the key within assignContext of the value.
const maxAssignBlanks = 32

// assignAt handles ':', '=' or '>' at i.
func (c *Classifier) assignAt(sc *scanState, i int) {
	if sc.s[i] == '>' {
		c.elementAt(sc, i)
		return
	}
	s := sc.s
	opStart, opEnd := i, i+1
	next := byte(0)
	if i+1 < len(s) {
		next = s[i+1]
	}
	if s[i] == ':' {
		switch {
		case next == ':': // "::" is a scope or an IPv6 address, or begins Makefile's "::="
			sc.assignNext = i + 2
			return
		case next == '=':
			opEnd = i + 2
		}
	} else {
		switch {
		case i >= 2 && s[i-1] == ':' && s[i-2] == ':': // Makefile "::="
			opStart = i - 2
		case i > 0 && strings.IndexByte("=!<>:", s[i-1]) >= 0:
			return
		case i > 0 && strings.IndexByte(".?+", s[i-1]) >= 0: // PHP ".=", Makefile "?=" and "+="
			opStart = i - 1
		}
		switch {
		case next == '=':
			sc.assignNext = i + 2
			return
		case next == '>':
			opEnd = i + 2
		}
	}
	sc.assignNext = opEnd

	// The key, before optional blanks and a closing quote.
	k := opStart
	for n := 0; k > 0 && n < maxAssignBlanks && (s[k-1] == ' ' || s[k-1] == '\t'); n++ {
		k--
	}
	quoted := k > 0 && (s[k-1] == '"' || s[k-1] == '\'' || s[k-1] == '`')
	if quoted {
		k--
	}
	ke := k
	for k > 0 && ke-k < 64 && (isWordByte(s[k-1]) || s[k-1] == '-' || s[k-1] == '.') {
		k--
	}
	if k == ke || ke-k >= 64 {
		return
	}
	key := s[k:ke]
	kind := classifyKey(key)
	switch {
	case kind == keyNone && wordIn(key, typeNames):
		kind = typedKey(s, k) // var apiKey string = "…"
	case kind == keyNone && wordIn(key, valueKeys):
		kind = namedValueKey(s, k) // <add key="ApiKey" value="…"/>, - name: DB_PASSWORD / value: …
	}
	if kind == keyNone {
		return
	}

	// The value, after optional blanks and an opening quote.
	v := opEnd
	for n := 0; v < len(s) && n < maxAssignBlanks && (s[v] == ' ' || s[v] == '\t'); n++ {
		v++
	}
	c.secretValue(sc, kind, v, s[i:opEnd])
}

// secretValue reads the value that begins at v (after an optional opening quote) of a key of
// kind, and records it when it is a secret. op is the assignment operator, "" for values that
// are not assigned (XML elements, call arguments).
func (c *Classifier) secretValue(sc *scanState, kind keyKind, v int, op string) {
	s := sc.s
	var q byte
	if v < len(s) && (s[v] == '"' || s[v] == '\'' || s[v] == '`') {
		q = s[v]
		v++
	}
	if kind == keyAuthorization {
		for _, scheme := range [...]string{"bearer ", "basic ", "token "} {
			if hasPrefixFold(s[v:], scheme) {
				v += len(scheme)
				break
			}
		}
	}
	ve := v
	for ve < len(s) && ve-v <= maxGenericSecret && isValueByte(s[ve], q) {
		ve++
	}
	if ve-v > maxGenericSecret {
		return
	}
	if q != 0 && ve < len(s) && s[ve] != q {
		return // a quoted value with a space or a line break in it is not a token
	}
	if q == 0 {
		for ve > v && (s[ve-1] == '.' || s[ve-1] == ',') {
			ve--
		}
		if ve == v || isExpression(s, v, ve, op) {
			return
		}
	}
	c.emitSecret(sc, kind, v, ve)
}

// emitSecret records the value s[v:ve] of a key of kind when it is a secret.
func (c *Classifier) emitSecret(sc *scanState, kind keyKind, v, ve int) {
	value := sc.s[v:ve]
	if kind == keyAWSSecret && c.on(detAWSSecretKey) && isAWSSecret(value) {
		c.emit(sc, detAWSSecretKey, v, ve)
		return
	}
	if c.on(detGenericSecret) && isGenericSecret(value) {
		c.emit(sc, detGenericSecret, v, ve)
	}
}

// isExpression reports an unquoted value that is code rather than a literal: a call or an
// index ("getpass.getpass()", "os.environ['X']"), a dotted path of identifiers
// ("process.env.API_KEY", "cfg.Token"), or any identifier after ":=" or "=>" (in Go, PHP and
// Ruby a literal secret would be quoted).
func isExpression(s string, v, ve int, op string) bool {
	if ve < len(s) && (s[ve] == '(' || s[ve] == '[') {
		return true
	}
	value := s[v:ve]
	ident, dots := true, 0
	for k := 0; k < len(value) && ident; k++ {
		b := value[k]
		switch {
		case b == '.':
			dots++
			ident = k > 0 && k+1 < len(value) && (isAlpha(value[k+1]) || value[k+1] == '_')
		case k == 0:
			ident = isAlpha(b) || b == '_'
		default:
			ident = isWordByte(b)
		}
	}
	return ident && (dots > 0 || op == ":=" || op == "=>")
}

// isValueByte reports a byte that may be part of a value: printable ASCII without spaces and,
// unquoted, without the bytes that end a value in code, URLs and prose.
func isValueByte(b, quote byte) bool {
	if b <= ' ' || b >= 0x7f || b == '\\' {
		return false
	}
	if quote != 0 {
		return b != quote
	}
	return strings.IndexByte("\"'`,;()[]{}<>&|", b) < 0
}

// classifyKey splits a key name into words (at '_', '-', '.' and camelCase) and classifies it
// by its last word, or as an AWS secret key name (aws_secret_access_key, AWS_SECRET_KEY,
// SecretAccessKey).
func classifyKey(key string) keyKind {
	var words [8]string
	n := 0
	start := 0
	flush := func(end int) {
		if end > start {
			if n == len(words) {
				copy(words[:], words[1:])
				n--
			}
			words[n] = key[start:end]
			n++
		}
	}
	for k := 0; k < len(key); k++ {
		b := key[k]
		if b == '_' || b == '-' || b == '.' {
			flush(k)
			start = k + 1
			continue
		}
		// camelCase: a capital after a lower-case letter or a digit, or the last capital of a
		// run of capitals followed by a lower-case letter ("APIKey" → API, Key).
		if k > start && isUpper(b) && (isLower(key[k-1]) || isDigit(key[k-1]) ||
			isUpper(key[k-1]) && k+1 < len(key) && isLower(key[k+1])) {
			flush(k)
			start = k
		}
	}
	flush(len(key))
	if n == 0 {
		return keyNone
	}
	var aws, secret, access bool
	for _, w := range words[:n] {
		aws = aws || equalFoldASCII(w, "aws")
		secret = secret || equalFoldASCII(w, "secret")
		access = access || equalFoldASCII(w, "access")
	}
	last := words[n-1]
	if secret && (aws || access && equalFoldASCII(last, "key")) {
		return keyAWSSecret
	}
	for _, w := range words[:n] {
		if equalFoldASCII(w, "csrf") || equalFoldASCII(w, "xsrf") {
			return keyNone // an anti-forgery token protects a form; it is not a credential
		}
	}
	if !wordIn(last, secretKeyWords) {
		return keyNone
	}
	if n > 1 && wordIn(words[n-2], notSecretKeyWords) {
		return keyNone
	}
	if equalFoldASCII(last, "authorization") || equalFoldASCII(last, "auth") {
		return keyAuthorization
	}
	return keySecret
}

// isAWSSecret: exactly 40 base64 characters mixing cases and digits, not the documentation
// example (…EXAMPLEKEY).
func isAWSSecret(v string) bool {
	if len(v) != maxAWSSecretKey || strings.Contains(v, "EXAMPLE") {
		return false
	}
	for i := 0; i < len(v); i++ {
		if b := v[i]; !isAlnum(b) && b != '+' && b != '/' {
			return false
		}
	}
	return classMix(v) == 3
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
