package builtin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// The secrets pack's token detectors. Each is found from a rare byte of its fixed prefix ('-'
// of sk-, glpat-, xox?- and -----BEGIN, '_' of gh?_ and github_pat_, 'A' of AKIA, 'J' of eyJ)
// and then validated by hand: prefix, body alphabet and length, character-class mix, and the
// boundaries on both sides. The assignment detectors (aws-secret-key, generic-secret) are in
// assign.go.

// dashAt handles a '-' at i.
func (c *Classifier) dashAt(sc *scanState, i int) {
	s := sc.s
	if i+1 < len(s) && (i == 0 || isSpace(s[i-1]) || s[i-1] == '\'' || s[i-1] == '"') && (s[i+1] == '-' || isAlpha(s[i+1])) {
		c.flagAt(sc, i)
	}
	if i+1 < len(s) && s[i+1] == '-' {
		if c.on(detPrivateKey) {
			c.privateKeyAt(sc, i)
		}
		if i == 0 || !isAlnum(s[i-1]) {
			return
		}
		// The dash of a token's prefix whose body begins with '-' (sk--…, glpat--…).
	}
	switch {
	case i >= 2 && s[i-2] == 's' && s[i-1] == 'k' && tokenStart(s, i-2):
		if strings.HasPrefix(s[i:], "-ant-") {
			if c.on(detAnthropic) {
				c.prefixedToken(sc, detAnthropic, i-2, i+5, 32, maxAnthropic, isB64URL, 3)
			}
			return
		}
		if c.vendorSepAt(sc, i) {
			return // sk-or-v1-, and sk- with 32 hex digits
		}
		if c.on(detOpenAI) {
			body := i + 1
			for _, p := range [...]string{"proj-", "svcacct-", "admin-"} {
				if strings.HasPrefix(s[body:], p) {
					body += len(p)
					break
				}
			}
			c.prefixedToken(sc, detOpenAI, i-2, body, 32, maxOpenAI, isB64URL, 3)
		}
	case i >= 5 && s[i-1] == 't' && s[i-5:i] == "glpat" && tokenStart(s, i-5):
		if c.on(detGitLab) {
			isGitLab := func(b byte) bool { return isB64URL(b) || b == '.' }
			c.prefixedToken(sc, detGitLab, i-5, i+1, 20, maxGitLab, isGitLab, 2)
		}
	case i >= 4 && s[i-4] == 'x' && s[i-3] == 'o' && s[i-2] == 'x' && strings.IndexByte("bparesc", s[i-1]) >= 0:
		// xoxb- bot, xoxp- user, xoxa- and xoxr- app access and refresh, xoxs- workspace,
		// xoxe- rotating refresh tokens, xoxc- a browser client's session token; a rotating
		// access token is written xoxe.xoxp-.
		start := i - 4
		if i >= 9 && s[i-9:i-4] == "xoxe." {
			start = i - 9
		}
		if c.on(detSlack) && tokenStart(s, start) {
			c.slackToken(sc, start, i+1)
		}
	case i >= 4 && s[i-4:i] == "xapp" && tokenStart(s, i-4):
		if c.on(detSlack) {
			c.slackToken(sc, i-4, i+1) // app-level token: xapp-1-A…-…-…
		}
	default:
		if !c.vendorSepAt(sc, i) && !c.hexKeyDashAt(sc, i) && !c.cdpKeyNameAt(sc, i) {
			c.prefixedTokenAt(sc, i)
		}
	}
}

// slackToken matches a Slack token that begins at start and has its body from body on:
// digits first, then letters, digits and '-'. Current tokens have a body of 20 characters or
// more; legacy tokens with fewer groups are shorter, so 14 characters will do when they begin
// with a team id (eight digits or more) and another group follows. Documentation placeholders are not tokens: a body that ends with '-' or is
// followed by '#', '*', '<' or '{' ("xoxp-…-####"), or that repeats one character six times
// ("XXXXXXXX").
func (c *Classifier) slackToken(sc *scanState, start, body int) {
	s := sc.s
	if body >= len(s) || !isDigit(s[body]) {
		return
	}
	e := body
	for e < len(s) && e-start <= maxSlack && (isAlnum(s[e]) || s[e] == '-') {
		e++
	}
	if e-start > maxSlack || e < len(s) && (isWordByte(s[e]) || strings.IndexByte("#*<{", s[e]) >= 0) || s[e-1] == '-' {
		return
	}
	v := s[body:e]
	team := 0
	for team < len(v) && isDigit(v[team]) {
		team++
	}
	legacy := len(v) >= 14 && team >= 8 && team < len(v) && v[team] == '-'
	if len(v) < 20 && !legacy || repeats(v, 6) || longestSequence(v) >= 8 { // xoxp-1234567890-…
		return
	}
	if k := strings.LastIndexByte(v, '-'); len(v)-k-1 >= 16 && !isOneCaseDraw(v[k+1:]) && isWordlike(v[k+1:]) {
		return // words where the random part goes: xoxe.xoxp-1-SlackAppConfigurationTokenHere
	}
	c.emit(sc, detSlack, start, e)
}

// repeats reports whether v has a run of n ≥ 2 equal bytes.
func repeats(v string, n int) bool {
	run := 1
	for i := 1; i < len(v); i++ {
		if v[i] != v[i-1] {
			run = 1
		} else if run++; run >= n {
			return true
		}
	}
	return false
}

// underscoreAt handles a '_' at i: gh[pousr]_ and github_pat_ tokens, then the vendor rules
// keyed by a '_', a MaxMind license key and a token of an unknown vendor.
func (c *Classifier) underscoreAt(sc *scanState, i int) {
	s := sc.s
	switch {
	case i >= 3 && s[i-3] == 'g' && s[i-2] == 'h' && strings.IndexByte("pousr", s[i-1]) >= 0 && tokenStart(s, i-3):
		if c.on(detGitHub) {
			c.gitHubToken(sc, i-3, i+1)
		}
	case i >= 6 && s[i-6:i] == "github" && strings.HasPrefix(s[i:], "_pat_") && tokenStart(s, i-6):
		if c.on(detGitHub) {
			isPAT := func(b byte) bool { return isAlnum(b) || b == '_' }
			c.prefixedToken(sc, detGitHub, i-6, i+5, 70, maxGitHub, isPAT, 2)
		}
	default:
		if !c.vendorSepAt(sc, i) && !c.maxmindKeyAt(sc, i) {
			c.prefixedTokenAt(sc, i)
		}
	}
}

// gitHubToken matches a GitHub token of the documented format (ghp_, gho_, ghu_, ghs_,
// ghr_): 36 base62 characters after the prefix, the last six the checksum of the thirty
// before them (base62CRCOK), or one edit away from such a body (base62CRCNear: an issued
// token with a character changed, added or left out, which its reader can undo). A body of
// another length or further from its checksum is not GitHub's, and no other detector takes
// it (vendorShaped). A GitHub App's refresh token (ghr_) is longer, 76 characters, and is
// taken at 60 to 255 without a checksum test.
func (c *Classifier) gitHubToken(sc *scanState, start, body int) {
	s := sc.s
	e := body
	for e < len(s) && e-start <= maxGitHub && isAlnum(s[e]) {
		e++
	}
	if e < len(s) && isWordByte(s[e]) || e-start > maxGitHub {
		return
	}
	refresh := s[body-2] == 'r' && e-body >= 60
	if !refresh && !base62CRCNear(s[body:e]) {
		return
	}
	if classMix(s[body:e]) < 2 || repeats(s[body:e], 6) {
		return
	}
	c.emit(sc, detGitHub, start, e)
}

// tokenStart reports whether a token may begin at a: the byte before is not part of a word
// or of a longer token.
func tokenStart(s string, a int) bool {
	return a == 0 || !isWordByte(s[a-1]) && s[a-1] != '-'
}

// prefixedToken matches a token that begins at start with a fixed prefix and has its body
// from body on: body bytes accepted by in, at least minBody of them and at most maxLen bytes
// in all, then a byte that is not a word byte (or the end of the text). classes is how many of
// the character classes lower, upper and digit the body must mix, which keeps out
// placeholders and prose such as "sk-this-is-not-a-key".
func (c *Classifier) prefixedToken(sc *scanState, d detector, start, body, minBody, maxLen int, in func(byte) bool, classes int) {
	s := sc.s
	e := body
	for e < len(s) && e-start <= maxLen && in(s[e]) {
		e++
	}
	for e > body && s[e-1] == '.' {
		e-- // a sentence's full stop is not part of the token
	}
	if e-body < minBody || e-start > maxLen || e < len(s) && isWordByte(s[e]) {
		return
	}
	if classMix(s[body:e]) < classes || repeats(s[body:e], 6) {
		return // prose, or a placeholder (sk-or-v1-XXXXXXXX…)
	}
	c.emit(sc, d, start, e)
}

// classMix counts the classes lower, upper and digit that occur in v.
func classMix(v string) int {
	var l, u, d int
	for i := 0; i < len(v); i++ {
		switch b := v[i]; {
		case isLower(b):
			l = 1
		case isUpper(b):
			u = 1
		case isDigit(b):
			d = 1
		}
	}
	return l + u + d
}

// awsPrefixes are the four-letter prefixes of AWS access key ids (AKIA long-term, ASIA
// temporary, and the other unique-id prefixes AWS documents).
var awsPrefixes = [...]string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "APKA", "AROA"}

// awsKeyAt handles an 'A' at i: a 20-character access key id, upper-case letters and digits.
// Ids ending in EXAMPLE are the ones in AWS documentation (AKIAIOSFODNN7EXAMPLE): they are
// published, so they are not secrets, and redacting them would only garble documentation.
// Nor are placeholders that repeat a character six times (AKIAXXXXXXXXXXXXXXXX).
func (c *Classifier) awsKeyAt(sc *scanState, i int) {
	s := sc.s
	if i+maxAWSAccessKey > len(s) || i > 0 && isWordByte(s[i-1]) {
		return
	}
	id := s[i : i+maxAWSAccessKey]
	ok := id[1] == '3' && id[2] == 'T' && (isUpper(id[3]) || isDigit(id[3]))
	for _, p := range awsPrefixes {
		ok = ok || id[:4] == p
	}
	if !ok || i+maxAWSAccessKey < len(s) && isWordByte(s[i+maxAWSAccessKey]) {
		return
	}
	for k := 4; k < len(id); k++ {
		if !isUpper(id[k]) && !isDigit(id[k]) {
			return
		}
	}
	if strings.HasSuffix(id, "EXAMPLE") || repeats(id[4:], 6) {
		return
	}
	c.emit(sc, detAWSAccessKey, i, i+maxAWSAccessKey)
}

// jwtAt handles a 'J' at i, the J of "eyJ" (base64 of `{"`): three (or, for JWE, five)
// base64url segments joined by dots, each with or without '=' padding. The header must be at least 10 characters, the payload
// must also be a JSON object ("ey…" or "ew…") and the signature at least 16 characters; an
// unsecured token may end with the second dot. When the text ends inside the payload or the
// signature, the header is complete and the token is matched to the end of the text, so that
// a streamed token is held back from its header on.
func (c *Classifier) jwtAt(sc *scanState, i int) {
	s := sc.s
	start := i - 2
	if start < 0 || s[start] != 'e' || s[i-1] != 'y' ||
		start > 0 && (isB64URL(s[start-1]) || s[start-1] == '.' || s[start-1] == '/' || s[start-1] == '+') {
		return
	}
	var seg [5][2]int
	n, k := 0, start
	for n < len(seg) {
		a := k
		for k < len(s) && isB64URL(s[k]) {
			k++
		}
		// Some libraries keep base64's '=' padding (at most two) on a segment.
		for p := 0; p < 2 && k > a && k < len(s) && s[k] == '='; p++ {
			k++
		}
		seg[n] = [2]int{a, k}
		n++
		// A JWE's encrypted key is empty when the key is agreed directly (alg "dir"): header..iv.
		emptyKey := n == 1 && k+2 < len(s) && s[k] == '.' && s[k+1] == '.' && isB64URL(s[k+2])
		if k+1 >= len(s) || s[k] != '.' || !isB64URL(s[k+1]) && !emptyKey {
			break
		}
		k++
	}
	header := seg[0][1] - seg[0][0]
	if header < 10 {
		return
	}
	if n == 1 && c.base64JSONKey(sc, start, seg[0][1]) {
		return
	}
	// The payload is a JSON object too: "ey…" ({") or "ew…" ({ and a line break). A JWE's
	// second part is its encrypted key, and a JWS may sign any payload: those are taken when
	// the header is a JOSE header (joseHeader).
	payloadOK := func(min int) bool {
		p := s[seg[1][0]:seg[1][1]]
		if len(p) >= min && (len(p) == 0 || p[0] == 'e') && (len(p) < 2 || p[1] == 'y' || p[1] == 'w') {
			return true
		}
		// An encrypted key or a payload of 16 or more characters (a JWE's key is empty when
		// alg is "dir"); shorter second parts are not told from text ("….short.x").
		return (len(p) >= 16 || len(p) == 0 && n == 5) && header < maxJWTHeader && joseHeader(s[seg[0][0]:seg[0][1]])
	}
	atEnd := seg[n-1][1] == len(s) || seg[n-1][1] == len(s)-1 && s[len(s)-1] == '.'
	if atEnd && header < maxJWTHeader && (n == 1 && s[len(s)-1] == '.' || n == 2 && payloadOK(0) || n > 2 && payloadOK(4)) {
		c.emit(sc, detJWT, start, len(s)) // a streamed token still arriving
		return
	}
	if n < 2 || n == 4 || seg[n-1][1] < len(s) && (isWordByte(s[seg[n-1][1]]) || s[seg[n-1][1]] == '=') {
		return
	}
	if !payloadOK(4) {
		return
	}
	end := seg[n-1][1]
	switch {
	case n == 2 && end < len(s) && s[end] == '.': // unsecured: header.payload.
		end++
	case n == 2:
		return
	case seg[n-1][1]-seg[n-1][0] < 16:
		return
	}
	c.emit(sc, detJWT, start, end)
}

// joseHeader reports whether h, a token's first part, is the base64url of a JOSE header: a
// JSON object with an "alg" member (RFC 7515 § 4.1.1, RFC 7516 § 4.1.1). A header with a
// character typed wrong is seldom valid JSON.
func joseHeader(h string) bool {
	h = strings.TrimRight(h, "=")
	if len(h) > maxJWTHeader {
		return false
	}
	var src, buf [maxJWTHeader]byte // on the stack: no allocation on the scan's path
	copy(src[:], h)
	n, err := base64.RawURLEncoding.Decode(buf[:], src[:len(h)])
	if err != nil {
		return false
	}
	d := bytes.TrimSpace(buf[:n])
	return len(d) >= 2 && d[0] == '{' && bytes.Contains(d, []byte(`"alg"`)) && json.Valid(d)
}

// base64JSONKeys begin credentials that are a JSON object in base64, with no dots: a
// Grafana API key ({"k":"…","n":"…","id":…}), a Cloudflare Tunnel token
// ({"a":"<account>","t":"<tunnel>","s":"<secret>"}), as `cloudflared service install`
// takes it, a Neptune API token ({"api_address":"…","api_url":"…","api_key":"…"}), an
// API key of the momentohq.com cache ({"endpoint":"<cell>","api_key":"…"}) and an Upstash
// QStash token ({"UserID":"…","Password":"…"}).
var base64JSONKeys = [...]string{"eyJrIjoi", "eyJhIjoi", "eyJhcGlfYWRkcmVzcyI6", "eyJlbmRwb2ludCI6", "eyJVc2VySUQiOi"}

// base64JSONKey matches such a credential in s[start:end]: 60 or more base64 characters
// (with '=' padding) that end at a byte that is not a token's.
func (c *Classifier) base64JSONKey(sc *scanState, start, end int) bool {
	s := sc.s
	if !c.on(detGenericSecret) || end-start < 60 || end-start > maxEncoded {
		return false
	}
	for end < len(s) && (s[end] == '+' || s[end] == '/' || isB64URL(s[end])) {
		end++ // base64 rather than base64url
	}
	for p := 0; p < 2 && end < len(s) && s[end] == '='; p++ {
		end++
	}
	if !tokenEnd(s, end) || end+1 < len(s) && s[end] == '.' && isB64URL(s[end+1]) || repeats(s[start:end], 6) {
		return false // a file or host name after it, or a body written by hand (XXXXXX: no JSON text)
	}
	for _, p := range base64JSONKeys {
		if strings.HasPrefix(s[start:], p) {
			c.emit(sc, detGenericSecret, start, end)
			return true
		}
	}
	return false
}

// pemLabels are the private-key PEM labels, after "-----BEGIN ", and the armor label of an
// OpenPGP private key block.
var pemLabels = [...]string{
	"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY",
	"DSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK", "OpenVPN Static key V1",
}

// minPEMBody is the fewest base64 characters a block's body must have to hold a key. The
// smallest real key (an Ed25519 key in PKCS #8) has 64.
const minPEMBody = 32

// privateKeyAt handles the first '-' of "-----BEGIN <label>-----". The span runs to the end
// of the matching END line, or to the end of the text when the block is not closed yet. A
// closed block whose body has no key in it is a template, not a key: nothing between BEGIN
// and END, "...", "<your key here>", or one character repeated.
func (c *Classifier) privateKeyAt(sc *scanState, i int) {
	const begin, dashes = "-----BEGIN ", "-----"
	s := sc.s
	if !strings.HasPrefix(s[i:], begin) || i > 0 && s[i-1] == '-' {
		return
	}
	h := i + len(begin)
	for _, label := range pemLabels {
		if !strings.HasPrefix(s[h:], label) || !strings.HasPrefix(s[h+len(label):], dashes) {
			continue
		}
		body := h + len(label) + len(dashes)
		end := len(s)
		// The END line: "-----END " + label + "-----".
		for k := body; k < len(s); {
			j := strings.Index(s[k:], "-----END ")
			if j < 0 {
				break
			}
			e := k + j + len("-----END ")
			if strings.HasPrefix(s[e:], label) && strings.HasPrefix(s[e+len(label):], dashes) {
				end = e + len(label) + len(dashes)
				if !pemBodyHoldsKey(s[body : k+j]) {
					return
				}
				break
			}
			k = e
		}
		c.emit(sc, detPrivateKey, i, end)
		return
	}
}

// pemBodyHoldsKey reports whether a block's body has at least minPEMBody base64 characters,
// and not one character repeated. Line breaks written as \n (PEM in JSON) are not counted.
func pemBodyHoldsKey(body string) bool {
	body = strings.ReplaceAll(body, `\n`, "\n")
	n := 0
	var first byte
	same := true
	for i := 0; i < len(body); i++ {
		b := body[i]
		if isAlnum(b) || b == '+' || b == '/' {
			if n == 0 {
				first = b
			}
			same = same && b == first
			n++
		}
	}
	return n >= minPEMBody && !same
}
