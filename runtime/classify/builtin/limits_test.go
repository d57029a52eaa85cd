package builtin

import (
	"strings"
	"testing"
)

// The limits of the secret-token detectors, each pinned from both sides: a token at the very
// start of the text, the shortest and the longest body a detector accepts, and the placeholder
// rules at their thresholds. A detector that moved one of these limits by a byte would
// redact a placeholder or let a credential through.

func TestTokensAtTheStartOfTheTextMatch(t *testing.T) {
	c := allDetectors(t)
	tokens := []struct{ cat, tok string }{
		{"openai-key", "s" + "k-" + fakeFrom(alphaB62, 40, 21)},
		{"anthropic-key", "s" + "k-ant-" + fakeFrom(alphaB62, 40, 22)},
		{"gitlab-token", "gl" + "pat-" + fakeFrom(alphaB62, 20, 23)},
		{"slack-token", "xo" + "xb-" + fakeDigits(12, 24) + "-" + fakeDigits(13, 25) + "-" + fakeFrom(alphaB62, 24, 26)},
		{"slack-token", "xo" + "xe.xoxp-1-" + fakeFrom(alphaB62, 60, 27)},
		{"slack-token", "xa" + "pp-1-A" + fakeFrom(alphaUpper+alphaDigit, 10, 28) + "-" + fakeDigits(13, 29) + "-" + fakeHex(64, 30)},
		{"github-token", withChecksum("gh" + "p_" + fakeFrom(alphaB62, 36, 31))},
		{"github-token", "github" + "_pat_" + fakeFrom(alphaB62, 22, 32) + "_" + fakeFrom(alphaB62, 59, 33)},
		{"aws-access-key", fakeAWSKeyID("AK"+"IA", 34)},
		{"jwt", fakeJWT(35)},
		{"private-key", fakePEM("", 36)},
	}
	var cases []spanCase
	for _, tt := range tokens {
		cases = append(cases,
			spanCase{"a " + tt.cat + " that is the whole text matches", tt.tok, one(tt.cat, tt.tok)},
			spanCase{"a " + tt.cat + " at the start of a line of text matches", tt.tok + " is the value", one(tt.cat, tt.tok)},
		)
	}
	runSpanCases(t, c, cases)
}

// The texts around the tokens below name no credential ("see … here"): a random value that
// words name a key or a token is a generic-secret whatever its vendor's rule says (named.go),
// and what these cases pin is the token detectors' own limits.
func TestTokenBodyLengthLimits(t *testing.T) {
	c := allDetectors(t)
	openai := func(n int) string { return "s" + "k-" + fakeFrom(alphaB62, n, 41) }
	github := func(n int) string { return withChecksum("gh" + "p_" + fakeFrom(alphaB62, n, 42)) }
	pat := func(n int) string { return "github" + "_pat_" + fakeFrom(alphaB62, n, 46) }
	gitlab := func(n int) string { return "gl" + "pat-" + fakeFrom(alphaB62, n, 45) }
	slack := func(n int) string { return "xo" + "xb-" + fakeDigits(12, 43) + "-" + fakeFrom(alphaB62, n-13, 44) }
	runSpanCases(t, c, []spanCase{
		{"an OpenAI key with the shortest body matches", "see " + openai(32) + " here", one("openai-key", openai(32))},
		{"an OpenAI key one byte shorter is no key", "see " + openai(31) + " here", none},
		{"an OpenAI key of the longest length matches", "see " + openai(maxOpenAI-3) + " here", one("openai-key", openai(maxOpenAI-3))},
		{"an OpenAI key one byte longer is no key", "see " + openai(maxOpenAI-2) + " here", none},
		{"an OpenAI key of the longest length that runs on with a dash is no key", "see " + openai(maxOpenAI-3) + "- here", none},
		{"a GitLab token with the shortest body matches", "see " + gitlab(20) + " here", one("gitlab-token", gitlab(20))},
		{"a GitLab token one byte shorter is no token", "see " + gitlab(19) + " here", none},
		{"a fine-grained GitHub token with the shortest body matches", "see " + pat(70), one("github-token", pat(70))},
		{"a fine-grained GitHub token one byte shorter is no token", "see " + pat(69), none},
		{"a token glued to a word by a dash is part of something longer", "id my-" + github(36) + " here", none},
		{"a GitHub token with the shortest body matches", "see " + github(36), one("github-token", github(36))},
		{"a GitHub token one byte shorter is no token", "see " + github(35), none},
		{"a GitHub token one byte longer is no token", "see " + github(37), none},
		{"a GitHub token whose checksum is wrong is no token, nor any other secret", "GITHUB_TOKEN=" + github(36)[:37] + "xyz", none},
		{"a GitHub token with one character of its checksum changed is the token", "GITHUB_TOKEN=" + github(36)[:39] + "x",
			one("github-token", github(36)[:39]+"x")},
		{"a GitHub token with a character typed into it is the token", "see " + github(36)[:20] + "Q" + github(36)[20:],
			one("github-token", github(36)[:20]+"Q"+github(36)[20:])},
		{"a Slack token of the longest length matches", "see " + slack(maxSlack-5) + " here", one("slack-token", slack(maxSlack-5))},
		{"a Slack token one byte longer is no token", "see " + slack(maxSlack-4) + " here", none},
		{"a Slack token of the longest length that runs on with a dash is no token", "see " + slack(maxSlack-5) + "- here", none},
	})
}

func TestSlackTokenBodyRules(t *testing.T) {
	c := allDetectors(t)
	current := func(n int) string { return "xo" + "xb-1234567" + fakeFrom(alphaB62, n-7, 51) }
	legacy := func(team, rest int) string {
		return "xo" + "xp-" + strings.Repeat("1", 1) + fakeDigits(team-1, 52) + "-" + fakeHex(rest, 53)
	}
	withRun := func(n int) string {
		return "xo" + "xb-" + fakeDigits(12, 54) + "-" + "Ab1" + strings.Repeat("X", n) + fakeFrom(alphaB62, 12, 55)
	}
	runSpanCases(t, c, []spanCase{
		{"a body of 20 characters matches", "token " + current(20) + " here", one("slack-token", current(20))},
		{"a body of 19 characters without a team id is no token", "token " + current(19) + " here", none},
		{"a legacy body of 14 characters after an 8-digit team id matches", "token " + legacy(8, 5) + " here", one("slack-token", legacy(8, 5))},
		{"a legacy body of 13 characters is no token", "token " + legacy(8, 4) + " here", none},
		{"a 14-character body after a 7-digit team id is no token", "token " + legacy(7, 6) + " here", none},
		{"a body followed by '#' is a placeholder", "format " + current(20) + "####", none},
		{"a body of 14 digits alone is no token", "token " + "xo" + "xb-" + fakeDigits(14, 56) + " here", none},
		{"a prefix that ends the text is no token", "token " + "xo" + "xb-", none},
		{"a prefix before a letter is no token", "token " + "xo" + "xb-A1234567890123456789012", none},
		{"a run of five equal characters is a token's", "token " + withRun(5) + " here", one("slack-token", withRun(5))},
		{"a run of six equal characters is a placeholder", "token " + withRun(6) + " here", none},
	})
}

func TestAWSAccessKeyIDRules(t *testing.T) {
	c := allDetectors(t)
	a3t := "A3T" + "B" + fakeFrom(alphaUpper+alphaDigit, 16, 61)
	withRun := func(n int) string {
		return "AK" + "IA" + "Q7" + strings.Repeat("Z", n) + fakeFrom(alphaUpper+"234567", 14-n, 62)
	}
	runSpanCases(t, c, []spanCase{
		{"a key id with the A3T prefix matches", "id " + a3t + " here", one("aws-access-key", a3t)},
		{"a key id with lower-case letters is no key id", "id " + "AK" + "IA" + "q7zt4mwb2kd5xr3n" + " here", none},
		{"a key id with a run of five equal characters matches", "id " + withRun(5) + " here", one("aws-access-key", withRun(5))},
		{"a key id with a run of six equal characters is a placeholder", "id " + withRun(6) + " here", none},
	})
}

func TestJWTSegmentLimits(t *testing.T) {
	c := allDetectors(t)
	const header10, payload = "eyJhbGciOi", "eyJzdWIiOiIxIn0"
	sig := func(n int) string { return fakeFrom(alphaB62+"-_", n, 71) }
	jwt := func(h, p string, s int) string { return h + "." + p + "." + sig(s) }
	jwe := header10 + "J9." + payload + "." + sig(20) + "." + sig(24) + "." + sig(22)
	runSpanCases(t, c, []spanCase{
		{"a header of 10 characters matches", "t " + jwt(header10, payload, 20) + " ok", one("jwt", jwt(header10, payload, 20))},
		{"a header of 9 characters is no token", "t " + jwt(header10[:9], payload, 20) + " ok", none},
		{"a signature of 16 characters matches", "t " + jwt(header10, payload, 16) + " ok", one("jwt", jwt(header10, payload, 16))},
		{"a signature of 15 characters is no token", "t " + jwt(header10, payload, 15) + " ok", none},
		{"a payload of 4 characters matches", "t " + jwt(header10, "eyJ9", 20) + " ok", one("jwt", jwt(header10, "eyJ9", 20))},
		{"a payload of 3 characters is no token", "t " + jwt(header10, "eyJ", 20) + " ok", none},
		{"an unsecured token ends with its second dot", "t " + header10 + "." + payload + ". ok", one("jwt", header10+"."+payload+".")},
		{"a token run on from a dotted name is part of it", "t cache." + jwt(header10, payload, 20) + " ok", none},
		{"a token of five segments (JWE) matches", "t " + jwe + " ok", one("jwt", jwe)},
		{"a token of four segments is no token", "t " + jwt(header10, payload, 20) + "." + sig(20) + " ok", none},
	})
}

func TestPrivateKeyBodyLimit(t *testing.T) {
	c := allDetectors(t)
	block := func(n int) string { return pemHeader("") + "\n" + fakeBase64(n, 81) + "\n" + pemFooter("") }
	runSpanCases(t, c, []spanCase{
		{"a block with a body of 32 base64 characters is a key", "key:\n" + block(32) + "\n", one("private-key", block(32))},
		{"a block with a body of 31 base64 characters is a template", "key:\n" + block(31) + "\n", none},
	})
}

func TestAssignmentLimits(t *testing.T) {
	c := allDetectors(t)
	v := fakeToken("", 28, 91)
	blanks := func(n int) string { return strings.Repeat(" ", n) }
	runSpanCases(t, c, []spanCase{
		{"a gofmt-aligned const is a secret", "const (\n\tdbUser        = \"admin\"\n\tdbPassword    = \"" + v + "\"\n)", one("generic-secret", v)},
		{"a gofmt-aligned composite literal value is a secret", "cfg := Config{\n\tUser:     \"admin\",\n\tPassword: \"" + v + "\",\n\tToken:    \"" + v + "x\",\n}", func(s string) []span {
			return []span{at("generic-secret", s, v, 0), at("generic-secret", s, v+"x", 0)}
		}},
		{"a key 32 blanks before its operator is its key", "API_KEY" + blanks(maxAssignBlanks) + "= " + v, one("generic-secret", v)},
		{"a word 33 blanks before an operator is not its key", "API_KEY" + blanks(maxAssignBlanks+1) + "= " + v, none},
		{"a value 32 blanks after its operator is its value", "API_KEY =" + blanks(maxAssignBlanks) + v, one("generic-secret", v)},
		{"a word 33 blanks after an operator is not its value", "API_KEY =" + blanks(maxAssignBlanks+1) + v, none},
		{"a key name of 63 bytes is read", strings.Repeat("x", 55) + "_API_KEY=" + v, one("generic-secret", v)},
		{"a key name of 64 bytes or more is not read", strings.Repeat("x", 56) + "_API_KEY=" + v, none},
		{"a value of 256 characters is a secret", "API_KEY=" + fakeToken("", maxGenericSecret, 92) + " set", one("generic-secret", fakeToken("", maxGenericSecret, 92))},
		{"a value of 257 characters is too long for one", "API_KEY=" + fakeToken("", maxGenericSecret+1, 93) + " set", none},
		{"a full stop after a value is not the value's", "Set API_KEY=" + v + ". Then run it.", one("generic-secret", v)},
		{"a call that ends at the comma after its key has no value yet", `props.setProperty("db.password",`, none},
		{"an unquoted value with a dash after := is a literal", "API_TOKEN := Ab1-" + v, one("generic-secret", "Ab1-"+v)},
		{"an unquoted value that begins with a digit after := is a literal", "API_TOKEN := 9" + "Wue6" + v, one("generic-secret", "9Wue6"+v)},
		{"an unquoted identifier after := is code", "apiKey := " + "Wue6" + v, none},
		{"an unquoted value that begins with a dot is a literal", "API_TOKEN = ." + "Wue6" + v, one("generic-secret", ".Wue6"+v)},
		{"an unquoted dotted path of identifiers is code", "password = cfg1." + "Wue6" + v, none},
		{"an unquoted dotted path to a private field is code", "password = cfg._" + "Wue6" + v, none},
		{"a semicolon ends an unquoted value", "export API_KEY=" + v + "; echo ok", one("generic-secret", v)},
		{"an ampersand ends a value in a query string", "GET /v1/items?api_key=" + v + "&page=2", one("generic-secret", v)},
		{"a double quote ends an unquoted value", `args: ["serve", "API_KEY=` + v + `"]`, one("generic-secret", v)},
		{"a DEL byte ends a value", "API_KEY=" + v + "\x7fmore", one("generic-secret", v)},
		{"a quoted value runs to its quote", `API_KEY="` + v + `;x;y"`, one("generic-secret", v+";x;y")},
		{"underscores around a key name are not words", `__api_key__ = "` + v + `"`, one("generic-secret", v)},
		{"the words before the last of a dotted key count", "public.key = " + v, none},
		{"a dotted key is read whole", "db.password = " + v, one("generic-secret", v)},
	})
}

func TestEmailLimits(t *testing.T) {
	c := allDetectors(t)
	// An address of n bytes: a local part of 64 and labels of at most 63.
	address := func(n int) string {
		return strings.Repeat("l", 64) + "@" + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", n-64-1-63-1-63-1-4) + ".com"
	}
	runSpanCases(t, c, []spanCase{
		{"an address of 254 bytes matches", "to " + address(maxEmail) + " now", one("email", address(maxEmail))},
		{"an address of 255 bytes is too long", "to " + address(maxEmail+1) + " now", none},
		{"a domain label of 63 bytes matches", "to a@" + strings.Repeat("d", 63) + ".com now", one("email", "a@"+strings.Repeat("d", 63)+".com")},
		{"a domain label of 64 bytes is no domain", "to a@" + strings.Repeat("d", 64) + ".com now", none},
		{"a top-level domain of two letters matches", "to a@example.io now", one("email", "a@example.io")},
		{"a top-level domain of one letter is no domain", "to a@example.c now", none},
		{"an internationalized top-level domain matches", "to a@example.xn--p1ai now", one("email", "a@example.xn--p1ai")},
		{"a single label is no domain", "to a@localhost now", none},
		{"an address at x.com matches", "to me@x.com now", one("email", "me@x.com")},
		{"an address before a colon that ends the text matches", "reply to a@example.com:", one("email", "a@example.com")},
		{"an address before a colon and a space matches", "From a@example.com: hello", one("email", "a@example.com")},
		{"the user of a protocol-relative URL at the start of the text is no address", "//user@example.com/path", none},
		{"a URL's password far into the text is a secret, not an address", strings.Repeat("word ", 40) + "https://deploy:" + fakeToken("", 28, 94) + "@example.com/repo", one("generic-secret", fakeToken("", 28, 94))},
		{"a URL's password after a user with a tilde is a secret, not an address", "https://~deploy:" + fakeToken("", 28, 95) + "@example.com/repo", one("generic-secret", fakeToken("", 28, 95))},
		{"a protocol-relative URL's password at the start of the text is a secret", "//deploy:" + fakeToken("", 28, 96) + "@example.com/repo", one("generic-secret", fakeToken("", 28, 96))},
		{"an scp-like git remote is no address", "clone git@example.com:org/repo.git", none},
		{"a top-level domain of 63 letters matches", "to a@example." + strings.Repeat("t", 63) + " now", one("email", "a@example."+strings.Repeat("t", 63))},
		{"an address at a domain of digits matches", "to user@163.com now", one("email", "user@163.com")},
		{"an address at a domain ending in x matches", "to jane@inbox.com now", one("email", "jane@inbox.com")},
		{"a retina asset name is no address", "use icon@2x.png here", none},
		{"a local part that ends with a dot is no address", "to john.@example.com now", none},
		{"an at sign at the end of the text is no address", "mail john@", none},
		{"an apostrophe after the first letter of the text is the address's", "o'brien@example.ie wrote", one("email", "o'brien@example.ie")},
		{"an apostrophe after the first letter of a line is the address's", "x\no'brien@example.ie", one("email", "o'brien@example.ie")},
		{"dots before a local part are not the address's", "see ...john@example.com", one("email", "john@example.com")},
		// Ā is C4 80: its last byte is the lowest continuation byte, 0x80.
		{"a local part ending in a letter beyond ASCII is the address's", "write to Ā@example.lv", one("email", "Ā@example.lv")},
		{"a local part beginning with a letter beyond ASCII is the address's", "write to Ānis@example.lv", one("email", "Ānis@example.lv")},
	})
}

func TestIPv6Limits(t *testing.T) {
	c := allDetectors(t)
	ip := func(addr string) spanCase {
		return spanCase{"the address " + addr + " matches", "host " + addr + " up", one("ip-address", addr)}
	}
	no := func(addr, why string) spanCase {
		return spanCase{"the address " + addr + " " + why, "host " + addr + " up", none}
	}
	runSpanCases(t, c, []spanCase{
		ip("::1"),
		ip("2001:db8:85a3:0:0:8a2e:370:7334"),
		ip("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"), // the longest form, 45 bytes
		ip("1:2:3:4:5:6:1.2.3.4"),
		ip("1:2:3:4:5:6::7"),
		ip("de:ad:be:ef:00:11:22:333"),
		no("de:ad:be:ef:00:11:22:33", "is a MAC-like hex dump"),
		no("1:2:3:4:5:6:7:1.2.3.4", "has a group too many before its IPv4 tail"),
		no("1:2:3::4:5:6:7:8", "has eight groups and an ellipsis"),
		no("2001:db8:85a3:0:0:8a2e:370:73341", "has a group of five digits"),
		{"dots before an address are not the address's", "ping ..2001:db8::1 now", one("ip-address", "2001:db8::1")},
		{"a full stop after an address is not the address's", "ping 2001:db8::1.", one("ip-address", "2001:db8::1")},
		{"a colon after an address ends a clause", "link-local fe80::1: use it", one("ip-address", "fe80::1")},
	})
}

func TestIBANLimits(t *testing.T) {
	c := allDetectors(t)
	const grouped, contiguous = "DE89 3704 0044 0532 0130 00", "DE89370400440532013000"
	runSpanCases(t, c, []spanCase{
		{"an IBAN at the start of the text matches", grouped + " is mine", one("iban", grouped)},
		{"an IBAN that is the whole text matches", contiguous, one("iban", contiguous)},
		{"an IBAN run on by a letter is no IBAN", "pay " + contiguous + "X now", none},
		{"a country and check digits that end the text are no IBAN", "country DE89", none},
		{"a country and check digits before a space that ends the text are no IBAN", "country DE89 ", none},
	})
}

func TestSecretKeyNames(t *testing.T) {
	c := allDetectors(t)
	aws := fakeBase64(maxAWSSecretKey, 101)
	v := fakeToken("", 28, 102)
	runSpanCases(t, c, []spanCase{
		{"aws_secret_access_key names an AWS secret key", "aws_secret_access_key = " + aws, one("aws-secret-key", aws)},
		{"SecretAccessKey names an AWS secret key", `"SecretAccessKey": "` + aws + `"`, one("aws-secret-key", aws)},
		{"AWS_SECRET names an AWS secret key", "AWS_SECRET=" + aws, one("aws-secret-key", aws)},
		{"secret_key without aws or access is a generic secret", "secret_key = " + aws, one("generic-secret", aws)},
		{"an AWS secret key of 39 characters is a generic secret", "aws_secret_access_key = " + aws[:39], one("generic-secret", aws[:39])},
		{"an AWS secret key without upper-case letters is a generic secret", "aws_secret_access_key = " + strings.ToLower(aws), one("generic-secret", strings.ToLower(aws))},
		{"AWSSecretAccessKey names an AWS secret key", "AWSSecretAccessKey=" + aws, one("aws-secret-key", aws)},
		{"RSAPublicKey is split before Public and names no secret", "RSAPublicKey = " + v, none},
		{"an AWS secret key with a byte outside base64 is a generic secret", "aws_secret_access_key = " + aws[:20] + "-" + aws[21:], one("generic-secret", aws[:20]+"-"+aws[21:])},
		{"a value of 12 characters can be a secret", "API_KEY=" + fakeToken("", 12, 110) + " ok", one("generic-secret", fakeToken("", 12, 110))},
		{"a value of 11 characters is too short for one", "API_KEY=" + fakeToken("", 12, 110)[:11] + " ok", none},
		// 16 characters twice each: 4.0 bits per character, exactly the threshold at 32.
		{"a value at exactly the entropy threshold is a secret", "API_KEY=" + "Xq7Rv2Lm9Tz4Kp8W" + "W8pK4zT9mL2vR7qX" + " ok", one("generic-secret", "Xq7Rv2Lm9Tz4Kp8WW8pK4zT9mL2vR7qX")},
		{"a version with a build suffix is no secret", "API_KEY=" + "v2.14.0-rc.1+g3f9a7c2d81eQ" + " ok", none},
		{"a version with a capital V is no secret", "API_KEY=" + "V2.14.0-rc.1+g3f9a7c2d81eQ" + " ok", none},
		{"a dotted number is no secret", "API_KEY=10.20.30.40.50 ok", none},
		{"digits before a dash without a dot are no version", "API_KEY=" + "20240115-Xq7Rv2Lm9Tz4Kp8W" + " ok", one("generic-secret", "20240115-Xq7Rv2Lm9Tz4Kp8W")},
		{"a repetitive value is no secret", "API_KEY=" + "aB1aB1aB1aB1aB1a" + " ok", none},
		{"a repetitive value of letters beyond hex is no secret", "API_KEY=" + "xY7xY7xY7xY7xY7x" + " ok", none},
		{"a Windows variable is a reference", "API_KEY=%" + "Xq7Rv2Lm9Tz4Kp8W" + "% ok", none},
		{"a Python format field is a reference", `API_KEY="%(` + "Xq7Rv2Lm9Tz4Kp8W" + `)s"`, none},
		{"a value that begins with a percent sign can be a secret", "API_KEY=%" + "Xq7Rv2Lm9Tz4Kp8W" + " ok", one("generic-secret", "%Xq7Rv2Lm9Tz4Kp8W")},
		{"a version of one dot with a suffix is no secret", "API_KEY=" + "v2.1-Xq7Rv2Lm9Tz4Kp8W" + " ok", none},
		{"a number run on by letters is no version", "API_KEY=" + "2.1Xq7Rv2Lm9Tz4Kp8Wz" + " ok", one("generic-secret", "2.1Xq7Rv2Lm9Tz4Kp8Wz")},
		{"a number ending in a dot is no version", "API_KEY=" + "2.Xq7Rv2Lm9Tz4Kp8Wz" + " ok", one("generic-secret", "2.Xq7Rv2Lm9Tz4Kp8Wz")},
		{"a UUID that counts down is a placeholder, not a secret", "API_KEY=" + "f1e2d3c4-b5a6-9788-fedc-ba9876543210" + " ok", none},
		{"a UUID after a secret's key is a secret (issue 31)", "API_KEY=" + fakeUUID(113) + " ok", one("generic-secret", fakeUUID(113))},
		{"a UUID after a key that is not a secret's is an identifier", "REQUEST_ID=" + fakeUUID(114) + " ok", none},
		{"a UUID after key alone is an identifier", "key=" + fakeUUID(115) + " ok", none},
		{"a hex value of 20 digits is a secret", "API_KEY=" + fakeHex(20, 111) + " ok", one("generic-secret", fakeHex(20, 111))},
		{"a hex value of 19 digits is too short for one", "API_KEY=" + fakeHex(20, 111)[:19] + " ok", none},
		{"a long number after a secret's key is a secret (issue 31)", "API_KEY=" + fakeDigits(24, 112) + " ok", one("generic-secret", fakeDigits(24, 112))},
		{"a short number after a secret's key is not", "API_KEY=" + fakeDigits(10, 116) + " ok", none},
		{"a timestamp after a secret's key is not a secret", "API_TOKEN=1700000000000 ok", none},
		{"a hex value without digits is no secret, even in mixed case", "API_KEY=" + "aBEfCdaFbEcDAfBeCdFaEbDc" + " ok", none},
		{"a hex value without digits is a word", "API_KEY=" + "deadbeefcafebabefeedface" + " ok", none},
		{"APIKEY in capitals names a secret", "APIKEY=" + v, one("generic-secret", v)},
		{"ApiKEY names a secret", "ApiKEY=" + v, one("generic-secret", v)},
		{"Authorization skips the scheme of its value", "Authorization: Bearer " + v, one("generic-secret", v)},
		{"auth skips a Basic scheme", `auth = "Basic ` + v + `"`, one("generic-secret", v)},
		{"a page token is not a credential", "next_page_token=" + v, none},
		{"a key of many words is named by its last", "my_service_prod_eu_west_1_primary_db_admin_password=" + v, one("generic-secret", v)},
	})
}
