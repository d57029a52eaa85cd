package builtin

import (
	"encoding/base64"
	"strings"
)

// Vendor tokens whose shape is not a prefix and a body, found at a byte inside them: a '.'
// after the token's first part (Terraform Cloud, Airtable, Discord, Zoho), the "Q~" of an Entra ID
// client secret, the ':' of a Telegram bot token, an Asana token or a Ghost admin key, the
// '-' of a Mailchimp or Mailgun key.

// dotAt handles a '.' (or '~') at i that is followed by a token byte.
func (c *Classifier) dotAt(sc *scanState, i int) {
	s := sc.s
	if s[i] == '~' {
		if !c.openshiftTokenAt(sc, i) {
			c.entraSecretAt(sc, i)
		}
		return
	}
	if !c.on(detGenericSecret) || c.vendorSepAt(sc, i) {
		return
	}
	switch {
	case strings.HasPrefix(s[i+1:], "atlasv1."):
		// Terraform Cloud and Enterprise API tokens: 14 characters, ".atlasv1.", 60 or more.
		if a := i - 14; a >= 0 && tokenStart(s, a) && allIn(s[a:i], cB62) && !repeats(s[a:i], 6) {
			if e, ok := matchSegs(s, i+len(".atlasv1."), []seg{{"", cB62, 60, 80}}); ok && tokenEnd(s, e) && !repeats(s[i:e], 6) {
				c.emit(sc, detGenericSecret, a, e)
			}
		}
	case i >= 4 && s[i-4:i] == "1000" && tokenStart(s, i-4):
		// Zoho OAuth access and refresh tokens: "1000.", 32 hex digits, '.', 32 hex digits.
		if e, ok := matchSegs(s, i+1, []seg{{"", cHex, 32, 32}, {".", cHex, 32, 32}}); ok && tokenEnd(s, e) {
			c.emit(sc, detGenericSecret, i-4, e)
		}
	case i >= 17 && s[i-17:i-14] == "pat" && tokenStart(s, i-17) && allIn(s[i-14:i], cB62):
		// Airtable personal access tokens: "pat", a 14-character id, '.', 64 hex digits.
		if e, ok := matchSegs(s, i+1, hex64); ok && tokenEnd(s, e) {
			c.emit(sc, detGenericSecret, i-17, e)
		}
	default:
		if !c.vaultLegacyTokenAt(sc, i) {
			c.discordTokenAt(sc, i)
		}
	}
}

// vaultLegacyTokenAt matches a HashiCorp Vault service token of the form before Vault 1.10
// whose '.' is at i: "s." and 24 letters and digits. A two-letter prefix is no mark of a
// vendor, so the body must mix capitals, small letters and digits and not be words (a field
// of a variable "s" in code is not a token).
func (c *Classifier) vaultLegacyTokenAt(sc *scanState, i int) bool {
	s := sc.s
	if i == 0 || s[i-1] != 's' || !tokenStart(s, i-1) {
		return false
	}
	e, ok := matchSegs(s, i+1, []seg{{"", cB62, 24, 24}})
	if !ok || !tokenEnd(s, e) || e+1 < len(s) && s[e] == '.' && isAlnum(s[e+1]) {
		return false
	}
	if v := s[i+1 : e]; classMix(v) < 3 || repeats(v, 4) || tokenPlaceholder(v) || isWordlike(v) {
		return false
	}
	c.emit(sc, detGenericSecret, i-1, e)
	return true
}

// cdpKeyNameAt handles a '-' at i that may be the first dash of the first UUID of a Coinbase
// Developer Platform API key name, "organizations/<uuid>/apiKeys/<uuid>" (the name that goes
// with the key's private key; in JSON its slashes may be escaped, "\/"). It reports whether
// one matched.
func (c *Classifier) cdpKeyNameAt(sc *scanState, i int) bool {
	const org, keys = "organizations", "/apiKeys"
	s := sc.s
	if i < 9+len(org) || s[i-9] != '/' || !c.on(detGenericSecret) {
		return false
	}
	q := i - 9
	for q > 0 && s[q-1] == '\\' {
		q--
	}
	a := q - len(org)
	if a < 0 || s[a:q] != org || !tokenStart(s, a) {
		return false
	}
	e, ok := matchSegsLenient(s, i-8, uuidSegs)
	if !ok {
		return false
	}
	id1 := s[i-8 : e]
	for e < len(s) && s[e] == '\\' {
		e++
	}
	if !strings.HasPrefix(s[e:], keys) {
		return false
	}
	e += len(keys)
	for e < len(s) && s[e] == '\\' {
		e++
	}
	if e >= len(s) || s[e] != '/' {
		return false
	}
	b := e + 1
	e, ok = matchSegsLenient(s, b, uuidSegs)
	if !ok || !tokenEnd(s, e) {
		return false
	}
	for _, id := range []string{id1, s[b:e]} {
		if v := strings.ReplaceAll(id, "-", ""); repeats(v, 5) || isSequence(v) || classMix(v) < 2 {
			return false // a placeholder: 00000000-…, 12345678-…
		}
	}
	c.emit(sc, detGenericSecret, a, e)
	return true
}

// discordTokenAt matches a Discord bot token whose first '.' is at i: the base64 of the bot's
// numeric id, a 6-character timestamp and a 27- to 40-character HMAC, joined by dots.
func (c *Classifier) discordTokenAt(sc *scanState, i int) {
	s := sc.s
	a := i
	for a > 0 && i-a <= 28 && isAlnum(s[a-1]) {
		a--
	}
	if i-a < 23 || i-a > 28 || !tokenStart(s, a) || s[a] < 'M' || s[a] > 'O' {
		return
	}
	e, ok := matchSegs(s, i, []seg{{".", cB64URL, 6, 6}, {".", cB64URL, 27, 40}})
	if !ok || !tokenEnd(s, e) {
		return
	}
	id, err := base64.RawStdEncoding.DecodeString(s[a:i])
	if err != nil || len(id) < 17 || len(id) > 20 || !allIn(string(id), cDigit) {
		return
	}
	c.emit(sc, detGenericSecret, a, e)
}

// openshiftTokenAt matches an OpenShift OAuth access token whose '~' is at i: "sha256~" and
// 43 base64url characters (the form OpenShift 4 issues; `oc whoami -t` prints it).
func (c *Classifier) openshiftTokenAt(sc *scanState, i int) bool {
	s := sc.s
	a := i - len("sha256")
	if !c.on(detGenericSecret) || a < 0 || s[a:i] != "sha256" || !tokenStart(s, a) {
		return false
	}
	e, ok := matchSegs(s, i+1, []seg{{"", cB64URL, 43, 43}})
	if !ok || !tokenEnd(s, e) || classMix(s[i+1:e]) < 2 || repeats(s[i+1:e], 6) {
		return false
	}
	c.emit(sc, detGenericSecret, a, e)
	return true
}

// maxmindKeyAt matches a MaxMind license key whose first '_' is at i: six letters and
// digits, '_', 29 more, and the suffix "_mmk".
func (c *Classifier) maxmindKeyAt(sc *scanState, i int) bool {
	s := sc.s
	a := i - 6
	if !c.on(detGenericSecret) || a < 0 || i+34 > len(s) || !allIn(s[a:i], cB62) || !tokenStart(s, a) {
		return false
	}
	e, ok := matchSegs(s, i, []seg{{"_", cB62, 29, 29}, {"_mmk", cB62, 0, 0}})
	if !ok || !tokenEnd(s, e) || classMix(s[i+1:e-4]) < 2 {
		return false
	}
	c.emit(sc, detGenericSecret, a, e)
	return true
}

// convexDeployKeyAt matches a Convex deploy key whose ':' is at i: "prod:", "dev:" or
// "preview:", the deployment's name (words and a number joined by '-'), '|', and a token of
// 40 or more base64url characters.
func (c *Classifier) convexDeployKeyAt(sc *scanState, i int) bool {
	s := sc.s
	if i+1 >= len(s) || !isLower(s[i+1]) {
		return false // most colons are followed by a space, a quote or '='
	}
	var p string
	switch s[i-1] {
	case 'd':
		p = "prod"
	case 'v':
		p = "dev"
	case 'w':
		p = "preview"
	default:
		return false
	}
	a := i - len(p)
	if a < 0 || s[a:i] != p || !tokenStart(s, a) || !c.on(detGenericSecret) {
		return false
	}
	k, dashes := i+1, 0
	for k < len(s) && k-i <= 64 && (isLower(s[k]) || isDigit(s[k]) || s[k] == '-') {
		if s[k] == '-' {
			dashes++
		}
		k++
	}
	if dashes == 0 || k == i+1 || k >= len(s) || s[k] != '|' {
		return false
	}
	e := k + 1
	for e < len(s) && e-k <= maxGenericSecret && (isB64URL(s[e]) || s[e] == '=') {
		e++
	}
	if v := s[k+1 : e]; len(v) < 40 || !tokenEnd(s, e) || classMix(v) < 3 || repeats(v, 6) {
		return false
	}
	c.emit(sc, detGenericSecret, a, e)
	return true
}

// entraSecretAt matches a Microsoft Entra ID (Azure AD) client secret whose "Q~" ends at i:
// three characters, a digit, "Q~", and 31 to 34 characters, all of the secret's alphabet
// (letters, digits, '_', '-', '.' and '~'; the first three as much as the rest).
func (c *Classifier) entraSecretAt(sc *scanState, i int) {
	s := sc.s
	a := i - 5
	if !c.on(detGenericSecret) || a < 0 || s[i-1] != 'Q' || !isDigit(s[i-2]) || !tokenStart(s, a) {
		return
	}
	for k := a; k < i-2; k++ {
		if !isEntraByte(s[k]) {
			return
		}
	}
	if !isAlnum(s[a]) && a > 0 && isEntraByte(s[a-1]) {
		return // a symbol inside a longer run
	}
	e := i + 1
	for e < len(s) && e-i <= 35 && isEntraByte(s[e]) {
		e++
	}
	if e < len(s) && isEntraByte(s[e]) {
		return
	}
	for e > i+1 && s[e-1] == '.' {
		e-- // a sentence's full stop
	}
	if n := e - i - 1; n < 31 || n > 34 || classMix(s[i+1:e]) < 2 {
		return
	}
	c.emit(sc, detGenericSecret, a, e)
}

// isEntraByte reports a byte of an Entra ID client secret's alphabet.
func isEntraByte(b byte) bool { return isB64URL(b) || b == '.' || b == '~' }

// colonAt handles a ':' at i inside a token: a Telegram bot token (bot id, ':', "AA" and 33
// more), an Asana personal access token ("1/" or "2/" and digits, ':', 32 hex digits), a
// Ghost Admin API key (24 hex digits, ':', 64 hex digits), a Convex deploy key and a DeepL
// API Free key (a UUID and ":fx").
func (c *Classifier) colonAt(sc *scanState, i int) {
	s := sc.s
	if !c.on(detGenericSecret) || i == 0 || i+1 >= len(s) {
		return
	}
	if isLower(s[i-1]) && c.convexDeployKeyAt(sc, i) {
		return
	}
	if s[i+1] == 'f' && isHex(s[i-1]) && c.deeplKeyAt(sc, i) {
		return
	}
	if isDigit(s[i-1]) && strings.HasPrefix(s[i+1:], "AA") {
		a := i
		for a > 0 && i-a <= 10 && isDigit(s[a-1]) {
			a--
		}
		// The Bot API writes the token in the URL's path: https://api.telegram.org/bot<token>/.
		inPath := a >= 4 && s[a-4:a] == "/bot"
		if n := i - a; n >= 8 && n <= 10 && (tokenStart(s, a) || inPath) {
			if e, ok := matchSegs(s, i+3, []seg{{"", cB64URL, 33, 33}}); ok && tokenEnd(s, e) && !repeats(s[i+3:e], 6) {
				c.emit(sc, detGenericSecret, a, e)
				return
			}
		}
	}
	if isDigit(s[i-1]) {
		// Asana: 1/<user id>:<hex> or 2/<user id>/<app id>:<hex>.
		a := i
		for a > 0 && i-a <= 40 && (isDigit(s[a-1]) || s[a-1] == '/') {
			a--
		}
		if i-a >= 10 && (s[a] == '1' || s[a] == '2') && s[a+1] == '/' && tokenStart(s, a) {
			if e, ok := matchSegs(s, i+1, hex32); ok && tokenEnd(s, e) {
				c.emit(sc, detGenericSecret, a, e)
				return
			}
		}
	}
	if i >= 24 && allIn(s[i-24:i], cHex) && tokenStart(s, i-24) {
		if e, ok := matchSegs(s, i+1, hex64); ok && tokenEnd(s, e) && classMix(s[i+1:e]) == 2 {
			c.emit(sc, detGenericSecret, i-24, e)
		}
	}
}

// deeplKeyAt matches a DeepL API Free key whose ':' is at i: a UUID and ":fx" (DeepL's
// documentation: the keys of the Free API end in ":fx"; a Pro key is the UUID alone, which
// only a secret's key tells from an id).
func (c *Classifier) deeplKeyAt(sc *scanState, i int) bool {
	s := sc.s
	a := i - 36
	if a < 0 || i+3 > len(s) || s[i+2] != 'x' || !tokenStart(s, a) || !tokenEnd(s, i+3) {
		return false
	}
	if e, ok := matchSegs(s, a, uuidSegs); !ok || e != i || repeats(s[a:i], 6) || isSequence(strings.ReplaceAll(s[a:i], "-", "")) {
		return false
	}
	c.emit(sc, detGenericSecret, a, i+3)
	return true
}

// azdoPATLen is the length of an Azure DevOps personal access token of the format
// introduced in 2024, and azdoAt the offset of its "AZDO" marker (Azure DevOps docs: the
// new PATs are 84 characters long with "AZDO" at positions 76-80; the offset is read both
// ways, 0-based and 1-based).
const (
	azdoPATLen = 84
	azdoAt     = 76
)

// azdoPATAt matches an Azure DevOps personal access token whose "AZDO" marker begins at i:
// 84 base64url characters that begin and end a token, random before the marker.
func (c *Classifier) azdoPATAt(sc *scanState, i int) bool {
	s := sc.s
	if !c.on(detGenericSecret) || !strings.HasPrefix(s[i:], "AZDO") {
		return false
	}
	for _, at := range [...]int{azdoAt, azdoAt - 1} {
		a, e := i-at, i-at+azdoPATLen
		if a < 0 || e > len(s) || !tokenStart(s, a) || !tokenEnd(s, e) || !allIn(s[a:e], cB64URL) {
			continue
		}
		if v := s[a:i]; classMix(v) < 3 || repeats(v, 6) || tokenPlaceholder(v) {
			continue
		}
		c.emit(sc, detGenericSecret, a, e)
		return true
	}
	return false
}

// hexKeyDashAt handles a '-' at i after 32 hex digits: a Mailchimp API key (and "-us" and
// the data center's number) or a Mailgun API key (two more groups of 8 hex digits). It
// reports whether one matched.
func (c *Classifier) hexKeyDashAt(sc *scanState, i int) bool {
	s := sc.s
	a := i - 32
	if !c.on(detGenericSecret) || a < 0 || !isHex(s[i-1]) || !tokenStart(s, a) || !allIn(s[a:i], cHex) || classMix(s[a:i]) < 2 {
		return false
	}
	var e int
	var ok bool
	if strings.HasPrefix(s[i+1:], "us") {
		e, ok = matchSegs(s, i+3, []seg{{"", cDigit, 1, 2}})
	} else {
		e, ok = matchSegs(s, i+1, []seg{{"", cHex, 8, 8}, {"-", cHex, 8, 8}})
	}
	if ok && tokenEnd(s, e) {
		c.emit(sc, detGenericSecret, a, e)
		return true
	}
	return false
}

// allIn reports whether every byte of v is in class k.
func allIn(v string, k charClass) bool {
	for i := 0; i < len(v); i++ {
		if !k.has(v[i]) {
			return false
		}
	}
	return true
}

// tokenEnd reports whether a token may end at e: the byte there is not part of a word or of
// a longer token.
func tokenEnd(s string, e int) bool {
	return e == len(s) || !isB64URL(s[e])
}

// databricksAt is the pass's call at a digit that follows a letter (scan.go calls it by
// the name of the first format found so): the rules keyed by a prefix of small letters and
// digits (lowPrefixAt).
func (c *Classifier) databricksAt(sc *scanState, i int) { c.lowPrefixAt(sc, i) }

// lowPrefixAt handles a digit at i that follows a letter: when the run of letters before it
// begins a token with the first two bytes of a prefix of small letters and digits ("dapi" of
// a Databricks token, "cio" of a crates.io token, "oy2" of a NuGet key), the rules of that
// prefix are tried there. Such a prefix is found from the first digit after its letters —
// the digit of the prefix, or the first of the body — since a small letter begins most words.
func (c *Classifier) lowPrefixAt(sc *scanState, i int) {
	s := sc.s
	a := i
	for a > 0 && i-a <= 36 && isAlpha(s[a-1]) {
		a--
	}
	if a > 0 && i < 64 && isDigit(s[a-1]) && allIn(s[:i], cB62) && firstTriedDigit(s) == i {
		// The pass tries a digit after a letter from the fifth byte of the text on (scan.go),
		// so the digit of a prefix that begins the text ("oy2…") is not tried: the first digit
		// after a letter it tries in a run of letters and digits that begins the text looks
		// back to the text's start.
		a = 0
	}
	if i-a < 2 || !vendors.lowPairs.has(s[a], s[a+1]) || !tokenStart(s, a) {
		return
	}
	for _, x := range vendors.low.get(s[a], s[a+1]) {
		if c.vendorToken(sc, x.r, a) {
			return
		}
	}
}

// firstTriedDigit is the position of the first digit after a letter from the fifth byte
// of s on, or -1.
func firstTriedDigit(s string) int {
	for k := 4; k < len(s); k++ {
		if isDigit(s[k]) && isAlpha(s[k-1]) {
			return k
		}
	}
	return -1
}

// azureKey is one of Azure's identifiable keys: a random key into which the service writes a
// fixed signature at a fixed offset, so that the key can be told from random base64 (Microsoft
// security-utilities and the Azure services' docs on identifiable keys: a 64-byte key is 86
// base64 characters and "==", with the signature at offset 76; a 32-byte key 43 and "=", with
// it at 33; the 39-byte Search and Container Registry keys 52 characters, with it at 42; the
// Common Annotated Security Key of Azure AI services, Azure OpenAI and others 84 characters
// of base62, with "JQQJ9" at 52). The key is found at its signature: a capital of headBytes
// in it keys it (azureMarkerPairs), and the key around it must begin and end a token at the
// documented offsets.
type azureKey struct {
	kind   string
	marker string    // the signature, as its base64 reads
	h      int       // the offset in marker of the capital that keys it (headKey)
	at     int       // the signature's offset in the key
	n      int       // the key's length without its padding
	pad    int       // the '=' after it (the padding of a key in base64; at most so many)
	cls    charClass // the alphabet of the rest
}

var azureKeys = []azureKey{
	{"azure-ai-services-key", "JQQJ9", 1, 52, 84, 0, cB62},
	{"azure-ai-services-key", "JQQJ9", 1, 52, 86, 2, cB62},
	{"azure-search-key", "AzSe", 0, 42, 52, 0, cB62},
	{"azure-container-registry-key", "+ACR", 1, 42, 52, 0, cB64},
	{"azure-storage-key", "+ASt", 1, 76, 86, 2, cB64},
	{"azure-cosmosdb-key", "ACDb", 0, 76, 86, 2, cB64},
	{"azure-batch-key", "+BMC", 1, 76, 86, 2, cB64},
	{"azure-apim-key", "APIM", 0, 76, 86, 2, cB64},
	{"azure-ml-key", "+AMC", 1, 76, 86, 2, cB64},
	{"azure-function-key", "AzFu", 0, 44, 54, 2, cB64URL},
	{"azure-service-bus-key", "+ASb", 1, 33, 43, 1, cB64},
	{"azure-event-hub-key", "+AEh", 1, 33, 43, 1, cB64},
	{"azure-relay-key", "+ARm", 1, 33, 43, 1, cB64},
	{"azure-iot-key", "AIoT", 0, 33, 43, 1, cB64},
	{"azure-redis-key", "AzCa", 0, 33, 43, 1, cB62},
}

// azureMarkerPairs are the pairs that key azureKeys: the capital of headBytes in each
// signature and the byte after it.
var azureMarkerPairs = func() byteSet64k {
	var p byteSet64k
	for _, k := range azureKeys {
		if headKey(k.marker) != k.h {
			panic("azure key " + k.kind + ": its signature is keyed elsewhere")
		}
		p.add(k.marker[k.h], k.marker[k.h+1])
	}
	return p
}()

// azureKeyAt matches an Azure identifiable key whose signature holds the capital at i; it
// reports whether one matched.
func (c *Classifier) azureKeyAt(sc *scanState, i int) bool {
	s := sc.s
	if !c.on(detGenericSecret) {
		return false
	}
	for k := range azureKeys {
		z := &azureKeys[k]
		if z.marker[z.h] != s[i] || z.marker[z.h+1] != s[i+1] {
			continue
		}
		m := i - z.h // the signature's start
		a, e := m-z.at, m-z.at+z.n
		if a < 0 || e > len(s) || !strings.HasPrefix(s[m:], z.marker) || !tokenStart(s, a) || a > 0 && z.cls.has(s[a-1]) ||
			!allIn(s[a:m], z.cls) || !allIn(s[m+len(z.marker):e], z.cls) {
			continue // not the whole key: more of its alphabet before it ('+', '/' of base64)
		}
		p := e
		for p < len(s) && p-e < z.pad && s[p] == '=' {
			p++
		}
		if p < len(s) && (isB64URL(s[p]) || z.cls.has(s[p]) || s[p] == '=') {
			continue // longer than the key
		}
		if v := s[a:m]; classMix(v) < 2 || repeats(v, 6) || tokenPlaceholder(v) {
			continue // a placeholder around a signature
		}
		c.emit(sc, detGenericSecret, a, p)
		return true
	}
	return false
}
