package builtin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// newSecretForms are the issue-31 secrets in the contexts that decide them: the shaped
// vendor tokens, webhook URLs, URL and command-line passwords, auth schemes, base64 values
// of Kubernetes Secrets, a JWT encoded again, XML elements with the value on its own line,
// YAML block scalars, and identifiers that are secrets by their key.
func newSecretForms(seed int) []string {
	forms := []string{
		"https://hooks.slack.com/services/T" + fakeFrom(alphaUpper+alphaDigit, 9, seed) + "/B" + fakeFrom(alphaUpper+alphaDigit, 11, seed+1) + "/" + fakeFrom(alphaB62, 24, seed+2),
		"https://discord.com/api/webhooks/" + fakeDigits(19, seed) + "/" + fakeFrom(alphaB62+"-_", 68, seed+1),
		"redis://:" + fakePassword(20, seed, "-_.!*~") + "@cache:6379/0",
		"curl -u admin:" + fakePassword(18, seed, "-_.!*~") + " https://ci.example.com",
		"mysql -u root -p" + fakePassword(16, seed, "-_.+=%^") + " shop",
		"docker login --password " + fakePassword(20, seed, "-_.+=%^") + " registry",
		"Authorization: Basic " + fakeBase64Of("basic", seed),
		"Authorization: SSWS 00" + fakeFrom(alphaB62+"-_", 40, seed),
		"data:\n  tls.key: " + fakeBase64Of("pem", seed) + "\n",
		"data:\n  DATABASE_URL: " + fakeBase64Of("dsn", seed) + "\n",
		"session " + fakeBase64Of("jwt", seed) + " ok",
		"<password>\n    " + fakePassword(20, seed, "!#%*-_+=^") + "\n  </password>",
		"signing_key: |\n    " + fakeFrom(alphaB62, 40, seed) + "\n",
		"CLIENT_SECRET=" + fakeUUID(seed),
		"OAUTH_CLIENT_ID=" + fakeDigits(15, seed),
		"$cfg['db_pass'] = '" + fakePassword(18, seed, "!#%*-_+=^") + "';",
		"Cookie: session=" + fakeFrom(alphaB62+"-_", 40, seed) + "; theme=dark",
		"keytool -list -keystore a.jks -storepass " + fakePassword(16, seed, "-_.+=%^"),
		"https://open.feishu.cn/open-apis/bot/v2/hook/" + fakeUUID(seed),
		"https://api.telegram.org/bot" + fakeDigits(10, seed) + ":AA" + fakeFrom(alphaB62+"-_", 33, seed) + "/getMe",
		"-----" + "BEGIN OpenVPN Static key V1-----\n" + fakeHex(64, seed) + "\n-----END OpenVPN Static key V1-----",
		"PGPASSWORD=" + fakeFrom(alphaB62, 24, seed) + " psql",
		// Named in words (named.go): the words decide, from up to 64 bytes before the value.
		"Here is the mailgun key you asked for: " + fakeFrom(alphaB62, 32, seed),
		"connecting to billing with credential " + fakeUUID(seed),
		"client := acme.NewClient(\"" + fakeFrom(alphaB62, 40, seed) + "\")",
	}
	shaped := fakeShapedTokens(seed)
	for _, kind := range slices.Sorted(maps.Keys(shaped)) {
		forms = append(forms, shaped[kind])
	}
	return forms
}

// TestStreamingNewSecretKinds checks the streaming property for every issue-31 kind: a token
// of every vendor rule and every form of newSecretForms, in a few contexts, at every split
// point, and streamed in deltas of every size from 1 to 32 characters with the engine's
// windows, with all detectors and with the secrets pack alone.
func TestStreamingNewSecretKinds(t *testing.T) {
	var values []string
	for k := range vendorRules {
		values = append(values, fakeVendorToken(&vendorRules[k], 900+k, false))
	}
	values = append(values, newSecretForms(950)...)
	surroundings := []string{"token: %s\n", "see %s. next", "  - %s\n  - other", "%s"}
	configs := map[string]*Classifier{"all": streamingClassifier(t), "secrets": secretsPack(t)}
	for _, name := range Packs()["secrets"] {
		configs[name] = only(t, name) // each family alone: another's pending run cannot hide it
	}
	for name, c := range configs {
		t.Run(name, func(t *testing.T) {
			for k, v := range values {
				text := fmt.Sprintf(surroundings[k%len(surroundings)], v)
				if got := spansIn(t, c, text); len(got) == 0 && (name == "all" || name == "secrets") {
					t.Fatalf("%q: no match", text)
				}
				checkEverySplit(t, c, text)
				for delta := 1; delta <= 32; delta++ {
					checkDeltas(t, c, text, delta)
				}
			}
		})
	}
}

// checkDeltas streams text in deltas of size delta and checks each evaluation's window, as
// checkWindows does with random deltas.
func checkDeltas(t *testing.T, c *Classifier, text string, delta int) {
	t.Helper()
	full, err := c.Classify(context.Background(), classify.Input{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	released := 0
	var got []classify.Span
	for k := 0; k < len(text); {
		k = min(len(text), k+delta)
		w := released
		for n := 0; n < c.HoldBackHint() && w > 0; n++ {
			_, size := utf8.DecodeLastRuneInString(text[:w])
			w -= size
		}
		res, err := c.Classify(context.Background(), classify.Input{Text: text[w:k], More: k < len(text)})
		if err != nil {
			t.Fatal(err)
		}
		open := w + res.Open
		if k == len(text) {
			open = len(text)
		}
		for _, sp := range res.Spans {
			sp.Start, sp.End = sp.Start+w, sp.End+w
			if sp.Start >= released && sp.Start < open {
				got = append(got, sp)
			}
		}
		released = max(released, open)
	}
	if !slices.Equal(got, full.Spans) {
		t.Fatalf("%q in deltas of %d: streamed spans %s, whole text's %s", text, delta,
			describeSpans(c, text, got), describeSpans(c, text, full.Spans))
	}
}
