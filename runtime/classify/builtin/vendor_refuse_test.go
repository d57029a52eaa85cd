package builtin

import (
	"context"
	"encoding/base64"
	"hash/crc32"
	"strings"
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

// TestPrefixedTokenOfUnknownVendor: a short prefix, a separator and a long random body is a
// secret without a key, its vendor known or not; ids of LLM and payment APIs, hashes, file
// and host names, identifiers and near misses of a known vendor's rule are not.
func TestPrefixedTokenOfUnknownVendor(t *testing.T) {
	c := secretsPack(t)
	found := func(text string) bool {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Spans) > 0
	}
	body := fakeFrom(alphaB62, 40, 11)
	for _, tok := range []string{
		"acme_" + body,
		"ACME-" + body,
		"zq_live_" + body,
		"acme_v2_" + fakeFrom(alphaB62+"-_", 48, 12),
		"acme-" + fakeFrom(alphaLower+alphaDigit, 40, 13),
	} {
		for _, text := range []string{"use " + tok + " to log in", `{"k": "` + tok + `"}`, "I found " + tok + "."} {
			if !found(text) {
				t.Errorf("%q: not found", text)
			}
		}
	}
	for _, text := range []string{
		"id chatcmpl-" + fakeFrom(alphaB62, 29, 1) + " done",
		"msg_01" + fakeFrom(alphaB62, 22, 2) + " and toolu_01" + fakeFrom(alphaB62, 22, 3),
		"resp_" + fakeHex(48, 4) + " req_" + fakeHex(32, 5),
		"cs_test_a1" + fakeFrom(alphaB62, 56, 6) + " is the session",
		`"integrity": "sha512-` + fakeFrom(alphaB62, 40, 7) + "+" + fakeFrom(alphaB62, 44, 8) + `=="`,
		"see build-" + fakeHex(40, 9) + " and user-" + fakeUUID(10),
		"open file_" + body + ".txt or acme-" + body + ".example.com",
		"x#acme_" + body + " and acme_" + body + "%41",
		"func test_parse_rfc3339_timestamp_with_offset_and_nanoseconds_2024() {}",
		"acme_" + fakeFrom(alphaLower, 40, 14) + " acme_" + fakeFrom(alphaB62, 20, 15),
		"npm_" + fakeFrom(alphaB62, 36, 16), // a wrong checksum: npm's rule refuses it
		"nom_" + fakeFrom(alphaB62, 36, 17), // one character off npm's prefix, npm's body
	} {
		if found(text) {
			t.Errorf("%q: flagged", text)
		}
	}
}

// TestJOSETokensWithoutAJSONPayload: a JWE (its second part is the encrypted key, random, or
// empty with alg "dir") and a JWS over a payload that is not JSON are tokens when the header
// is a JOSE header; a header without "alg", or a second part too short to tell from text,
// is not. Streamed, they are held back and redacted whole.
func TestJOSETokensWithoutAJSONPayload(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	iv, ct, tag := fakeFrom(alphaB62+"-_", 16, 1), fakeFrom(alphaB62+"-_", 120, 2), fakeFrom(alphaB62+"-_", 22, 3)
	jwe := enc([]byte(`{"alg":"RSA-OAEP","enc":"A256GCM"}`)) + "." + fakeFrom(alphaB62+"-_", 342, 4) + "." + iv + "." + ct + "." + tag
	dir := enc([]byte(`{"alg":"dir","enc":"A128GCM"}`)) + ".." + iv + "." + ct + "." + tag
	jws := enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte("a payload that is not JSON: 0123456789")) + "." + fakeFrom(alphaB62+"-_", 43, 5)
	notJOSE := enc([]byte(`{"typ":"HS256"}`)) + "." + enc([]byte("a payload that is not JSON: 0123456789")) + "." + fakeFrom(alphaB62+"-_", 43, 5)
	c := secretsPack(t)
	for _, tc := range []struct {
		tok  string
		want bool
	}{{jwe, true}, {dir, true}, {jws, true}, {notJOSE, false}} {
		text := "I found " + tc.tok + " in the log"
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		got := covered(res.Spans, len("I found "), len("I found ")+len(tc.tok))
		if got != tc.want {
			t.Errorf("%q: redacted whole %v, want %v (spans %v)", tc.tok, got, tc.want, res.Spans)
		}
		if tc.want {
			checkEverySplit(t, c, "token "+tc.tok+" ok")
			for delta := 1; delta <= 32; delta += 7 {
				checkDeltas(t, c, "token "+tc.tok+" ok", delta)
			}
		}
	}
}

// TestDatabricksToken: "dapi", 32 hex digits and an optional "-2" is found without a key, with
// every detector and with the secrets pack alone (where a digit triggers only after a
// letter); a body one short or long, a token inside a word, and hex with a stray letter are
// not.
func TestDatabricksToken(t *testing.T) {
	body := fakeHex(32, 5)
	tok := "da" + "pi" + body
	for name, c := range map[string]*Classifier{"secrets": secretsPack(t), "all": streamingClassifier(t)} {
		spans := func(text string) []classify.Span {
			res, err := c.Classify(context.Background(), classify.Input{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			return res.Spans
		}
		for _, v := range []string{tok, tok + "-2"} {
			for _, ctx := range []string{"%s", "see %s.", "[\"%s\"]", "host = x\ntoken = %s\n"} {
				text := strings.Replace(ctx, "%s", v, 1)
				a := strings.Index(text, v)
				if sp := spans(text); !covered(sp, a, a+len(v)) {
					t.Errorf("%s: %q not redacted whole: %v", name, text, sp)
				}
			}
		}
		stray := []byte(body)
		stray[9] = 'x'
		for _, v := range []string{tok[:len(tok)-1], tok + "a", "my" + tok, "da" + "pi" + string(stray)} {
			if sp := spans("see " + v + " here"); len(sp) > 0 {
				t.Errorf("%s: %q flagged: %v", name, v, sp)
			}
		}
	}
}

// TestTokenPlaceholders: a vendor token whose body holds a run in sequence or a word of
// documentation, a Terraform token of x's, a Slack token with words for its random part, and
// a token that is part of a file name are not secrets; the same tokens with a random body are.
func TestTokenPlaceholders(t *testing.T) {
	c := secretsPack(t)
	found := func(text string) bool {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Spans) > 0
	}
	for _, v := range []string{
		"AI" + "zaSy" + "abcdefghijklmnopqrstuvwxyz1234567",
		"AI" + "zaSy" + fakeFrom(alphaB62, 14, 3) + "EXAMPLE" + fakeFrom(alphaB62, 12, 4),
		"hv" + "s." + fakeFrom(alphaB62, 30, 5) + "Placeholder",
		strings.Repeat("x", 14) + ".atlas" + "v1." + strings.Repeat("x", 67),
		"xo" + "xe.xoxp-1-SlackAppConfigurationAccessTokenHere",
		"https://cdn.example.com/media/video_box.i" + "co-" + fakeFrom(alphaB62, 32, 6) + ".png",
	} {
		if found("see " + v + " here") {
			t.Errorf("%q flagged", v)
		}
	}
	for _, v := range []string{
		"AI" + "zaSy" + fakeFrom(alphaB62+"-_", 33, 7),
		"hv" + "s." + fakeFrom(alphaB62, 40, 8),
		fakeFrom(alphaB62, 14, 9) + ".atlas" + "v1." + fakeFrom(alphaB62, 67, 10),
		"xo" + "xb-" + fakeDigits(12, 11) + "-" + fakeDigits(13, 12) + "-" + fakeFrom(alphaB62, 24, 13),
		"i" + "co-" + fakeFrom(alphaB62, 32, 14),
	} {
		if !found("see " + v + " here") {
			t.Errorf("%q not flagged", v)
		}
	}
}

// TestRound4NearMisses (issue 42, round 4): a near miss of an exact format is refused under
// a secret's key (a Databricks token one character long, or with a symbol typed into it); a
// value its vendor's rule takes is a token even when the rule's trigger did not run (a
// FullStory key whose base64 body begins with '+'); the one-off spellings of a prefix that
// is a shared word ("master-", "secret_") are not refused, so a password that begins like
// one is still a secret.
func TestRound4NearMisses(t *testing.T) {
	c := secretsPack(t)
	spans := func(text string) []classify.Span {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return res.Spans
	}
	hex := fakeHex(32, 42)
	for _, v := range []string{
		"da" + "pi" + hex[:7] + "#" + hex[7:], // a symbol typed in
		"da" + "pi" + hex + "7",               // one too long
		"da" + "pi" + hex[:31],                // one too short
		"act_" + hex[:23],                     // a Smooch key id one too short
		"act_" + hex[:25],                     // one too long
	} {
		text := "curl -H \"Authorization: Bearer " + v + "\" https://example.invalid/api"
		if sp := spans(text); len(sp) > 0 {
			t.Errorf("%q: a near miss of Databricks' exact format was flagged: %v", text, sp)
		}
		if !vendorShaped(v) {
			t.Errorf("vendorShaped(%q) = false, want true", v)
		}
	}
	ok := "da" + "pi" + hex
	if vendorShaped(ok) {
		t.Errorf("vendorShaped(%q) = true for a token of the format", ok)
	}
	body := "+/" + fakeFrom(alphaB62, 90, 43)
	fs := "na1." + body
	if vendorShaped(fs) {
		t.Errorf("vendorShaped(%q) = true for a body the rule takes", fs)
	}
	text := "fullstory:\n  api_key: " + fs + "\n"
	a := strings.Index(text, fs)
	if !covered(spans(text), a, a+len(fs)) {
		t.Errorf("%q: a FullStory key whose body begins with '+' was not redacted", text)
	}
	for _, v := range []string{"masterK3yF0rPr0dQx9z7W", "secretK3yF0rPr0dQx9z7Wm4Rt8Yp2Lk5Jh3Gf6Ds1"} {
		if vendorShaped(v) {
			t.Errorf("vendorShaped(%q) = true: a one-off spelling of a shared word's prefix", v)
		}
		text := "PASSWORD=" + v + "\n"
		if !covered(spans(text), len("PASSWORD="), len(text)-1) {
			t.Errorf("%q: password not redacted", text)
		}
	}
}

// TestRound4Formats (issue 42, round 4): the formats added from the vendors' documentation
// are found whole, with and without a key; look-alikes are not.
func TestRound4Formats(t *testing.T) {
	c := secretsPack(t)
	spans := func(text string) []classify.Span {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return res.Spans
	}
	for _, v := range []string{
		"account-" + fakeFrom(alphaB62, 17, 1) + "a7Q",
		"master-" + fakeFrom(alphaB62, 17, 2) + "b8R",
		"s-s4t2ud-" + fakeHex(64, 3),
		"act_" + fakeHex(24, 14),
		"s-s4t2af-" + fakeHex(64, 4),
		"apiuser-" + fakeFrom(alphaLower+alphaDigit, 11, 5) + "7@apiconnector.com",
		"s." + fakeFrom(alphaB62, 21, 6) + "aZ9",
		"organizations/" + fakeUUID(7) + "/apiKeys/" + fakeUUID(8),
		`organizations\/` + fakeUUID(9) + `\/apiKeys\/` + fakeUUID(10),
		"https://hooks.zapier.com/hooks/catch/" + fakeFrom(alphaB62, 13, 11) + "aZ9",
		"t1.d." + fakeFrom(alphaB62+"-_", 86, 12),
	} {
		for _, text := range []string{"I found " + v + " in the log", "token = \"" + v + "\"\n"} {
			a := strings.Index(text, v)
			if !covered(spans(text), a, a+len(v)) {
				t.Errorf("%q: not redacted whole", text)
			}
		}
	}
	for _, text := range []string{
		"x := s.ReadFromSomethingLong1(y)",
		"see s.ABCDEFGHIJKLMNOPQRSTUVWX now",
		"organizations/00000000-0000-0000-0000-000000000000/apiKeys/00000000-0000-0000-0000-000000000000",
		"organizations/{org_id}/apiKeys/{key_id}",
		"https://hooks.zapier.com/hooks/catch/",
		"the account-registration-service handles it",
		"apiuser-" + fakeFrom(alphaLower+alphaDigit, 11, 13) + "@apiconnector.com",
	} {
		if sp := spans(text); len(sp) > 0 {
			t.Errorf("%q: flagged %v", text, sp)
		}
	}
}
