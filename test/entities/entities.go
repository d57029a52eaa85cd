// Package entities generates realistic personal data and credentials of every built-in
// detector kind, of varying length, for the zero-leak property tests of the engine and of
// the guard binary (issue 14). Values are built at run time from a seeded generator: no
// token-shaped literal is committed, and no value is real.
package entities

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
)

// Entity is one generated value and the built-in category a redaction labels it with.
type Entity struct {
	Kind     string
	Category string
	Value    string
	// Before is the text that must precede the value in a sentence for it to be one
	// (a key for an assignment, a cue for an SSN); After is what follows it.
	Before, After string
}

// Alphabets of Token.
const (
	Lower  = "abcdefghijklmnopqrstuvwxyz"
	Upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	Digits = "0123456789"
	alnum  = Lower + Upper + Digits
	b64url = alnum + "-_"
)

// Token returns n characters drawn from alphabet, with at least one lower-case letter, one
// upper-case letter and one digit when the alphabet has them (credential detectors require a
// mix, as real tokens have).
func Token(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	for k, class := range []string{Lower, Upper, Digits} {
		if n > 3 && strings.ContainsAny(alphabet, class) && !strings.ContainsAny(string(b), class) {
			b[k] = class[rng.IntN(len(class))]
		}
	}
	return string(b)
}

// Kinds lists the generators by name, in a fixed order.
var Kinds = []string{"email", "phone", "credit-card", "iban", "us-ssn", "ip-address",
	"aws-access-key", "github-token", "github-pat", "gitlab-token", "slack-token", "openai-key",
	"anthropic-key", "private-key", "jwt", "generic-secret", "generic-secret-one-case"}

// New returns an entity of the given kind (one of Kinds), with a length drawn from rng.
func New(rng *rand.Rand, kind string) Entity {
	switch kind {
	case "email":
		local := Token(rng, Lower+Digits, 2+rng.IntN(12))
		if rng.IntN(2) == 0 {
			local += "." + Token(rng, Lower, 2+rng.IntN(8))
		}
		domain := Token(rng, Lower, 3+rng.IntN(14))
		tld := []string{"com", "org", "io", "co.uk", "example", "de"}[rng.IntN(6)]
		return Entity{Kind: kind, Category: "email", Value: local + "@" + domain + "." + tld, Before: "mail ", After: " today"}
	case "phone":
		return Entity{Kind: kind, Category: "phone", Value: "+1 415 555 " + fmt.Sprintf("%04d", rng.IntN(10000)), Before: "call ", After: " now"}
	case "credit-card":
		return Entity{Kind: kind, Category: "credit-card", Value: card(rng), Before: "card ", After: " please"}
	case "iban":
		return Entity{Kind: kind, Category: "iban", Value: iban(rng), Before: "IBAN ", After: " thanks"}
	case "us-ssn":
		v := fmt.Sprintf("%03d-%02d-%04d", 1+rng.IntN(665), 1+rng.IntN(99), 1+rng.IntN(9999))
		if strings.HasPrefix(v, "666") {
			v = "123" + v[3:]
		}
		return Entity{Kind: kind, Category: "us-ssn", Value: v, Before: "SSN ", After: " on file"}
	case "ip-address":
		v := fmt.Sprintf("%d.%d.%d.%d", 11+rng.IntN(200), rng.IntN(256), rng.IntN(256), 1+rng.IntN(254))
		return Entity{Kind: kind, Category: "ip-address", Value: v, Before: "host ", After: " is up"}
	case "aws-access-key":
		return Entity{Kind: kind, Category: "aws-access-key", Value: "AKIA" + Token(rng, Upper+Digits, 16), Before: "id ", After: " in use"}
	case "github-token":
		body := Token(rng, alnum, 36)[:30]
		return Entity{Kind: kind, Category: "github-token", Value: "gh" + string("pousr"[rng.IntN(5)]) + "_" + body + GitHubChecksum(body), Before: "token ", After: " expires"}
	case "github-pat":
		return Entity{Kind: kind, Category: "github-token", Value: "github_pat_" + Token(rng, alnum, 22) + "_" + Token(rng, alnum, 59), Before: "token ", After: " expires"}
	case "gitlab-token":
		return Entity{Kind: kind, Category: "gitlab-token", Value: "glpat-" + Token(rng, alnum, 1) + Token(rng, alnum+"-_", 20+rng.IntN(30)), Before: "token ", After: " expires"}
	case "slack-token":
		v := "xox" + string("bpa"[rng.IntN(3)]) + "-" + Token(rng, Digits, 10+rng.IntN(3)) + "-" + Token(rng, Digits, 12) + "-" + Token(rng, alnum, 24)
		return Entity{Kind: kind, Category: "slack-token", Value: v, Before: "bot ", After: " revoked"}
	case "openai-key":
		prefix := []string{"sk-", "sk-proj-", "sk-svcacct-"}[rng.IntN(3)]
		return Entity{Kind: kind, Category: "openai-key", Value: prefix + Token(rng, b64url, 32+rng.IntN(130)), Before: "key ", After: " rotated"}
	case "anthropic-key":
		return Entity{Kind: kind, Category: "anthropic-key", Value: "sk-ant-api03-" + Token(rng, b64url, 32+rng.IntN(80)), Before: "key ", After: " rotated"}
	case "private-key":
		var body strings.Builder
		for range 1 + rng.IntN(8) {
			body.WriteString(Token(rng, alnum+"+/", 64))
			body.WriteByte('\n')
		}
		label := []string{"RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"}[rng.IntN(4)]
		v := "-----BEGIN " + label + "-----\n" + body.String() + "-----END " + label + "-----"
		return Entity{Kind: kind, Category: "private-key", Value: v, Before: "key:\n", After: "\nend"}
	case "jwt":
		header := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
		v := header + "." + "eyJ" + Token(rng, b64url, 20+rng.IntN(120)) + "." + Token(rng, b64url, 43)
		return Entity{Kind: kind, Category: "jwt", Value: v, Before: "bearer ", After: " sent"}
	case "generic-secret":
		key := []string{"password", "api_key", "client_secret", "token", "DB_PASSWORD"}[rng.IntN(5)]
		sep := []string{"=", ": ", " = ", "=\""}[rng.IntN(4)]
		after := " ok"
		if strings.HasSuffix(sep, "\"") {
			after = "\" ok"
		}
		return Entity{Kind: kind, Category: "generic-secret", Value: Token(rng, alnum, 1) + Token(rng, alnum+"!#%*", 11+rng.IntN(40)), Before: key + sep, After: after}
	case "generic-secret-one-case":
		// A generated key or password of one letter case and digits (a .env token, a
		// database password), 24 to 40 characters.
		alphabet := []string{Upper + Digits, Lower + Digits}[rng.IntN(2)]
		key := []string{"API_KEY", "DEPLOY_TOKEN", "password", "secret_key", "DB_PASSWORD"}[rng.IntN(5)]
		sep := []string{"=", ": ", " = "}[rng.IntN(3)]
		return Entity{Kind: kind, Category: "generic-secret", Value: Token(rng, alphabet, 24+rng.IntN(17)), Before: key + sep, After: " ok"}
	}
	panic("entities: unknown kind " + kind)
}

// card returns a Luhn-valid Visa number in groups of four.
func card(rng *rand.Rand) string {
	d := make([]int, 16)
	d[0] = 4
	for i := 1; i < 15; i++ {
		d[i] = rng.IntN(10)
	}
	sum := 0
	for i := 0; i < 15; i++ {
		v := d[14-i]
		if i%2 == 0 {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	d[15] = (10 - sum%10) % 10
	var b strings.Builder
	for i, v := range d {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteByte(byte('0' + v))
	}
	return b.String()
}

// iban returns a German IBAN with valid check digits, in groups of four.
func iban(rng *rand.Rand) string {
	bban := Token(rng, Digits, 18)
	// Check digits: 98 - (BBAN + "DE00" as digits, D=13, E=14) mod 97.
	num := bban + "131400"
	rem := 0
	for i := 0; i < len(num); i++ {
		rem = (rem*10 + int(num[i]-'0')) % 97
	}
	v := "DE" + fmt.Sprintf("%02d", 98-rem) + bban
	var b strings.Builder
	for i := 0; i < len(v); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v[i:min(i+4, len(v))])
	}
	return b.String()
}

// Prose returns n words of ordinary English that no built-in detector matches.
func Prose(rng *rand.Rand, n int) string {
	words := strings.Fields("the answer is that we should plant beans along the fence and water " +
		"them twice a week, while the lettuce goes into the shaded corner. Children can help with " +
		"the harvest; parents take turns. It works well!")
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString([]string{" ", " ", " ", "\n", "  "}[rng.IntN(5)])
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// Text is prose with entities planted at random word positions.
type Text struct {
	Text     string
	Entities []Entity
}

// Plant returns prose of about words words with the entities planted, each in its sentence
// (Before + Value + After), at random positions.
func Plant(rng *rand.Rand, words int, es ...Entity) Text {
	parts := []string{Prose(rng, words)}
	for _, e := range es {
		i := rng.IntN(len(parts) + 1)
		parts = append(parts[:i], append([]string{e.Before + e.Value + e.After}, parts[i:]...)...)
	}
	return Text{Text: strings.Join(parts, " "+Prose(rng, 1+rng.IntN(6))+" "), Entities: es}
}

// Leaked returns a piece of n bytes of one of the entities that out contains, or "".
func (t Text) Leaked(out string, n int) string {
	for _, e := range t.Entities {
		for i := 0; i+n <= len(e.Value); i++ {
			if strings.Contains(out, e.Value[i:i+n]) {
				return e.Value[i : i+n]
			}
		}
	}
	return ""
}

// Split cuts s into pieces of size bytes, moved back to character boundaries.
func Split(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && n > 0 && !isRuneStart(s[n]) {
			n--
		}
		if n == 0 {
			n = len(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// GitHubChecksum is the checksum a GitHub token (ghp_ and 36 characters) ends in: the
// CRC-32 (IEEE) of the 30 characters before it in six base62 digits. The built-in detector
// refuses a token whose last six characters are not its checksum, as GitHub never issues one.
func GitHubChecksum(body string) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	c := crc32.ChecksumIEEE([]byte(body))
	var d [6]byte
	for i := 5; i >= 0; i-- {
		d[i] = digits[c%62]
		c /= 62
	}
	return string(d[:])
}
