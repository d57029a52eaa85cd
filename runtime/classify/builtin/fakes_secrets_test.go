package builtin

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Placeholders of the secret-format corpora (secrets_heldout.jsonl, secrets_tuning.jsonl):
// every value is built at test time from a seed, so that no credential-shaped string is
// stored in the repository.

// fakeAlphabets are the alphabets of {{T:prefix:alphabet:n:seed}}.
var fakeAlphabets = map[string]string{
	"b62":       alphaB62,
	"hex":       "0123456789abcdef",
	"HEX":       "0123456789ABCDEF",
	"low":       alphaLower,
	"up":        alphaUpper,
	"dig":       alphaDigit,
	"lownum":    alphaLower + alphaDigit,
	"upnum":     alphaUpper + alphaDigit,
	"b64":       alphaB62 + "+/",
	"b64url":    alphaB62 + "-_",
	"b32low":    alphaLower + "234567",
	"bech32":    "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
	"bech32low": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",
}

// fakeUUID returns a random version-4 UUID in lower case.
func fakeUUID(seed int) string {
	h := fakeFrom("0123456789abcdef", 32, seed)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-" + string("89ab"[seed%4]) + h[17:20] + "-" + h[20:]
}

// fakePassword returns a password of n characters drawn from letters, digits and extra.
func fakePassword(n, seed int, extra string) string {
	v := []byte(fakeFrom(alphaB62+extra, n, seed))
	if extra != "" {
		v[n/2] = extra[seed%len(extra)] // at least one symbol
	}
	return string(v)
}

// fakeBase64Of returns the standard base64 of a value of the given kind: secrets (a
// password, an API key, a connection string, a Docker config, a private key, a webhook URL,
// a JWT, user:password, id:key) and non-secrets (a certificate, an image, text, JSON, a user
// name, a host name).
func fakeBase64Of(kind string, seed int) string {
	var v string
	switch kind {
	case "pw":
		v = fakePassword(20, seed, "!#%*-_")
	case "key":
		v = fakeFrom(alphaB62, 40, seed)
	case "dsn":
		v = "postgres://app:" + fakePassword(20, seed, "-_") + "@db.internal:5432/app"
	case "dockercfg":
		auth := base64.StdEncoding.EncodeToString([]byte("ci:" + fakePassword(24, seed, "-_")))
		v = `{"auths":{"registry.example.com":{"username":"ci","auth":"` + auth + `"}}}`
	case "pem":
		v = fakePEM("RSA ", seed) + "\n"
	case "webhook":
		v = "https://hooks.slack.com/services/T" + fakeFrom(alphaUpper+alphaDigit, 9, seed) + "/B" +
			fakeFrom(alphaUpper+alphaDigit, 11, seed+1) + "/" + fakeFrom(alphaB62, 24, seed+2)
	case "jwt":
		v = fakeJWT(seed)
	case "ghtoken":
		v = withChecksum("gh" + "p_" + fakeFrom(alphaB62, 36, seed))
	case "basic":
		v = "svc-" + fakeFrom(alphaLower, 5, seed) + ":" + fakePassword(18, seed+1, "!#%*-_")
	case "idkey":
		v = fakeFrom(alphaB62+"-_", 20, seed) + ":" + fakeFrom(alphaB62+"-_", 22, seed+1)
	case "cert":
		v = "-----BEGIN CERTIFICATE-----\n" + fakeBase64(64, seed) + "\n" + fakeBase64(64, seed+1) + "\n-----END CERTIFICATE-----\n"
	case "png":
		r := fakeRand(seed)
		b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
		for range 120 {
			b = append(b, byte(r.IntN(256)))
		}
		return base64.StdEncoding.EncodeToString(b)
	case "text":
		v = "# Acme API\n\nThis service answers order queries. Run `make dev` to start it locally.\n"
	case "json":
		v = fmt.Sprintf(`{"event":"order.shipped","order":%d,"carrier":"dhl"}`, 40000+seed%1000)
	case "user":
		v = "app-reader"
	case "host":
		v = "db.internal.example.com"
	default:
		panic("unknown base64 kind " + kind)
	}
	return base64.StdEncoding.EncodeToString([]byte(v))
}

// fakeOnePasswordSA returns a 1Password service account token: ops_ and the base64url of a
// JSON object.
func fakeOnePasswordSA(seed int) string {
	j := fmt.Sprintf(`{"signInAddress":"my.1password.com","userAuth":{"method":"SRPg-4096","alg":"PBES2g-HS256","iterations":650000,"salt":"%s"},"email":"%s@1passwordserviceaccounts.com","srpX":"%s","muk":{"alg":"A256GCM","ext":true,"k":"%s","key_ops":["encrypt","decrypt"],"kty":"oct","kid":"mp"},"secretKey":"A3-%s","throttleSecret":{"seed":"%s","uuid":"%s"},"deviceUuid":"%s"}`,
		fakeFrom(alphaB62+"-_", 22, seed), fakeFrom(alphaLower+alphaDigit, 13, seed+1), fakeHex(64, seed+2),
		fakeFrom(alphaB62+"-_", 43, seed+3), fakeFrom(alphaUpper+alphaDigit, 32, seed+4), fakeHex(64, seed+5),
		fakeFrom(alphaUpper+alphaDigit, 26, seed+6), fakeFrom(alphaLower+alphaDigit, 26, seed+7))
	return "op" + "s_" + base64.RawURLEncoding.EncodeToString([]byte(j))
}

// fakeSentryOrgToken returns a Sentry organization token: sntrys_, the base64 of a JSON
// object, '_' and a secret.
func fakeSentryOrgToken(seed int) string {
	j := fmt.Sprintf(`{"iat":%d.5,"url":"https://sentry.io","region_url":"https://us.sentry.io","org":"acme-%d"}`, 1700000000+seed, seed%100)
	return "sntr" + "ys_" + base64.RawStdEncoding.EncodeToString([]byte(j)) + "_" + fakeFrom(alphaB62+"+/", 43, seed)
}

// fakeGrafanaCloudToken returns a Grafana Cloud access policy token: glc_ and the base64 of
// a JSON object.
func fakeGrafanaCloudToken(seed int) string {
	j := fmt.Sprintf(`{"o":"%d","n":"stack-%d-hm-write","k":"%s","m":{"r":"prod-eu-west-2"}}`, 600000+seed%1000, seed%1000, fakeFrom(alphaB62, 24, seed))
	return "gl" + "c_" + base64.StdEncoding.EncodeToString([]byte(j))
}

// fakeDiscordBotToken returns a Discord bot token: the base64 of the bot's id, a timestamp
// and an HMAC, joined by dots.
func fakeDiscordBotToken(seed int) string {
	id := base64.RawStdEncoding.EncodeToString([]byte("1" + fakeDigits(18, seed)))
	return id + "." + fakeFrom(alphaB62+"-_", 6, seed+1) + "." + fakeFrom(alphaB62+"-_", 38, seed+2)
}

// expandSecretPlaceholder builds the placeholders of the secret-format corpora; ok is false
// for a name it does not know.
func expandSecretPlaceholder(name string, args []string, num func(int) int) (string, bool) {
	switch name {
	case "T": // {{T:prefix:alphabet:n:seed}}
		alphabet, known := fakeAlphabets[args[1]]
		if !known {
			panic("unknown alphabet " + args[1])
		}
		return withChecksum(args[0] + fakeFrom(alphabet, num(2), num(3))), true
	case "UUID":
		return fakeUUID(num(0)), true
	case "UUIDUP":
		return strings.ToUpper(fakeUUID(num(0))), true
	case "PW": // a password with symbols, for config files
		return fakePassword(num(0), num(1), "!#%*-_+=^"), true
	case "PWURL": // a password that needs no escaping in a URL's user information
		return fakePassword(num(0), num(1), "-_.!*~"), true
	case "PWSH": // a password that needs no quoting in a shell
		return fakePassword(num(0), num(1), "-_.+=%^"), true
	case "PWPCT": // a password with percent-encoded '@' and '#', as a URL holds it
		v := fakePassword(num(0), num(1), "")
		return v[:5] + "%40" + v[5:11] + "%23" + v[11:], true
	case "B64OF":
		return fakeBase64Of(args[0], num(1)), true
	case "OPS":
		return fakeOnePasswordSA(num(0)), true
	case "SNTRYS":
		return fakeSentryOrgToken(num(0)), true
	case "GLC":
		return fakeGrafanaCloudToken(num(0)), true
	case "PYPI":
		return "py" + "pi-AgEIcHlwaS5vcmc" + fakeFrom(alphaB62+"-_", 160, num(0)), true
	case "ATATT":
		return "ATA" + "TT3xFfGF0" + fakeFrom(alphaB62+"-_", 180, num(0)) + "=" + fakeFrom("0123456789ABCDEF", 8, num(0)+1), true
	case "DISCORD":
		return fakeDiscordBotToken(num(0)), true
	case "PEMK": // {{PEMK:LABEL:seed}}: a private-key block with that label
		return fakePEM(args[0]+" ", num(1)), true
	case "PGPK":
		return fakePGP("PRIV"+"ATE", num(0)), true
	case "AWSID":
		return fakeAWSKeyID("AK"+"IA", num(0)), true
	}
	return "", false
}

// classAlphabets are the alphabets of the vendor rules' character classes.
var classAlphabets = map[charClass]string{
	cHex: "0123456789abcdef", cHexAny: "0123456789abcdefABCDEF", cDigit: alphaDigit, cB62: alphaB62,
	cB64URL: alphaB62 + "-_", cB64: alphaB62 + "+/", cUpNum: alphaUpper + alphaDigit,
	cLowNum: alphaLower + alphaDigit, cBech32: "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", cGitLab: alphaB62 + "-_",
	cB62Pct: alphaB62,
}

// fakeVendorToken returns a token of rule r: its prefix, then each run of its body at a
// length between the run's bounds chosen by seed (at most 40 over the least). With short,
// the last run that has a length is one character too short.
func fakeVendorToken(r *vendorRule, seed int, short bool) string {
	var b strings.Builder
	b.WriteString(r.prefix)
	last := len(r.segs) - 1
	for last > 0 && r.segs[last].max == 0 {
		last-- // a literal that ends the token ("@apiconnector.com")
	}
	for k, g := range r.segs {
		n := g.min + seed%(min(g.max-g.min, 40)+1)
		if r.check != nil {
			n = 36 // npm: issued at 36, taken at 35 to 37 when one edit from its checksum
		}
		if short && k == last {
			n = g.min - 1
		}
		b.WriteString(g.lit)
		b.WriteString(fakeFrom(classAlphabets[g.cls], n, seed*31+k))
	}
	return withChecksum(b.String())
}

// fakeShapedTokens are tokens of the shapes vendor_shapes.go matches, one per kind.
func fakeShapedTokens(seed int) map[string]string {
	m := fakeShapedTokensBase(seed)
	for k, z := range azureKeys {
		if _, ok := m[z.kind]; !ok {
			m[z.kind] = fakeAzureKey(z, seed+k)
		}
	}
	return m
}

// fakeAzureKey returns an identifiable key of z's shape: random characters of its alphabet
// with its signature at its offset, and its padding.
func fakeAzureKey(z azureKey, seed int) string {
	alpha := classAlphabets[z.cls]
	return fakeFrom(alpha, z.at, seed) + z.marker + fakeFrom(alpha, z.n-z.at-len(z.marker), seed+1) + strings.Repeat("=", z.pad)
}

func fakeShapedTokensBase(seed int) map[string]string {
	id := base64.RawStdEncoding.EncodeToString([]byte("1" + fakeDigits(18, seed)))
	return map[string]string{
		"terraform-cloud-token": fakeFrom(alphaB62, 14, seed) + ".atlas" + "v1." + fakeFrom(alphaB62, 67, seed+1),
		"airtable-pat":          "pat" + fakeFrom(alphaB62, 14, seed) + "." + fakeHex(64, seed+1),
		"discord-bot-token":     id + "." + fakeFrom(alphaB62+"-_", 6, seed) + "." + fakeFrom(alphaB62+"-_", 38, seed+1),
		"entra-client-secret":   fakeFrom(alphaB62, 3, seed) + "8Q" + "~" + fakeFrom(alphaB62+"-_.~", 34, seed+1),
		"telegram-bot-token":    fakeDigits(10, seed) + ":AA" + fakeFrom(alphaB62+"-_", 33, seed+1),
		"asana-pat":             "1/" + fakeDigits(16, seed) + ":" + fakeHex(32, seed+1),
		"ghost-admin-key":       fakeHex(24, seed) + ":" + fakeHex(64, seed+1),
		"mailchimp-key":         fakeHex(32, seed) + "-us" + fmt.Sprint(1+seed%20),
		"mailgun-key":           fakeHex(32, seed) + "-" + fakeHex(8, seed+1) + "-" + fakeHex(8, seed+2),
		"zoho-oauth-token":      "1000." + fakeHex(32, seed) + "." + fakeHex(32, seed+1),
		"databricks-token":      "da" + "pi" + fakeHex(32, seed) + []string{"", "-2"}[seed%2],
		"vault-legacy-token":    "s." + fakeFrom(alphaB62, 21, seed) + "aZ9",
		"coinbase-cdp-key-name": "organizations/" + fakeUUID(seed) + []string{"/", `\/`}[seed%2] + "apiKeys/" + fakeUUID(seed+1),
		"prefixed-token":        "zqv_" + fakeFrom(alphaB62, 40, seed),
		"openshift-oauth-token": "sha256" + "~" + fakeFrom(alphaB62+"-_", 43, seed),
		"maxmind-license-key":   fakeFrom(alphaB62, 6, seed) + "_" + fakeFrom(alphaB62, 29, seed+1) + "_mmk",
		"deepl-free-key":        fakeUUID(seed) + ":fx",
		"azure-devops-pat":      fakeFrom(alphaB62, 76, seed) + "AZDO" + fakeFrom(alphaB62, 4, seed+1),
		"qstash-token": base64.StdEncoding.EncodeToString([]byte(`{"UserID":"` + fakeUUID(seed) + `","Password":"` +
			fakeHex(32, seed+1) + `"}`)),
		"momento-api-key": base64.StdEncoding.EncodeToString([]byte(`{"endpoint":"cell-4-us-west-2-1.prod.a.momentohq.com","api_key":"` + //nolint:misspell // a vendor's name
			fakeFrom(alphaB62, 120, seed) + `"}`)),
		"convex-deploy-key": "prod:" + "happy-otter-" + fmt.Sprint(100+seed%900) + "|" + fakeFrom(alphaB62+"-_", 80, seed+1),
		"grafana-api-key": base64.StdEncoding.EncodeToString([]byte(`{"k":"` + fakeFrom(alphaB62, 32, seed) +
			`","n":"ci","id":` + fmt.Sprint(1+seed%90) + `}`)),
		"neptune-api-token": base64.StdEncoding.EncodeToString([]byte(`{"api_address":"https://app.neptune.ai","api_url":"https://app.neptune.ai","api_key":"` +
			fakeUUID(seed) + `"}`)),
		"cloudflare-tunnel-token": base64.StdEncoding.EncodeToString([]byte(`{"a":"` + fakeHex(32, seed) + `","t":"` +
			fakeUUID(seed+1) + `","s":"` + fakeBase64(44, seed+2) + `"}`)),
	}
}

// withChecksum gives a GitHub (ghp_ gho_ ghu_ ghs_ ghr_) or npm token of 36 characters the
// checksum its last six characters must be (base62CRCOK), as every issued token has; other
// values are returned as they are.
func withChecksum(tok string) string {
	for _, p := range []string{"gh" + "p_", "gho_", "ghu_", "ghs_", "ghr_", "np" + "m_"} {
		if strings.HasPrefix(tok, p) && len(tok) == len(p)+36 && allIn(tok[len(p):], cB62) {
			return tok[:len(tok)-6] + base62CRC32(tok[len(p):len(tok)-6])
		}
	}
	return tok
}
