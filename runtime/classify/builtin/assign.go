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
	keyClientID      // an OAuth client id: a secret when it is a UUID, digits or random
	keyBare          // "key" alone: a secret when random, but a UUID or a number after it is an id
)

// secretKeyWords end a key name whose value is a credential: api_key, apiKey, X-Api-Key,
// token, access_token, client_secret, DB_PASSWORD, passwd, …
var secretKeyWords = []string{
	"key", "keys", "apikey", "token", "tokens", "secret", "secrets", "password", "passwd", "pwd",
	"pass", "passphrase", "credential", "credentials", "auth", "authorization", "sig",
}

// notSecretKeyWords, before the last word, make a key name a non-credential: public_key,
// page_token, primaryKey, sort_key, cache_key, authenticity_token (Rails' anti-forgery
// token), …
var notSecretKeyWords = []string{
	"public", "pub", "page", "next", "prev", "continuation", "sort", "partition", "primary",
	"foreign", "cache", "idempotency", "lookup", "row", "object", "max", "num", "total",
	"hot", "map", "dict", "authenticity", "publishable",
}

// fixtureWords anywhere in a key name make it a test fixture's or a placeholder's, not a
// credential's: nonMatchingToken, invalidToken, fakePassword, mockApiKey, dummy_secret.
var fixtureWords = []string{
	"fake", "dummy", "mock", "invalid", "nonmatching", "mismatched", "malformed", "bogus", "wrong",
	"bad", "sample", "example", "placeholder", "stub",
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
	if k > 1 && s[k-1] == ']' && (s[k-2] == '"' || s[k-2] == '\'') {
		k-- // a subscript: $config['db_password'] = …, ENV["API_KEY"] = …
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
	// The value, after optional blanks and an opening quote.
	v := opEnd
	for n := 0; v < len(s) && n < maxAssignBlanks && (s[v] == ' ' || s[v] == '\t'); n++ {
		v++
	}
	if kind == keyNone {
		c.encodedValue(sc, v)
		return
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
	basic := false
	if kind == keyAuthorization {
		// An auth scheme: Bearer, Basic, token, SSWS, ApiKey, Api-Token, GenieKey, Splunk, …
		w := v
		for w < len(s) && w-v <= 12 && (isAlpha(s[w]) || s[w] == '-') {
			w++
		}
		if w > v+1 && w-v <= 12 && w+1 < len(s) && s[w] == ' ' && s[w+1] != ' ' {
			basic = equalFoldASCII(s[v:w], "basic")
			v = w + 1
		}
	}
	if q == 0 && op != "" && op[0] == ':' && v < len(s) && (s[v] == '|' || s[v] == '>') {
		v = blockScalarValue(s, v) // YAML: key: |, the value on the lines below
	}
	ve := v
	for ve < len(s) && ve-v <= maxEncoded && isValueByte(s[ve], q) {
		ve++
	}
	if ve-v > maxEncoded {
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
	if basic && c.on(detGenericSecret) && ve-v <= maxGenericSecret {
		// Basic credentials: the base64 of user:password.
		if text, ok := decodeBase64Text(s[v:ve]); ok {
			if colon := strings.IndexByte(text, ':'); colon > 0 && isPassword(text[colon+1:], text[:colon]) {
				c.emit(sc, detGenericSecret, v, ve)
			}
			return
		}
	}
	c.emitSecret(sc, kind, v, ve)
}

// blockScalarValue returns where the value of a YAML block scalar whose indicator ('|' or
// '>', then optional chomping and indentation marks) is at v begins: the first byte of the
// next line after its indentation, or v when the indicator is not alone on its line.
func blockScalarValue(s string, v int) int {
	k := v + 1
	for k < len(s) && k-v < 4 && (s[k] == '-' || s[k] == '+' || isDigit(s[k])) {
		k++
	}
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k < len(s) && s[k] == '\r' {
		k++
	}
	if k >= len(s) || s[k] != '\n' {
		return v
	}
	k++
	n := k
	for k < len(s) && k-n < 32 && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k == n || k >= len(s) || isSpace(s[k]) {
		return v
	}
	return k
}

// emitSecret records the value s[v:ve] of a key of kind when it is a secret. key is the key's
// name, "" when it is not known.
func (c *Classifier) emitSecret(sc *scanState, kind keyKind, v, ve int) {
	value := sc.s[v:ve]
	if kind == keyAWSSecret && c.on(detAWSSecretKey) && isAWSSecret(value) {
		c.emit(sc, detAWSSecretKey, v, ve)
		return
	}
	if !c.on(detGenericSecret) {
		c.encodedAt(sc, v, ve)
		return
	}
	switch {
	case len(value) <= maxGenericSecret && isGenericSecret(value) && (kind != keyClientID || !isWordlike(value)):
	case kind != keyBare && (isSecretUUID(value) || isSecretDigits(value)):
		// Identifiers that are secrets only by their key: a UUID or a number after
		// client_secret, api_key, x-api-key, a client id.
	case c.encodedAt(sc, v, ve):
		return
	default:
		return
	}
	c.emit(sc, detGenericSecret, v, ve)
}

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
func isSequence(v string) bool {
	up, down := 1, 1
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
		if up >= 6 || down >= 6 {
			return true
		}
	}
	return false
}

// encodedValue looks at the value at v of a key that does not name a secret: a base64 value
// (a Kubernetes Secret's data: DATABASE_URL, .dockerconfigjson, tls.key) is a secret when what
// it decodes to holds one.
func (c *Classifier) encodedValue(sc *scanState, v int) {
	s := sc.s
	if v < len(s) && (s[v] == '"' || s[v] == '\'') {
		v++
	}
	if v >= len(s) || !isBase64Byte(s[v]) {
		return
	}
	ve := v
	for ve < len(s) && ve-v <= maxEncoded && isBase64Byte(s[ve]) {
		ve++
	}
	if ve-v >= minEncoded && (ve == len(s) || !isValueByte(s[ve], 0) || s[ve] == '"' || s[ve] == '\'') {
		c.encodedAt(sc, v, ve)
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
	for k, w := range words[:n] {
		if equalFoldASCII(w, "csrf") || equalFoldASCII(w, "xsrf") {
			return keyNone // an anti-forgery token protects a form; it is not a credential
		}
		if wordIn(w, fixtureWords) || equalFoldASCII(w, "non") && k+1 < n && equalFoldASCII(words[k+1], "matching") {
			return keyNone
		}
	}
	if n > 1 && equalFoldASCII(last, "id") && (equalFoldASCII(words[n-2], "client") || equalFoldASCII(words[n-2], "consumer") || equalFoldASCII(words[n-2], "secret")) {
		return keyClientID
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
	if n == 1 && (equalFoldASCII(last, "key") || equalFoldASCII(last, "keys")) {
		return keyBare
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
