package builtin

import (
	"hash/crc32"
	"strings"
)

// Vendor tokens: credentials whose vendor documents a fixed prefix and a body of known
// alphabet and length (shpat_ and 32 hex digits, dop_v1_ and 64, NRAK- and 27 capitals and
// digits, …). They are one table, vendorRules, so that adding a vendor costs a row and no
// time on text that holds none of its prefixes: a rule is found from the trigger byte of its
// prefix through a small index keyed by two bytes (see vendorIndex), never by trying the
// rules one after another. The sources of every row are listed in README.md.

// charClass is the alphabet of a run of a token's body.
type charClass uint8

const (
	cHex    charClass = iota // 0-9 a-f
	cHexAny                  // 0-9 a-f A-F
	cDigit                   // 0-9
	cB62                     // A-Z a-z 0-9
	cB64URL                  // base64url: A-Z a-z 0-9 - _
	cB64                     // base64: A-Z a-z 0-9 + /
	cUpNum                   // A-Z 0-9
	cLowNum                  // a-z 0-9
	cBech32                  // the upper-case bech32 alphabet (age keys)
	cGitLab                  // base64url and '.' (GitLab's routable tokens)
	cB62Pct                  // A-Z a-z 0-9 and '%' (URL-encoded tokens: X's bearer tokens)
)

func (k charClass) has(b byte) bool {
	switch k {
	case cHex:
		return isDigit(b) || b >= 'a' && b <= 'f'
	case cHexAny:
		return isHex(b)
	case cDigit:
		return isDigit(b)
	case cB62:
		return isAlnum(b)
	case cB64URL:
		return isB64URL(b)
	case cB64:
		return isAlnum(b) || b == '+' || b == '/'
	case cUpNum:
		return isUpper(b) || isDigit(b)
	case cLowNum:
		return isLower(b) || isDigit(b)
	case cBech32:
		return isUpper(b) && b != 'B' && b != 'I' && b != 'O' || isDigit(b) && b != '1'
	case cGitLab:
		return isB64URL(b) || b == '.'
	case cB62Pct:
		return isAlnum(b) || b == '%'
	}
	return false
}

// lenient is the alphabet a vendor rule accepts for a run of class k. A vendor's prefix
// is what makes its token distinctive; documentation often describes the body loosely ("32
// random characters"), and issued tokens and the examples written from them mix cases, so a
// run documented as hex, or as letters of one case and digits, is accepted in letters and
// digits of either case. The length of the run is kept: it, a character outside every
// token alphabet, a failed checksum or a body that is not random refuse a value.
func (k charClass) lenient() charClass {
	switch k {
	case cHex, cHexAny, cLowNum, cUpNum:
		return cB62
	}
	return k
}

// seg is one run of a token's body: the literal lit, then min to max bytes of cls.
type seg struct {
	lit      string
	cls      charClass
	min, max int
}

// uuidSegs is a UUID in either case.
var uuidSegs = []seg{{"", cHexAny, 8, 8}, {"-", cHexAny, 4, 4}, {"-", cHexAny, 4, 4}, {"-", cHexAny, 4, 4}, {"-", cHexAny, 12, 12}}

// vendorRule is a vendor's token format.
type vendorRule struct {
	kind   string // the name README.md lists it under
	prefix string
	segs   []seg
	det    detector // the category it is reported under
	// pad accepts up to two '=' after the last run (base64 padding).
	pad bool
	// check, when set, is the vendor's own test of the body (a checksum): a body that fails
	// it is not a token of the vendor, nor any other secret (see vendorShaped).
	check func(body string) bool
}

// Body shapes shared by several vendors.
var (
	hex32  = []seg{{"", cHex, 32, 32}}
	hex40  = []seg{{"", cHex, 40, 40}}
	hex64  = []seg{{"", cHex, 64, 64}}
	gitlab = []seg{{"", cGitLab, 20, 255}}
)

// vendorRuleSets are the vendor token formats: the rules below, the long tail of
// vendors_tail.go and the formats of vendors_more.go and vendors_round6.go, each set where
// its literal put it (nothing is copied at start).
var vendorRuleSets = [...][]vendorRule{coreVendorRules, tailVendorRules, moreVendorRules, round6VendorRules}

// eachVendorRule calls f with every rule of vendorRuleSets, in order, until f returns false.
func eachVendorRule(f func(r *vendorRule) bool) {
	for _, set := range vendorRuleSets {
		for k := range set {
			if !f(&set[k]) {
				return
			}
		}
	}
}

// coreVendorRules are the vendor token formats of issue 31, by family. Every rule's prefix is matched
// case-sensitively and must begin a token (the byte before it is not part of a word or of a
// longer token); its body must end at a byte that is not a word byte.
var coreVendorRules = []vendorRule{
	// Developer platforms.
	{kind: "gitlab-deploy-token", prefix: "gldt-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-runner-token", prefix: "glrt-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-runner-registration-token", prefix: "glrtr-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-trigger-token", prefix: "glptt-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-feed-token", prefix: "glft-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-incoming-mail-token", prefix: "glimt-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-job-token", prefix: "glcbt-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-scim-token", prefix: "glsoat-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-oauth-secret", prefix: "gloas-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-agent-token", prefix: "glagent-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-feature-flag-token", prefix: "glffct-", segs: gitlab, det: detGitLab},
	{kind: "gitlab-workspace-token", prefix: "glwt-", segs: gitlab, det: detGitLab},
	{kind: "npm-token", prefix: "npm_", segs: []seg{{"", cB62, 35, 37}}, det: detGenericSecret, check: base62CRCNear},
	{kind: "pypi-token", prefix: "pypi-AgEIcHlwaS5vcmc", segs: []seg{{"", cB64URL, 40, 1024}}, det: detGenericSecret},
	{kind: "pypi-test-token", prefix: "pypi-AgENdGVzdC5weXBpLm9yZw", segs: []seg{{"", cB64URL, 40, 1024}}, det: detGenericSecret},
	{kind: "rubygems-key", prefix: "rubygems_", segs: []seg{{"", cHex, 48, 48}}, det: detGenericSecret},
	{kind: "docker-pat", prefix: "dckr_pat_", segs: []seg{{"", cB64URL, 24, 64}}, det: detGenericSecret},
	{kind: "docker-org-token", prefix: "dckr_oat_", segs: []seg{{"", cB64URL, 24, 64}}, det: detGenericSecret},
	{kind: "huggingface-token", prefix: "hf_", segs: []seg{{"", cB62, 30, 40}}, det: detGenericSecret},
	{kind: "huggingface-org-token", prefix: "api_org_", segs: []seg{{"", cB62, 30, 40}}, det: detGenericSecret},
	{kind: "pulumi-token", prefix: "pul-", segs: hex40, det: detGenericSecret},
	{kind: "digitalocean-pat", prefix: "dop_v1_", segs: hex64, det: detGenericSecret},
	{kind: "digitalocean-oauth-token", prefix: "doo_v1_", segs: hex64, det: detGenericSecret},
	{kind: "digitalocean-refresh-token", prefix: "dor_v1_", segs: hex64, det: detGenericSecret},
	{kind: "postman-key", prefix: "PMAK-", segs: []seg{{"", cHexAny, 24, 24}, {"-", cHexAny, 34, 34}}, det: detGenericSecret},
	{kind: "linear-api-key", prefix: "lin_api_", segs: []seg{{"", cB62, 40, 40}}, det: detGenericSecret},
	{kind: "circleci-personal-token", prefix: "CCIPAT_", segs: []seg{{"", cB62, 20, 24}, {"_", cHex, 40, 40}}, det: detGenericSecret},
	{kind: "circleci-project-token", prefix: "CCIPRJ_", segs: []seg{{"", cB62, 20, 24}, {"_", cHex, 40, 40}}, det: detGenericSecret},
	{kind: "buildkite-token", prefix: "bkua_", segs: hex40, det: detGenericSecret},
	{kind: "netlify-token", prefix: "nfp_", segs: []seg{{"", cB62, 36, 40}}, det: detGenericSecret},
	{kind: "render-key", prefix: "rnd_", segs: []seg{{"", cB62, 32, 32}}, det: detGenericSecret},
	{kind: "supabase-pat", prefix: "sbp_", segs: hex40, det: detGenericSecret},
	{kind: "supabase-secret-key", prefix: "sb_secret_", segs: []seg{{"", cB64URL, 31, 64}}, det: detGenericSecret},
	{kind: "planetscale-token", prefix: "pscale_tkn_", segs: []seg{{"", cB64URL, 32, 64}}, det: detGenericSecret},
	{kind: "planetscale-password", prefix: "pscale_pw_", segs: []seg{{"", cB64URL, 32, 64}}, det: detGenericSecret},
	{kind: "planetscale-oauth-token", prefix: "pscale_oauth_", segs: []seg{{"", cB64URL, 32, 64}}, det: detGenericSecret},
	{kind: "neon-api-key", prefix: "napi_", segs: []seg{{"", cLowNum, 64, 64}}, det: detGenericSecret},
	{kind: "prefect-key", prefix: "pnu_", segs: []seg{{"", cB62, 36, 36}}, det: detGenericSecret},
	{kind: "readme-key", prefix: "rdme_", segs: []seg{{"", cLowNum, 64, 80}}, det: detGenericSecret},
	{kind: "tailscale-key", prefix: "tskey-", segs: []seg{{"", cLowNum, 3, 7}, {"-", cB62, 8, 24}, {"-", cB62, 20, 64}}, det: detGenericSecret},
	{kind: "heroku-key", prefix: "HRKU-", segs: []seg{{"", cB64URL, 40, 80}}, det: detGenericSecret},
	{kind: "fly-token", prefix: "fm2_", segs: []seg{{"", cB64, 64, 4096}}, pad: true, det: detGenericSecret},
	{kind: "fly-token", prefix: "fm1r_", segs: []seg{{"", cB64, 64, 4096}}, pad: true, det: detGenericSecret},
	{kind: "infracost-key", prefix: "ico-", segs: []seg{{"", cB62, 32, 32}}, det: detGenericSecret},
	{kind: "scalingo-token", prefix: "tk-us-", segs: []seg{{"", cB64URL, 40, 64}}, det: detGenericSecret},
	{kind: "octopus-api-key", prefix: "API-", segs: []seg{{"", cUpNum, 25, 32}}, det: detGenericSecret},
	{kind: "harness-token", prefix: "pat.", segs: []seg{{"", cB64URL, 22, 22}, {".", cHex, 24, 24}, {".", cB62, 20, 20}}, det: detGenericSecret},
	{kind: "harness-token", prefix: "sat.", segs: []seg{{"", cB64URL, 22, 22}, {".", cHex, 24, 24}, {".", cB62, 20, 20}}, det: detGenericSecret},
	{kind: "launchdarkly-sdk-key", prefix: "sdk-", segs: uuidSegs, det: detGenericSecret},
	{kind: "launchdarkly-api-token", prefix: "api-", segs: uuidSegs, det: detGenericSecret},
	{kind: "artifactory-api-key", prefix: "AKCp", segs: []seg{{"", cB62, 60, 80}}, det: detGenericSecret},

	// Code search and code quality.
	{kind: "sourcegraph-token", prefix: "sgp_", segs: hex40, det: detGenericSecret},
	{kind: "sourcegraph-token", prefix: "sgp_", segs: []seg{{"", cHex, 16, 16}, {"_", cHex, 40, 40}}, det: detGenericSecret},
	{kind: "sourcegraph-token", prefix: "sgp_local_", segs: hex40, det: detGenericSecret},
	{kind: "sonarqube-user-token", prefix: "squ_", segs: hex40, det: detGenericSecret},
	{kind: "sonarqube-project-token", prefix: "sqp_", segs: hex40, det: detGenericSecret},
	{kind: "sonarqube-global-token", prefix: "sqa_", segs: hex40, det: detGenericSecret},

	// E-commerce and payments.
	{kind: "shopify-access-token", prefix: "shpat_", segs: hex32, det: detGenericSecret},
	{kind: "shopify-custom-app-token", prefix: "shpca_", segs: hex32, det: detGenericSecret},
	{kind: "shopify-private-app-token", prefix: "shppa_", segs: hex32, det: detGenericSecret},
	{kind: "shopify-shared-secret", prefix: "shpss_", segs: hex32, det: detGenericSecret},
	{kind: "stripe-secret-key", prefix: "sk_live_", segs: []seg{{"", cB64URL, 24, 247}}, det: detGenericSecret},
	{kind: "stripe-test-key", prefix: "sk_test_", segs: []seg{{"", cB64URL, 24, 247}}, det: detGenericSecret},
	{kind: "stripe-restricted-key", prefix: "rk_live_", segs: []seg{{"", cB64URL, 24, 247}}, det: detGenericSecret},
	{kind: "stripe-restricted-test-key", prefix: "rk_test_", segs: []seg{{"", cB64URL, 24, 247}}, det: detGenericSecret},
	{kind: "stripe-webhook-secret", prefix: "whsec_", segs: []seg{{"", cB64, 32, 88}}, pad: true, det: detGenericSecret},
	{kind: "square-access-token", prefix: "EAAA", segs: []seg{{"", cB64URL, 22, 60}}, det: detGenericSecret},
	{kind: "square-oauth-secret", prefix: "sq0csp-", segs: []seg{{"", cB64URL, 43, 43}}, det: detGenericSecret},
	{kind: "square-legacy-token", prefix: "sq0atp-", segs: []seg{{"", cB64URL, 22, 22}}, det: detGenericSecret},
	{kind: "woocommerce-consumer-key", prefix: "ck_", segs: hex40, det: detGenericSecret},
	{kind: "woocommerce-consumer-secret", prefix: "cs_", segs: hex40, det: detGenericSecret},
	{kind: "shippo-token", prefix: "shippo_live_", segs: hex40, det: detGenericSecret},
	{kind: "shippo-test-token", prefix: "shippo_test_", segs: hex40, det: detGenericSecret},
	{kind: "easypost-api-key", prefix: "EZAK", segs: []seg{{"", cB62, 54, 54}}, det: detGenericSecret},
	{kind: "easypost-test-key", prefix: "EZTK", segs: []seg{{"", cB62, 54, 54}}, det: detGenericSecret},
	{kind: "flutterwave-secret-key", prefix: "FLWSECK-", segs: []seg{{"", cHex, 32, 32}, {"-", cUpNum, 1, 1}}, det: detGenericSecret},
	{kind: "flutterwave-test-key", prefix: "FLWSECK_TEST-", segs: []seg{{"", cHex, 32, 32}, {"-", cUpNum, 1, 1}}, det: detGenericSecret},
	{kind: "plaid-access-token", prefix: "access-production-", segs: uuidSegs, det: detGenericSecret},
	{kind: "plaid-access-token", prefix: "access-development-", segs: uuidSegs, det: detGenericSecret},
	{kind: "plaid-access-token", prefix: "access-sandbox-", segs: uuidSegs, det: detGenericSecret},

	// CMS, notes, forms and productivity.
	{kind: "contentful-pat", prefix: "CFPAT-", segs: []seg{{"", cB64URL, 43, 43}}, det: detGenericSecret},
	{kind: "notion-token", prefix: "secret_", segs: []seg{{"", cB62, 43, 43}}, det: detGenericSecret},
	{kind: "notion-token", prefix: "ntn_", segs: []seg{{"", cB62, 40, 50}}, det: detGenericSecret},
	{kind: "typeform-token", prefix: "tfp_", segs: []seg{{"", cB62, 40, 48}, {"_", cB62, 10, 16}}, det: detGenericSecret},
	{kind: "figma-token", prefix: "figd_", segs: []seg{{"", cB64URL, 36, 48}}, det: detGenericSecret},
	{kind: "clickup-token", prefix: "pk_", segs: []seg{{"", cDigit, 4, 12}, {"_", cUpNum, 32, 32}}, det: detGenericSecret},
	{kind: "hubspot-private-app-token", prefix: "pat-", segs: append([]seg{{"", cLowNum, 3, 4}, {"-", cHexAny, 8, 8}}, uuidSegs[1:]...), det: detGenericSecret},
	{kind: "atlassian-api-token", prefix: "ATATT3", segs: []seg{{"", cB64URL, 150, 300}, {"=", cHexAny, 8, 8}}, det: detGenericSecret},
	{kind: "atlassian-access-token", prefix: "ATCTT3", segs: []seg{{"", cB64URL, 150, 300}, {"=", cHexAny, 8, 8}}, det: detGenericSecret},
	{kind: "bitbucket-app-password", prefix: "ATBB", segs: []seg{{"", cB62, 32, 40}}, det: detGenericSecret},
	{kind: "trello-token", prefix: "ATTA", segs: []seg{{"", cHexAny, 64, 72}}, det: detGenericSecret},

	// Password managers and secret stores.
	{kind: "1password-service-account-token", prefix: "ops_eyJ", segs: []seg{{"", cB64URL, 100, 4096}}, det: detGenericSecret},
	{kind: "1password-secret-key", prefix: "A3-", segs: []seg{{"", cUpNum, 6, 6}, {"-", cUpNum, 6, 6}, {"-", cUpNum, 5, 5}, {"-", cUpNum, 5, 5}, {"-", cUpNum, 5, 5}, {"-", cUpNum, 5, 5}}, det: detGenericSecret},
	{kind: "bitwarden-access-token", prefix: "0.", segs: append(append([]seg{}, uuidSegs...), seg{".", cB62, 30, 30}, seg{":", cB64, 22, 24}), pad: true, det: detGenericSecret},
	{kind: "doppler-token", prefix: "dp.st.", segs: []seg{{"", cB64URL, 2, 40}, {".", cB62, 40, 44}}, det: detGenericSecret},
	{kind: "doppler-token", prefix: "dp.st.", segs: []seg{{"", cB62, 40, 44}}, det: detGenericSecret},
	{kind: "doppler-token", prefix: "dp.pt.", segs: []seg{{"", cB62, 40, 44}}, det: detGenericSecret},
	{kind: "doppler-token", prefix: "dp.ct.", segs: []seg{{"", cB62, 40, 44}}, det: detGenericSecret},
	{kind: "doppler-token", prefix: "dp.sa.", segs: []seg{{"", cB62, 40, 44}}, det: detGenericSecret},
	{kind: "doppler-token", prefix: "dp.scim.", segs: []seg{{"", cB62, 40, 44}}, det: detGenericSecret},
	{kind: "doppler-token", prefix: "dp.audit.", segs: []seg{{"", cB62, 40, 44}}, det: detGenericSecret},
	{kind: "vault-service-token", prefix: "hvs.", segs: []seg{{"", cB64URL, 24, 512}}, det: detGenericSecret},
	{kind: "vault-batch-token", prefix: "hvb.", segs: []seg{{"", cB64URL, 24, 512}}, det: detGenericSecret},
	{kind: "vault-recovery-token", prefix: "hvr.", segs: []seg{{"", cB64URL, 24, 512}}, det: detGenericSecret},
	{kind: "infisical-service-token", prefix: "st.", segs: []seg{{"", cHex, 24, 24}, {".", cHex, 32, 32}, {".", cHex, 32, 32}}, det: detGenericSecret},

	// File encryption and signing keys.
	{kind: "age-secret-key", prefix: "AGE-SECRET-KEY-1", segs: []seg{{"", cBech32, 58, 58}}, det: detPrivateKey},
	{kind: "age-secret-key", prefix: "AGE-SECRET-KEY-PQ-1", segs: []seg{{"", cBech32, 58, 2048}}, det: detPrivateKey},
	{kind: "age-plugin-identity", prefix: "AGE-PLUGIN-", segs: []seg{{"", cUpNum, 2, 32}, {"-1", cBech32, 20, 512}}, det: detPrivateKey},
	{kind: "minisign-secret-key", prefix: "RWRTY0Iy", segs: []seg{{"", cB64, 140, 240}}, pad: true, det: detPrivateKey},

	// Monitoring, APM and logging.
	{kind: "newrelic-user-key", prefix: "NRAK-", segs: []seg{{"", cUpNum, 27, 27}}, det: detGenericSecret},
	{kind: "newrelic-insert-key", prefix: "NRII-", segs: []seg{{"", cB64URL, 32, 32}}, det: detGenericSecret},
	{kind: "newrelic-query-key", prefix: "NRIQ-", segs: []seg{{"", cB64URL, 32, 32}}, det: detGenericSecret},
	{kind: "newrelic-browser-key", prefix: "NRJS-", segs: []seg{{"", cHex, 19, 19}}, det: detGenericSecret},
	{kind: "sentry-org-token", prefix: "sntrys_eyJ", segs: []seg{{"", cB64, 40, 512}, {"_", cB64, 43, 43}}, pad: true, det: detGenericSecret},
	{kind: "sentry-user-token", prefix: "sntryu_", segs: hex64, det: detGenericSecret},
	{kind: "grafana-service-account-token", prefix: "glsa_", segs: []seg{{"", cB62, 32, 32}, {"_", cHex, 8, 8}}, det: detGenericSecret},
	{kind: "grafana-cloud-token", prefix: "glc_", segs: []seg{{"", cB64, 32, 1024}}, pad: true, det: detGenericSecret},
	{kind: "dynatrace-token", prefix: "dt0c01.", segs: []seg{{"", cUpNum, 24, 24}, {".", cUpNum, 64, 64}}, det: detGenericSecret},
	{kind: "dynatrace-platform-token", prefix: "dt0s16.", segs: []seg{{"", cUpNum, 24, 24}, {".", cUpNum, 64, 64}}, det: detGenericSecret},
	{kind: "honeycomb-ingest-key", prefix: "hcaik_", segs: []seg{{"", cLowNum, 50, 70}}, det: detGenericSecret},
	{kind: "honeycomb-ingest-key", prefix: "hcxik_", segs: []seg{{"", cLowNum, 50, 70}}, det: detGenericSecret},
	{kind: "honeycomb-management-key", prefix: "hcamk_", segs: []seg{{"", cLowNum, 50, 70}}, det: detGenericSecret},

	// Messaging, e-mail and notification APIs.
	{kind: "sendgrid-key", prefix: "SG.", segs: []seg{{"", cB64URL, 16, 32}, {".", cB64URL, 32, 64}}, det: detGenericSecret},
	{kind: "mailgun-key", prefix: "key-", segs: hex32, det: detGenericSecret},
	{kind: "brevo-key", prefix: "xkeysib-", segs: []seg{{"", cHex, 64, 64}, {"-", cB62, 16, 16}}, det: detGenericSecret},
	{kind: "brevo-smtp-key", prefix: "xsmtpsib-", segs: []seg{{"", cHex, 64, 64}, {"-", cB62, 16, 16}}, det: detGenericSecret},
	{kind: "mailersend-token", prefix: "mlsn.", segs: hex64, det: detGenericSecret},
	{kind: "resend-key", prefix: "re_", segs: []seg{{"", cB62, 8, 8}, {"_", cB62, 24, 24}}, det: detGenericSecret},
	{kind: "twilio-api-key", prefix: "SK", segs: hex32, det: detGenericSecret},
	{kind: "firebase-server-key", prefix: "AAAA", segs: []seg{{"", cB64URL, 7, 7}, {":APA91b", cB64URL, 120, 160}}, det: detGenericSecret},

	// Cloud and identity providers.
	{kind: "google-api-key", prefix: "AIza", segs: []seg{{"", cB64URL, 35, 35}}, det: detGenericSecret},
	{kind: "google-oauth-client-secret", prefix: "GOCSPX-", segs: []seg{{"", cB64URL, 28, 28}}, det: detGenericSecret},
	{kind: "google-oauth-access-token", prefix: "ya29.", segs: []seg{{"", cB64URL, 30, 2048}}, det: detGenericSecret},
	{kind: "alibaba-access-key-id", prefix: "LTAI", segs: []seg{{"", cB62, 12, 20}}, det: detGenericSecret},
	{kind: "tencent-secret-id", prefix: "AKID", segs: []seg{{"", cB62, 32, 32}}, det: detGenericSecret},
	{kind: "cloudflare-origin-ca-key", prefix: "v1.0-", segs: []seg{{"", cHex, 24, 24}, {"-", cHex, 146, 146}}, det: detGenericSecret},
	{kind: "mapbox-secret-token", prefix: "sk.eyJ", segs: []seg{{"", cB64URL, 20, 256}, {".", cB64URL, 20, 32}}, det: detGenericSecret},
	{kind: "meta-access-token", prefix: "EAA", segs: []seg{{"", cB62, 90, 512}}, det: detGenericSecret},
	{kind: "x-bearer-token", prefix: "AAAAAAAAAAAAAAAAAAAAA", segs: []seg{{"", cB62Pct, 60, 160}}, det: detGenericSecret},

	// AI APIs.
	{kind: "groq-key", prefix: "gsk_", segs: []seg{{"", cB62, 52, 52}}, det: detGenericSecret},
	{kind: "replicate-token", prefix: "r8_", segs: []seg{{"", cB62, 37, 37}}, det: detGenericSecret},
	{kind: "perplexity-key", prefix: "pplx-", segs: []seg{{"", cB62, 48, 48}}, det: detGenericSecret},
	{kind: "xai-key", prefix: "xai-", segs: []seg{{"", cB62, 64, 96}}, det: detGenericSecret},
	{kind: "langsmith-key", prefix: "lsv2_pt_", segs: []seg{{"", cHex, 32, 32}, {"_", cHex, 10, 10}}, det: detGenericSecret},
	{kind: "langsmith-key", prefix: "lsv2_sk_", segs: []seg{{"", cHex, 32, 32}, {"_", cHex, 10, 10}}, det: detGenericSecret},
	{kind: "pinecone-key", prefix: "pcsk_", segs: []seg{{"", cB62, 4, 8}, {"_", cB62, 50, 80}}, det: detGenericSecret},
	{kind: "elevenlabs-key", prefix: "sk_", segs: []seg{{"", cHex, 48, 48}}, det: detGenericSecret},
	{kind: "openrouter-key", prefix: "sk-or-v1-", segs: hex64, det: detOpenAI},
	{kind: "deepseek-key", prefix: "sk-", segs: hex32, det: detOpenAI},
}

// base62CRCOK reports whether a 36-character body of a GitHub or npm token ends in the
// checksum of the 30 characters before it: their CRC-32 (IEEE), written in base62
// (0-9, A-Z, a-z), six digits, most significant first. GitHub describes the format in
// "Behind GitHub's new authentication token formats" (2021) and npm in "Announcing npm's
// new access token format" (2021); issued tokens always carry it, so a body whose last six
// characters are not its checksum was not issued by them (a typo, a test fixture, a
// hand-made look-alike).
func base62CRCOK(body string) bool {
	if len(body) != 36 {
		return false
	}
	c := crc32IEEE(body[:30])
	for i := 35; i >= 30; i-- {
		if body[i] != base62Digits[c%62] {
			return false
		}
		c /= 62
	}
	return true
}

// base62CRCNear reports whether body is a GitHub or npm token body (base62CRCOK) or one
// edit away from one: a character changed, added or left out, in the thirty characters or
// in the checksum. An issued token with one character changed or typed in is still the
// token, and whoever reads it can undo the edit by trying each (a model told to leak a key
// can write it so); a value drawn at random is one edit away from a checksum with a
// chance of about one in a million (body length × 62 edits against a 32-bit checksum),
// so the near misses of the format stay refused. It runs in time linear in the body: the
// CRC is run forward over the text before an edit and backward from the checksum over the
// text after it, and an edit that joins the two is looked up, not searched for.
func base62CRCNear(body string) bool {
	switch len(body) {
	case 36:
		if base62CRCOK(body) {
			return true
		}
		want := base62CRC32(body[:30])
		diff := 0
		for i := range 6 {
			if want[i] != body[30+i] {
				diff++
			}
		}
		if diff == 1 {
			return true // one checksum digit changed
		}
		// One of the thirty changed: the register before it (forward) and the one the
		// checksum needs after it (backward) are joined by one byte.
		after, ok := crcTarget(body[30:])
		if !ok {
			return false
		}
		var back [31]uint32
		crcBackward(body, 0, 30, after, back[:])
		reg := ^uint32(0)
		for p := range 30 {
			if c, ok := crcJoin(reg, back[p+1]); ok && c != body[p] && isAlnum(c) {
				return true
			}
			reg = crcStep(reg, body[p])
		}
		return false
	case 37:
		// A character added to the checksum: the six expected digits are the seven less one.
		if oneLess(body[30:], base62CRC32(body[:30])) {
			return true
		}
		// Added to the thirty: leaving out body[q] joins the register after body[:q] to the
		// one body[q+1:31] needs before it.
		after, ok := crcTarget(body[31:])
		if !ok {
			return false
		}
		var back [32]uint32
		crcBackward(body, 1, 31, after, back[:])
		reg := ^uint32(0)
		for q := 0; q <= 30; q++ {
			if reg == back[q+1] {
				return true
			}
			reg = crcStep(reg, body[q])
		}
		return false
	case 35:
		// A character left out of the checksum: the expected digits less one are the five.
		if oneLess(base62CRC32(body[:30]), body[30:]) {
			return true
		}
		// Left out of the thirty: one byte joins the register after body[:q] to the one
		// body[q:29] needs before it.
		after, ok := crcTarget(body[29:])
		if !ok {
			return false
		}
		var back [30]uint32
		crcBackward(body, 0, 29, after, back[:])
		reg := ^uint32(0)
		for q := 0; q <= 29; q++ {
			if c, ok := crcJoin(reg, back[q]); ok && isAlnum(c) {
				return true
			}
			if q < 29 {
				reg = crcStep(reg, body[q])
			}
		}
		return false
	}
	return false
}

// crcBackward sets back[j], for j from hi down to lo, to the register that body[j:hi] needs
// before it to end in after.
func crcBackward(body string, lo, hi int, after uint32, back []uint32) {
	back[hi] = after
	for j := hi - 1; j >= lo; j-- {
		back[j] = crcUnstep(back[j+1], body[j])
	}
}

// oneLess reports whether short is long with one character left out.
func oneLess(long, short string) bool {
	if len(long) != len(short)+1 {
		return false
	}
	i := 0
	for i < len(short) && long[i] == short[i] {
		i++
	}
	return long[i+1:] == short[i:]
}

// crcTarget returns the CRC register that six base62 checksum digits ask for at the end of
// the thirty characters (the CRC before its final inversion), and false when the digits
// are not base62 or stand for more than 32 bits.
func crcTarget(digits string) (uint32, bool) {
	var v uint64
	for i := 0; i < len(digits); i++ {
		k := strings.IndexByte(base62Digits, digits[i])
		if k < 0 {
			return 0, false
		}
		v = v*62 + uint64(k)
	}
	if v > 0xFFFFFFFF {
		return 0, false
	}
	return ^uint32(v), true
}

// crcStep is the CRC-32 (IEEE) register after byte b; crcUnstep is the register before b,
// given the one after it; crcJoin is the byte that takes the register from before to after,
// if one does. They rely on the top bytes of the table's 256 entries being all different
// (TestCRCTableTopBytes), so the top byte of the register after b names the entry used.
func crcStep(reg uint32, b byte) uint32 { return crc32Table[byte(reg)^b] ^ reg>>8 }

func crcUnstep(after uint32, b byte) uint32 {
	idx := crc32TopIndex[after>>24]
	return (after^crc32Table[idx])<<8 | uint32(idx^b)
}

func crcJoin(before, after uint32) (byte, bool) {
	idx := crc32TopIndex[after>>24]
	if crc32Table[idx]^before>>8 != after {
		return 0, false
	}
	return idx ^ byte(before), true
}

// crc32TopIndex is the index of the table entry with a given top byte.
var crc32TopIndex = func() (t [256]byte) {
	for i, v := range crc32Table {
		t[v>>24] = byte(i)
	}
	return t
}()

// base62Digits is the alphabet of base62CRC32.
const base62Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// base62CRC32 is the CRC-32 (IEEE) of s in six base62 digits.
func base62CRC32(s string) string {
	c := crc32IEEE(s)
	var d [6]byte
	for i := 5; i >= 0; i-- {
		d[i] = base62Digits[c%62]
		c /= 62
	}
	return string(d[:])
}

// crc32Table is the IEEE polynomial's table, for crc32IEEE: crc32.MakeTable(crc32.IEEE)'s
// values, computed here into a fixed array (MakeTable(IEEE) also builds the package's 8 KiB
// slicing table, which nothing here uses).
var crc32Table = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ crc32.IEEE
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc32IEEE is crc32.ChecksumIEEE of s without converting s to a slice (which would
// allocate on the hot path).
func crc32IEEE(s string) uint32 {
	c := ^uint32(0)
	for i := 0; i < len(s); i++ {
		c = crc32Table[byte(c)^s[i]] ^ c>>8
	}
	return ^c
}
