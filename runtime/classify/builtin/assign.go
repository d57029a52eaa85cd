package builtin

import "strings"

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
	keyToken         // an API key or token (api_key, X-Api-Key, access_token): issued, never typed
)

// secretKeyWords end a key name whose value is a credential: api_key, apiKey, X-Api-Key,
// token, access_token, client_secret, DB_PASSWORD, passwd, …
var secretKeyWords = []string{
	"key", "keys", "apikey", "token", "tokens", "secret", "secrets", "password", "passwd", "pwd",
	"pass", "passphrase", "credential", "credentials", "auth", "authorization", "sig",
	"psk", "pat", "session", "sessionid",
}

// secretKeySuffixes end a key written as one word whose last word is a secret's: PGPASSWORD,
// DBPASS, MYSQLPWD, APITOKEN.
var secretKeySuffixes = []string{"password", "passwd", "pwd", "token", "secret", "apikey"}

// notSecretKeyWords, before the last word, make a key name a non-credential: public_key,
// page_token, primaryKey, sort_key, cache_key, authenticity_token (Rails' anti-forgery
// token), …
var notSecretKeyWords = []string{
	"public", "pub", "page", "next", "prev", "continuation", "sort", "partition", "primary",
	"foreign", "cache", "idempotency", "lookup", "row", "object", "max", "num", "total",
	"hot", "map", "dict", "authenticity", "publishable", "site",
}

// fixtureWords anywhere in a key name make it a test fixture's or a placeholder's, not a
// credential's: nonMatchingToken, invalidToken, fakePassword, mockApiKey, dummy_secret.
var fixtureWords = []string{
	"fake", "dummy", "mock", "invalid", "nonmatching", "mismatched", "malformed", "bogus", "wrong",
	"bad", "sample", "example", "placeholder", "stub", "expired", "revoked",
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
		for w < len(s) && w-v <= 20 && (isAlpha(s[w]) || s[w] == '-') {
			w++
		}
		if w > v+1 && w-v <= 20 && w+1 < len(s) && s[w] == ' ' && s[w+1] != ' ' {
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

// emitSecret records the value s[v:ve] of a key of kind when it is a secret: a random value,
// a UUID or long number after a key that is not "key" alone, or base64 of a secret.
func (c *Classifier) emitSecret(sc *scanState, kind keyKind, v, ve int) {
	value := sc.s[v:ve]
	if kind == keyClientID && strings.IndexByte(value, '.') >= 0 {
		return // a client id qualified by a domain (….apps.googleusercontent.com) is public
	}
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
	// Base64 as a Secret's data holds it is padded to whole quanta and mixes classes; an
	// identifier or a word of that length rarely is both, and is not decoded.
	n := ve - v
	if n >= minEncoded && (n%4 == 0 || ve == len(s)) && classMix(s[v:ve]) >= 2 &&
		(ve == len(s) || !isValueByte(s[ve], 0) || s[ve] == '"' || s[ve] == '\'') {
		c.encodedAt(sc, v, ve)
	}
}

// hasSuffixIn reports whether w ends with one of the lower-case words, ignoring case.
func hasSuffixIn(w string, words []string) bool {
	for _, x := range words {
		if len(w) > len(x) && hasPrefixFold(w[len(w)-len(x):], x) {
			return true
		}
	}
	return false
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
		if equalFoldASCII(w, "public") {
			return keyNone // NEXT_PUBLIC_*, VITE_PUBLIC_*: shipped to every browser by design
		}
		if wordIn(w, fixtureWords) || equalFoldASCII(w, "non") && k+1 < n && equalFoldASCII(words[k+1], "matching") {
			return keyNone
		}
	}
	if n > 1 && equalFoldASCII(last, "id") && (equalFoldASCII(words[n-2], "client") || equalFoldASCII(words[n-2], "consumer") || equalFoldASCII(words[n-2], "secret")) {
		return keyClientID
	}
	if n > 1 && equalFoldASCII(last, "base") && equalFoldASCII(words[n-2], "key") {
		return keySecret // Rails' secret_key_base
	}
	if !wordIn(last, secretKeyWords) {
		if n == 1 && len(last) > 6 && hasSuffixIn(last, secretKeySuffixes) {
			return keySecret
		}
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
	if wordIn(last, tokenKeyWords) {
		return keyToken
	}
	return keySecret
}

// tokenKeyWords end the key of a value a service issued (api_key, access_token): unlike a
// password, such a value is drawn from one alphabet and never has a symbol typed into it.
var tokenKeyWords = []string{"key", "keys", "apikey", "token", "tokens"}

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
