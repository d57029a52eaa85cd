package builtin

import "strings"

// Credentials named in words: a random token that the words just before it call a key, a
// token, a secret, a password or a credential, where no assignment operator ties the two
// together. This is how people write credentials into prompts and logs ("here is the
// Mailgun key you asked for: 3ax6…", "connecting to billing with credential q8Zr…",
// "Airbrake secret 2JnN…"), and how SDKs are handed one in code
// (`aha.NewClient("5fd1…")`).
//
// The cue is the pass's digit after a letter (a random token of letters and digits has one
// in its first few bytes; prose and code rarely do): the token around the digit is read
// once (namedNext), and looked at only when it stands after white space or opens a quoted
// string. Then the words before it, on the same line and in the same clause, must hold a
// credential's word ("key", "token", "secret", "password", "credential", or a key name such
// as api_key or accessToken, classified as assignments classify keys), not qualified as
// something else ("public key", "page token", "example key"), and no word between it and
// the token may say the token is about the credential rather than the credential itself
// ("key id", "token fingerprint", "secret name"). Or the quoted string is the first
// argument of a call whose name ends in "client" (NewClient, createClient). Last, the token
// must pass the value tests of generic-secret (isGenericSecret): length, entropy for its
// alphabet, no version, path, placeholder, words or vendor near miss; a UUID only when a
// word other than "key" names it, as for assigned values; and, named a key or a token, only
// the bytes of a token's alphabets (a password may hold any symbol). The span is the token.
//
// Left context: the words are read at most namedContext bytes before the token, which the
// hint of generic-secret (maxGenericSecret) covers; the token itself is a run without white
// space, which pending.go holds back while it may still grow.

const (
	// namedContext is how far before a token its naming words are read.
	namedContext = 64
	// namedWords is how many words before a token are read.
	namedWords = 6
)

// proseSecretWords name a credential in prose. Key names written as one identifier
// (api_key, accessToken, DB_PASSWORD) are classified by classifyKey instead.
var proseSecretWords = []string{
	"key", "keys", "apikey", "token", "tokens", "secret", "secrets", "password", "passwords",
	"passwd", "passphrase", "credential", "credentials",
}

// aboutCredentialWords, between a credential's word and a token, say that the token is
// something about the credential, or an example of its format: "key id 4AA4…", "token
// fingerprint 9F2A…", "secret name …", "password hash $2b$…", "tokens look like …".
var aboutCredentialWords = []string{
	"id", "ids", "fingerprint", "fingerprints", "hash", "hashes", "digest", "checksum",
	"sha", "sha1", "sha256", "md5", "name", "names", "file", "files", "path", "url", "length",
	"size", "type", "format", "version", "prefix", "suffix", "rotation", "expiry", "header",
	"field", "index", "slot", "count", "label", "alias", "commit", "ref", "request", "policy",
	"like", "eg", // "tokens look like …", "a key, e.g. …": an example of the format
}

// namedSecretAt handles a digit at i that follows a letter: when the token around it is
// named a credential (see the top of this file), it is recorded as a generic-secret, or an
// aws-secret-key when the words name AWS.
func (c *Classifier) namedSecretAt(sc *scanState, i int) {
	s := sc.s
	// The token is read as an unquoted assigned value is (isValueByte), so that a symbol
	// typed into a vendor's token leaves it whole, and the vendor's rule refuses it.
	a := i
	for a > 0 && i-a < maxGenericSecret && isValueByte(s[a-1], 0) {
		a--
	}
	e := i + 1
	for e < len(s) && e-a <= maxGenericSecret && isValueByte(s[e], 0) {
		e++
	}
	sc.namedNext = e
	if e-a > maxGenericSecret || a == 0 || e < len(s) && (s[e] == '(' || s[e] == '[') {
		return // too long, or a call or an index, as for assigned values (isExpression)
	}
	// A sentence's punctuation after the token is not part of it.
	for e > a && strings.IndexByte(".:!?", s[e-1]) >= 0 {
		e--
	}
	if e-a < minGenericValue {
		return
	}
	var kind keyKind
	switch b := s[a-1]; {
	case b == ' ' || b == '\t':
		kind = namedBy(s, a-1)
	case b == '"' || b == '\'' || b == '`':
		if e >= len(s) || s[e] != b {
			return
		}
		if a >= 2 && s[a-2] == '(' {
			kind = clientCall(s, a-2)
		} else if a >= 2 && (s[a-2] == ' ' || s[a-2] == '\t') {
			kind = namedBy(s, a-2)
		}
	}
	if kind == keyNone || !c.on(detGenericSecret) && kind != keyAWSSecret {
		return
	}
	v := s[a:e]
	if kind == keyAWSSecret && c.on(detAWSSecretKey) && isAWSSecret(v) {
		c.emit(sc, detAWSSecretKey, a, e)
		return
	}
	// A key or a token is issued from an alphabet, never typed: named so in prose, a value
	// with a symbol of no token's alphabet in it ("the key k7Qe#…") is not one. A password
	// or a secret may hold any symbol.
	if (kind == keyBare || kind == keyToken) && !allTokenBytes(v) {
		return
	}
	// As after an assigned key: a UUID is a credential when a word other than "key" alone
	// names it ("secret 3c2c…", "with credential 7117…"); after "key" it may be an id.
	if c.on(detGenericSecret) && (isGenericSecret(v) || kind != keyBare && isSecretUUID(v)) {
		c.emit(sc, detGenericSecret, a, e)
	}
}

// namedBy reads the words that end at or before p (white space or a ':' after the last of
// them) and returns the kind of the credential they name, or keyNone.
func namedBy(s string, p int) keyKind {
	lo := max(0, p-namedContext)
	k := p + 1
	// Blanks and one ':' may stand between the words and the token ("key you asked for: ").
	colon := false
	for k > lo && (s[k-1] == ' ' || s[k-1] == '\t' || s[k-1] == ':' && !colon) {
		colon = colon || s[k-1] == ':'
		k--
	}
	var between []string // words between the credential's word and the token, nearest first
	for range namedWords {
		we := k
		for k > lo && (isWordByte(s[k-1]) || s[k-1] == '-' || s[k-1] == '\'') {
			k--
		}
		if k == we || k == lo && lo > 0 {
			return keyNone // not a word, or one the window cuts
		}
		w := s[k:we]
		if kind := credentialWord(w); kind != keyNone {
			for _, b := range between {
				if wordIn(b, aboutCredentialWords) {
					return keyNone
				}
			}
			return qualified(s, lo, k, kind)
		}
		between = append(between, w)
		// Words of one clause are separated by single blanks.
		if k-1 < lo || s[k-1] != ' ' {
			return keyNone
		}
		k--
	}
	return keyNone
}

// credentialWord classifies one word of prose: a credential's word, or an identifier that
// names one (api_key, accessToken, GITHUB_TOKEN).
func credentialWord(w string) keyKind {
	if wordIn(w, proseSecretWords) {
		switch {
		case equalFoldASCII(w, "key") || equalFoldASCII(w, "keys"):
			return keyBare
		case wordIn(w, tokenKeyWords):
			return keyToken
		default:
			return keySecret
		}
	}
	for j := 1; j < len(w); j++ {
		if w[j] == '_' || w[j] == '-' || isUpper(w[j]) && isLower(w[j-1]) {
			switch kind := classifyKey(w); kind {
			case keyNone, keyClientID, keyAuthorization:
				return keyNone
			default:
				return kind
			}
		}
	}
	return keyNone
}

// keyPairWords, before "key", name a key pair, whose private half is never printed in a
// line: what follows is its id or fingerprint ("gpg: using RSA key ABAF11C6…", "host key
// 3f:9a…", "signing key 4AA4767B…").
var keyPairWords = []string{
	"public", "rsa", "dsa", "ecdsa", "ed25519", "gpg", "pgp", "ssh", "host", "signing",
	"verification", "verifying", "subkey",
}

// qualified looks at the word before a credential's word that ends at k: "public key",
// "page token", "RSA key" and "example key" do not name a secret, and "AWS secret key"
// names AWS's.
func qualified(s string, lo, k int, kind keyKind) keyKind {
	for n := 0; n < 2 && k-1 > lo && s[k-1] == ' '; n++ {
		we := k - 1
		k = we
		for k > lo && isWordByte(s[k-1]) {
			k--
		}
		w := s[k:we]
		if w == "" {
			break
		}
		if n == 0 && (wordIn(w, notSecretKeyWords) || wordIn(w, fixtureWords) || wordIn(w, keyPairWords) ||
			equalFoldASCII(w, "csrf") || equalFoldASCII(w, "xsrf")) {
			return keyNone
		}
		if equalFoldASCII(w, "aws") {
			return keyAWSSecret
		}
	}
	return kind
}

// clientCall reports whether the '(' at p opens a call whose name ends in "client"
// (stripe.NewClient, createClient, new_client), whose first argument is then a credential.
func clientCall(s string, p int) keyKind {
	k := p
	for k > 0 && p-k < 64 && isWordByte(s[k-1]) {
		k--
	}
	name := s[k:p]
	const w = "client"
	if len(name) < len(w) || !equalFoldASCII(name[len(name)-len(w):], w) {
		return keyNone
	}
	if len(name) > len(w) {
		// The word "client" itself: NewClient, new_client, not "Subclient" or "myclient".
		b := name[len(name)-len(w)-1]
		if name[len(name)-len(w)] != 'C' && b != '_' {
			return keyNone
		}
	}
	return keyToken
}

// allTokenBytes reports whether v holds only bytes of the alphabets tokens are written in:
// letters, digits, and the '+' '/' '=' of base64, the '-' '_' of base64url, '.' and '~'.
func allTokenBytes(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; !isB64URL(b) && b != '+' && b != '/' && b != '=' && b != '.' && b != '~' {
			return false
		}
	}
	return true
}
