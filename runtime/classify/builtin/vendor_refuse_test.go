package builtin

import (
	"context"
	"hash/crc32"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// TestCRC32IEEE checks the hand-written CRC-32 against the standard library's.
func TestCRC32IEEE(t *testing.T) {
	for _, s := range []string{"", "a", "abc", fakeFrom(alphaB62, 30, 1), fakeFrom(alphaB62, 30, 2)} {
		if got, want := crc32IEEE(s), crc32.ChecksumIEEE([]byte(s)); got != want {
			t.Errorf("crc32IEEE(%q) = %08x, want %08x", s, got, want)
		}
	}
}

// TestVendorShapedEqualsInBody: a vendor prefix and a body with '=' inside it is not a near
// miss of the vendor's rule ('=' is base64 padding, not a letter of the rule's body), so
// generic-secret judges it under a secret's key; padding at the end of a body still counts.
func TestVendorShapedEqualsInBody(t *testing.T) {
	body := []byte(fakeFrom(alphaB62, 43, 7))
	body[10], body[25] = '=', '='
	v := "pscale_tkn_" + string(body)
	if vendorShaped(v) {
		t.Errorf("vendorShaped(%q) = true, want false ('=' inside the body)", v)
	}
	if !isGenericSecret(v) {
		t.Errorf("isGenericSecret(%q) = false, want true", v)
	}
	padded := "pscale_tkn_" + fakeFrom(alphaB62, 42, 8) + "="
	if !vendorShaped(padded) {
		t.Errorf("vendorShaped(%q) = false, want true (a body one longer than the rule's, '=' at its end)", padded)
	}
	text := "PLANETSCALE_TOKEN=" + v + "\n"
	res, err := secretsPack(t).Classify(context.Background(), classify.Input{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if !covered(res.Spans, len("PLANETSCALE_TOKEN="), len(text)-1) {
		t.Errorf("%q: value not redacted whole", text)
	}
}
