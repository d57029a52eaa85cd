package builtin

import (
	"encoding/base64"
	"strings"
)

// Secrets encoded in base64: the values of a Kubernetes Secret's data (a password, a
// connection string, a .dockerconfigjson, a tls.key), a kubeconfig's client-key-data, a JWT
// or a PEM key encoded once more. The value is decoded and the decoded text is scanned with
// the same detectors; when they find a secret in it, the whole encoded value is reported
// under that secret's category. Decoding happens only for a value that is assigned (or that
// begins like the base64 of a JWT or of a PEM block), is valid base64 and decodes to text.

// Encoded values.
const (
	minEncoded      = 24       // the base64 of 18 bytes: shorter values hold no token
	maxEncoded      = 16 << 10 // a PEM RSA key of 4096 bits is about 4.4 KiB in base64
	maxEncodedDepth = 2        // a .dockerconfigjson holds base64 in base64
)

// headPairs are the first two bytes of what trigHead stands for: vendor prefixes without a
// separator, the base64 of a JWT ("ZXlK", of "eyJ") and of a PEM header ("LS0tLS1CRUdJTi",
// of "-----BEGIN").
var headPairs = func() byteSet64k {
	p := vendors.headPairs
	p.add('Z', 'X')
	p.add('L', 'S')
	return p
}()

// headAt handles a capital at i that begins a vendor prefix or base64-encoded JWT or PEM.
func (c *Classifier) headAt(sc *scanState, i int) {
	s := sc.s
	if c.vendorHeadAt(sc, i) {
		return
	}
	if !tokenStart(s, i) || !strings.HasPrefix(s[i:], "ZXlK") && !strings.HasPrefix(s[i:], "LS0tLS1CRUdJTi") {
		return
	}
	e := i
	for e < len(s) && e-i <= maxEncoded && isBase64Byte(s[e]) {
		e++
	}
	if tokenEnd(s, e) {
		c.encodedAt(sc, i, e)
	}
}

// isBase64Byte reports a byte of standard or URL-safe base64, padding included.
func isBase64Byte(b byte) bool { return isB64URL(b) || b == '+' || b == '/' || b == '=' }

// encodedAt decodes s[a:e] and reports it when the decoded text holds a secret. It reports
// whether it did.
func (c *Classifier) encodedAt(sc *scanState, a, e int) bool {
	if sc.depth >= maxEncodedDepth || e-a < minEncoded || e-a > maxEncoded {
		return false
	}
	v := sc.s[a:e]
	for k := 0; k < len(v); k++ {
		if !isBase64Byte(v[k]) {
			return false
		}
	}
	if e == len(sc.s) {
		// A value still arriving (or cut by the end of the text): decode the whole quanta,
		// so that the secret inside (an unclosed PEM block, a JWT's header) is found once
		// its beginning is there, and the value spans to the end of the text, as a JWT or
		// a PEM block does.
		v = v[:len(v)-len(v)%4]
	}
	text, ok := decodeBase64Text(v)
	if !ok {
		return false
	}
	d, found := c.secretIn(text, sc.depth+1)
	if found {
		c.emit(sc, d, a, e) // e is the end of the text when v was cut to whole quanta
	}
	return found
}

// decodeBase64Text decodes v (standard or URL-safe, padded or not) when it decodes to text:
// UTF-8 without control characters other than white space.
func decodeBase64Text(v string) (string, bool) {
	enc := base64.StdEncoding
	if strings.ContainsAny(v, "-_") {
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(v, "=") && len(v)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	b, err := enc.DecodeString(v)
	if err != nil {
		return "", false
	}
	for _, x := range b {
		if x < ' ' && x != '\n' && x != '\r' && x != '\t' || x == 0x7f {
			return "", false
		}
	}
	return string(b), true
}

// secretIn scans text, decoded at the given depth, and returns the detector of the secret it
// holds: the first specific one, or generic-secret.
func (c *Classifier) secretIn(text string, depth int) (detector, bool) {
	inner := scanState{s: text, depth: depth}
	c.pass(&inner, 0, len(text))
	found := false
	for _, sp := range inner.spans {
		d := detector(sp.Category>>detShift) - 1
		if isSecretDetector(d) {
			return d, true
		}
		found = found || d == detGenericSecret
	}
	return detGenericSecret, found
}
