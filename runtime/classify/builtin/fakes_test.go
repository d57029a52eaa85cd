package builtin

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Fake, token-shaped strings built at test time. Nothing here is a real credential, and no
// token-shaped literal is stored in the repository, so secret scanners stay quiet.

const (
	alphaLower = "abcdefghijklmnopqrstuvwxyz"
	alphaUpper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	alphaDigit = "0123456789"
	alphaB62   = alphaUpper + alphaLower + alphaDigit
)

func fakeRand(seed int) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0x5eed)) }

// fakeDraw returns n characters drawn from alphabet with r, each one uniformly.
func fakeDraw(r *rand.Rand, alphabet string, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// fakeFrom returns n characters of alphabet, the first three forced to lower, upper, digit
// when the alphabet has them, so the class-mix checks pass.
func fakeFrom(alphabet string, n, seed int) string {
	r := fakeRand(seed)
	b := fakeDraw(r, alphabet, n)
	for i, cls := range []string{alphaLower, alphaUpper, alphaDigit} {
		var in []byte // the class's characters that the alphabet has
		for k := 0; k < len(cls); k++ {
			if strings.IndexByte(alphabet, cls[k]) >= 0 {
				in = append(in, cls[k])
			}
		}
		if i < n && len(in) > 0 {
			b[(i*7+3)%n] = in[r.IntN(len(in))]
		}
	}
	return string(b)
}

// fakeToken returns prefix and n base62 characters.
func fakeToken(prefix string, n, seed int) string {
	return withChecksum(prefix + fakeFrom(alphaB62, n, seed))
}

// fakeBase64 returns n characters of standard base64 without padding.
func fakeBase64(n, seed int) string { return fakeFrom(alphaB62+"+/", n, seed) }

// fakeHex returns n lower-case hex digits.
func fakeHex(n, seed int) string {
	s := fakeFrom("0123456789abcdef", n, seed)
	return s
}

// fakeJWT returns a structurally valid HS256 JWT with a random signature.
func fakeJWT(seed int) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	payload := enc.EncodeToString([]byte(fmt.Sprintf(`{"sub":"fake-%d","name":"Test User","iat":1700000000}`, seed)))
	return header + "." + payload + "." + fakeFrom(alphaB62+"-_", 43, seed)
}

// fakePaddedJWT returns a JWT whose segments keep their base64 '=' padding, as some
// libraries write them: the payload's length is chosen so that it needs padding, and the
// 32-byte signature always does.
func fakePaddedJWT(seed int) string {
	enc := base64.URLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	payload := fmt.Sprintf(`{"sub":"fake-%d","iat":1700000000}`, seed)
	for len(payload)%3 == 0 {
		payload = strings.Replace(payload, `{"sub"`, `{ "sub"`, 1)
	}
	sig := make([]byte, 32)
	r := fakeRand(seed)
	for i := range sig {
		sig[i] = byte(r.IntN(256))
	}
	return header + "." + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(sig)
}

// fakePGP returns an armored PGP key block of kind "PRIVATE" or "PUBLIC": header, blank
// line, body, CRC line and footer.
func fakePGP(kind string, seed int) string {
	var b strings.Builder
	b.WriteString("-----" + "BEGIN PGP " + kind + " KEY BLOCK-----\n\n")
	for i := 0; i < 4; i++ {
		b.WriteString(fakeBase64(64, seed*10+i) + "\n")
	}
	b.WriteString("=" + fakeBase64(4, seed) + "\n")
	b.WriteString("-----" + "END PGP " + kind + " KEY BLOCK-----")
	return b.String()
}

// fakeAWSKeyID returns a 20-character access key id with the given prefix.
func fakeAWSKeyID(prefix string, seed int) string {
	return prefix + fakeFrom(alphaUpper+"234567", 20-len(prefix), seed)
}

// pemHeader and pemFooter build PEM lines without storing them literally.
func pemHeader(label string) string { return "-----" + "BEGIN " + label + "PRIV" + "ATE KEY-----" }
func pemFooter(label string) string { return "-----" + "END " + label + "PRIV" + "ATE KEY-----" }

// fakePEM returns a private-key block of label ("RSA ", "EC ", "" …) with a random body.
func fakePEM(label string, seed int) string {
	var b strings.Builder
	b.WriteString(pemHeader(label) + "\n")
	for i := 0; i < 4; i++ {
		b.WriteString(fakeBase64(64, seed*10+i) + "\n")
	}
	b.WriteString(pemFooter(label))
	return b.String()
}

// fakeCard returns a Luhn-valid number of n digits starting with prefix.
func fakeCard(prefix string, n, seed int) string {
	r := fakeRand(seed)
	d := []byte(prefix)
	for len(d) < n-1 {
		d = append(d, byte('0'+r.IntN(10)))
	}
	for c := byte('0'); c <= '9'; c++ {
		if luhn(append(d, c)) {
			return string(append(d, c))
		}
	}
	panic("unreachable")
}

// fakeCardBadLuhn returns a number like fakeCard whose check digit is wrong.
func fakeCardBadLuhn(prefix string, n, seed int) string {
	s := []byte(fakeCard(prefix, n, seed))
	s[len(s)-1] = '0' + (s[len(s)-1]-'0'+1)%10
	return string(s)
}

// group4 writes digits in groups of four separated by sep.
func group4(d, sep string) string {
	var parts []string
	for len(d) > 4 {
		parts = append(parts, d[:4])
		d = d[4:]
	}
	return strings.Join(append(parts, d), sep)
}

// fakeIBAN returns an IBAN for country cc with the given BBAN and computed check digits.
func fakeIBAN(cc, bban string) string {
	r := 0
	for _, ch := range bban + cc + "00" {
		if ch >= '0' && ch <= '9' {
			r = (r*10 + int(ch-'0')) % 97
		} else {
			r = (r*100 + int(ch-'A') + 10) % 97
		}
	}
	return cc + fmt.Sprintf("%02d", 98-r) + bban
}

// fakeDigits returns n random digits.
func fakeDigits(n, seed int) string { return fakeFrom(alphaDigit, n, seed) }

// fakeSSN returns a valid-range SSN.
func fakeSSN(seed int) string {
	r := fakeRand(seed)
	area := 1 + r.IntN(665)
	return fmt.Sprintf("%03d-%02d-%04d", area, 1+r.IntN(99), 1+r.IntN(9999))
}

// itoa is strconv.Itoa, short.
