package builtin

import (
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// TestRound5Formats (issue 42, round 5): every format added from the vendors' documentation
// (vendors_more.go, and DeepL's ":fx" keys in vendor_shapes.go) finds a synthetic token of
// its documented shape whole, in prose and under a key, and flags none of its near misses:
// the body one character short of what the vendor issues, or a body written by hand.
// Every value is built here from random draws; none is a real key.
func TestRound5Formats(t *testing.T) {
	c := secretsPack(t)
	spans := func(text string) []classify.Span {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return res.Spans
	}
	b62 := func(n, seed int) string { return fakeFrom(alphaB62, n, seed) }
	b64url := func(n, seed int) string { return fakeFrom(alphaB62+"-_", n, seed) }
	low := func(n, seed int) string { return fakeFrom(alphaLower+alphaDigit, n, seed) }
	up := func(n, seed int) string { return fakeFrom(alphaUpper+alphaDigit, n, seed) }
	cases := []struct {
		kind   string
		token  string // a token of the documented format
		marker string // for a shape without a rule: the part that is not random
	}{
		{kind: "voyage-key", token: "pa-" + b64url(43, 1)},
		{kind: "mem0-key", token: "m0-" + b62(40, 2)},
		{kind: "runpod-key", token: "rpa_" + up(44, 3)},
		{kind: "friendli-token", token: "flp_" + b62(40, 4)},
		{kind: "openpipe-key", token: "opk_" + b62(40, 5)},
		{kind: "daytona-key", token: "dtn_" + fakeHex(64, 6)},
		{kind: "kaggle-token", token: "KGAT_" + fakeHex(32, 7)},
		{kind: "chroma-key", token: "ck-" + b62(44, 8)},
		{kind: "cartesia-key", token: "sk_car_" + b62(32, 9)},
		{kind: "logfire-token", token: "pylf_v1_us_" + b62(44, 10)},
		{kind: "vercel-token", token: "vcp_" + b62(56, 11)},
		{kind: "vercel-token", token: "vck_" + b62(56, 12)},
		{kind: "gitlab-runner-registration-legacy", token: "GR1348941" + b64url(20, 13)},
		{kind: "teamcity-token", token: "eyJ0eXAiOiAiVENWMiJ9." + b64url(36, 14) + "." + b64url(48, 15)},
		{kind: "cockroachdb-cloud-key", token: "CCDB1_" + b62(22, 16) + "_" + b62(42, 17)},
		{kind: "appwrite-key", token: "standard_" + fakeHex(256, 18)},
		{kind: "dbt-cloud-token", token: "dbtc_" + b64url(48, 19)},
		{kind: "dbt-cloud-token", token: "dbtu_" + b64url(48, 20)},
		{kind: "codesandbox-token", token: "csb_v1_" + b64url(43, 21)},
		{kind: "socket-token", token: "sktsec_" + b64url(48, 22)},
		{kind: "stackhawk-key", token: "hawk." + b62(20, 23) + "." + b62(20, 24)},
		{kind: "gitbook-token", token: "gb_api_" + b62(40, 25)},
		{kind: "mintlify-key", token: "mint_" + b62(32, 26)},
		{kind: "mintlify-key", token: "mint_dsc_" + b62(32, 27)},
		{kind: "builderio-private-key", token: "bpk-" + fakeHex(32, 28)},
		{kind: "plane-token", token: "plane_api_" + fakeHex(32, 29)},
		{kind: "chromatic-project-token", token: "chpt_" + low(15, 30)},
		{kind: "unkey-root-key", token: "unkey_" + b62(24, 31)},
		{kind: "zuplo-key", token: "zpka_" + fakeHex(32, 32) + "_" + fakeHex(8, 33)},
		{kind: "permit-key", token: "permit_key_" + b62(64, 34)},
		{kind: "ory-session-token", token: "ory_st_" + b62(32, 35)},
		{kind: "ory-oauth2-token", token: "ory_at_" + b64url(43, 36) + "." + b64url(43, 37)},
		{kind: "ory-oauth2-token", token: "ory_rt_" + b64url(43, 38) + "." + b64url(43, 39)},
		{kind: "ory-oauth2-token", token: "ory_ac_" + b64url(43, 40) + "." + b64url(43, 41)},
		{kind: "netbird-pat", token: "nbp_" + b62(36, 42)},
		{kind: "exoscale-key", token: "EXO" + fakeHex(24, 43)},
		{kind: "backblaze-b2-key", token: "K001" + b62(27, 44)},
		{kind: "k3s-token", token: "K10" + fakeHex(64, 45) + "::server:" + fakeHex(32, 46)},
		{kind: "upcloud-token", token: "ucat_" + up(26, 47)},
		{kind: "elastic-cloud-key", token: "essu_" + fakeBase64(100, 48) + "=="},
		{kind: "imagekit-private-key", token: "private_" + fakeBase64(27, 49) + "="},
		{kind: "qstash-signing-key", token: "sig_" + b62(28, 50)},
		{kind: "mollie-access-token", token: "access_" + b62(40, 51)},
		{kind: "wompi-private-key", token: "prv_prod_" + b62(32, 52)},
		{kind: "wompi-private-key", token: "prv_test_" + b62(32, 53)},
		{kind: "close-api-key", token: "api_" + b62(22, 54) + "." + b62(22, 55)},
		{kind: "savvycal-token", token: "pt_secret_" + b62(40, 56)},
		{kind: "tatum-key", token: "t-" + fakeHex(24, 57) + "-" + fakeHex(32, 58)},
		{kind: "brave-search-key", token: "BSA" + b62(28, 59)},
		{kind: "riot-games-key", token: "RGAPI-" + fakeUUID(60)},
		{kind: "matrix-access-token", token: "syt_" + "YWxpY2U" + "_" + b62(20, 61) + "_" + b62(6, 62)},
		{kind: "matrix-access-token", token: "syr_" + "Ym9i" + "_" + b62(20, 63) + "_" + b62(6, 64)},
		{kind: "ntfy-token", token: "tk_" + b62(29, 65)},
		{kind: "pushbullet-token", token: "o." + b62(32, 66)},
		{kind: "lambdatest-key", token: "LT_" + b62(47, 67)},
		{kind: "checkly-key", token: "cu_" + fakeHex(32, 68)},
		{kind: "mongodb-atlas-service-account", token: "mdb_sa_id_" + fakeHex(24, 72)},
		{kind: "mongodb-atlas-service-account", token: "mdb_sa_sk_" + b62(40, 73)},
		{kind: "turbopuffer-key", token: "tpuf_" + b62(32, 74)},
		{kind: "lichess-token", token: "lip_" + b62(20, 75)},
		{kind: "statsig-console-key", token: "console-" + b62(43, 76)},
		{kind: "postman-collection-key", token: "PMAT-" + up(26, 83)},
		{kind: "metabase-key", token: "mb_" + fakeBase64(43, 84) + "="},
		{kind: "deepl-free-key", token: fakeUUID(69) + ":fx"},
		{kind: "azure-devops-pat", token: b62(76, 77) + "AZDO" + b62(4, 78)},
		{kind: "qstash-token", token: fakeShapedTokens(79)["qstash-token"], marker: "eyJVc2VySUQiOi"},
		{kind: "momento-api-key", token: fakeShapedTokens(80)["momento-api-key"], marker: "eyJlbmRwb2ludCI6"}, //nolint:misspell // a vendor's name
	}
	kinds := map[string]bool{}
	for _, tc := range cases {
		kinds[tc.kind] = true
		v := tc.token
		for _, text := range []string{"I found " + v + " in the log", "token = \"" + v + "\"\n", "export API_KEY=" + v + "\n"} {
			a := strings.Index(text, v)
			if !covered(spans(text), a, a+len(v)) {
				t.Errorf("%s: %q not redacted whole: %v", tc.kind, text, spans(text))
			}
		}
		// Near misses: the format's last run one character shorter than the vendor issues it,
		// in prose (nothing but the vendor's format could take it there), and the prefix with a
		// body written by hand, in prose and under a key.
		p, short := v[:len(v)-5], v[:9]+v[10:]
		if tc.marker != "" {
			p = tc.marker
		}
		if r := ruleOf(v); r != nil {
			if r.kind != tc.kind {
				t.Errorf("%q is taken by %s, want %s", v, r.kind, tc.kind)
			}
			p, short = r.prefix, fakeVendorToken(r, len(v), true)
		}
		for _, nm := range []string{
			"I found " + short + " in the log",
			"tokens look like " + p + strings.Repeat("X", len(v)-len(p)) + " in the docs",
			"token = \"" + p + strings.Repeat("x", len(v)-len(p)) + "\"\n",
		} {
			if sp := spans(nm); len(sp) > 0 {
				t.Errorf("%s: near miss %q flagged: %v", tc.kind, nm, sp)
			}
		}
	}
	kinds["der-private-key"] = true // TestDERPrivateKeys
	for _, r := range moreVendorRules {
		if !kinds[r.kind] {
			t.Errorf("rule %s (%s) has no case", r.kind, r.prefix)
		}
	}
	// A DeepL key's UUID alone, or with another suffix, is not a DeepL Free key; an
	// Azure DevOps PAT's marker elsewhere, or after a body written by hand, is not one.
	for _, text := range []string{
		"see " + b62(70, 81) + "AZDO" + b62(10, 82) + " here", // named "token", it is a generic-secret (named.go)
		"token " + strings.Repeat("X", 76) + "AZDO" + "XXXX" + " here",
		"AZDO is the marker of an Azure DevOps PAT",
		// Object ids of LLM and payment APIs are not credentials.
		`{"id": "chatcmpl-` + b62(29, 85) + `", "object": "chat.completion"}`,
		`{"id": "msg_01` + b62(22, 86) + `", "type": "message"}`,
		`{"id": "toolu_01` + b62(22, 87) + `", "name": "search"}`,
		`{"id": "pi_3` + b62(23, 88) + `", "object": "payment_intent"}`,
		`{"id": "call_` + b62(24, 89) + `", "type": "function"}`,
		`{"id": "user_2` + b62(26, 90) + `"}`,
		"request " + fakeUUID(70) + " done",
		"id " + fakeUUID(71) + ":fxy here",
		"id 00000000-0000-0000-0000-000000000000:fx here",
	} {
		if sp := spans(text); len(sp) > 0 {
			t.Errorf("%q flagged: %v", text, sp)
		}
	}
}

// ruleOf returns the vendor rule that takes v, or nil.
func ruleOf(v string) *vendorRule {
	for k := range vendorRules {
		r := &vendorRules[k]
		if strings.HasPrefix(v, r.prefix) && r.accepts(v[len(r.prefix):]) {
			return r
		}
	}
	return nil
}

// TestDERPrivateKeys (issue 42, round 5): a private key written as the base64 of its DER
// encoding, on one line without PEM armour, is a private key in every encoding Go writes;
// the public keys of the same pairs are not, nor a key's first bytes alone. The keys are
// generated here and used for nothing else.
func TestDERPrivateKeys(t *testing.T) {
	c := secretsPack(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a test key of the format, small for speed
	if err != nil {
		t.Fatal(err)
	}
	var keys []any
	keys = append(keys, rsaKey)
	for _, curve := range []elliptic.Curve{elliptic.P256(), elliptic.P384(), elliptic.P521()} {
		k, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, edKey)
	xKey, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, xKey)
	var private, public []string
	for _, k := range keys {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		private = append(private, base64.StdEncoding.EncodeToString(der))
		pub, err := x509.MarshalPKIXPublicKey(k.(interface{ Public() crypto.PublicKey }).Public())
		if err != nil {
			t.Fatal(err)
		}
		public = append(public, base64.StdEncoding.EncodeToString(pub))
		switch k := k.(type) {
		case *rsa.PrivateKey:
			private = append(private, base64.StdEncoding.EncodeToString(x509.MarshalPKCS1PrivateKey(k)))
		case *ecdsa.PrivateKey:
			der, err := x509.MarshalECPrivateKey(k)
			if err != nil {
				t.Fatal(err)
			}
			private = append(private, base64.StdEncoding.EncodeToString(der))
		}
	}
	classify1 := func(text string) []classify.Span {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return res.Spans
	}
	for _, v := range private {
		for _, text := range []string{"PRIVATE_KEY=" + v + "\n", `{"key": "` + v + `"}`, "here it is: " + v + " (do not share)"} {
			a := strings.Index(text, v)
			sp := classify1(text)
			if !covered(sp, a, a+len(v)) {
				t.Errorf("%.40q…: not redacted whole: %v", text, sp)
			}
			for _, s := range sp {
				if s.Start < a+len(v) && s.End > a && c.categories[s.Category] != "private-key" {
					t.Errorf("%.40q…: reported as %s, want private-key", text, c.categories[s.Category])
				}
			}
		}
	}
	for _, v := range public {
		if sp := classify1("here it is: " + v + " (share it)"); len(sp) > 0 {
			t.Errorf("public key %.40q…: flagged %v", v, sp)
		}
	}
	// Near misses: a key cut to its first bytes, and the prefix with a body written by hand.
	for _, v := range private {
		for _, text := range []string{"header " + v[:40] + " only", "like " + v[:32] + strings.Repeat("A", 600) + " in the docs"} {
			if sp := classify1(text); len(sp) > 0 {
				t.Errorf("%.50q…: flagged %v", text, sp)
			}
		}
	}
}
