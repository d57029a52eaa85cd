package builtin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// spanCase is a text and the spans it must have, exactly.
type spanCase struct {
	name string
	text string
	want func(text string) []span
}

func none(string) []span { return nil }

// one returns a want function for a single span of cat over sub.
func one(cat, sub string) func(string) []span {
	return func(s string) []span { return []span{at(cat, s, sub, 0)} }
}

func runSpanCases(t *testing.T, c *Classifier, cases []spanCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, want := spansOf(t, c, tt.text), tt.want(tt.text)
			if !slices.Equal(got, want) {
				t.Errorf("spans of %q\n got %v\nwant %v", tt.text, got, want)
			}
		})
	}
}

func TestSecretTokensSpanTheirPrefixAndNeedTheirWholeBody(t *testing.T) {
	c := allDetectors(t)
	short := "Ab1cD2eF3" // a body far below every token's minimum
	tokens := map[string]string{
		"openai-key":    "s" + "k-",
		"anthropic-key": "s" + "k-ant-",
		"gitlab-token":  "gl" + "pat-",
		"slack-token":   "xo" + "xb-1234-",
		"github-token":  "github" + "_pat_",
	}
	for cat, prefix := range tokens {
		for _, lead := range []int{0, 31, 33, 40, 300, 5000} {
			for _, tail := range []string{"", " ", ".", "\n"} {
				text := strings.Repeat("x ", lead/2) + prefix + short + tail
				t.Run(fmt.Sprintf("%s with a short body after %d bytes and %q is no token", cat, lead, tail), func(t *testing.T) {
					if got := spansOf(t, c, text); len(got) > 0 {
						t.Errorf("%q: spans %v, want none", text[max(0, len(text)-40):], got)
					}
					r, err := c.Classify(context.Background(), classify.Input{Text: text, More: true})
					if err != nil {
						t.Fatal(err)
					}
					if len(r.Spans) > 0 {
						t.Errorf("streaming %q: spans %v, want none", text[max(0, len(text)-40):], r.Spans)
					}
				})
			}
		}
	}
	proj := "s" + "k-proj-" + fakeFrom(alphaB62+"-_", 80, 1)
	ant := "s" + "k-ant-api03-" + fakeFrom(alphaB62+"-_", 93, 2) + "AA"
	pat := "github" + "_pat_" + fakeFrom(alphaB62, 22, 3) + "_" + fakeFrom(alphaB62, 59, 4)
	glpat := "gl" + "pat-" + fakeFrom(alphaB62, 20, 5)
	runSpanCases(t, c, []spanCase{
		{"an OpenAI key spans its sk-proj- prefix", "key " + proj + " here", one("openai-key", proj)},
		{"an Anthropic key spans its sk-ant- prefix", "ANTHROPIC_API_KEY=" + ant, one("anthropic-key", ant)},
		{"a fine-grained GitHub token spans github_pat_", "token: " + pat, one("github-token", pat)},
		{"a GitLab token spans glpat-", "use " + glpat + ".", one("gitlab-token", glpat)},
	})
}

func TestSlackTokenForms(t *testing.T) {
	c := allDetectors(t)
	var cases []spanCase
	for _, kind := range []string{"b", "p", "a", "r", "s"} {
		tok := "xo" + "x" + kind + "-" + fakeDigits(12, 1) + "-" + fakeDigits(13, 2) + "-" + fakeFrom(alphaB62, 24, 3)
		cases = append(cases, spanCase{"an xox" + kind + "- token matches", "SLACK_TOKEN=" + tok, one("slack-token", tok)})
	}
	xapp := "xa" + "pp-1-A" + fakeFrom(alphaUpper+alphaDigit, 10, 4) + "-" + fakeDigits(13, 5) + "-" + fakeHex(64, 6)
	xoxe := "xo" + "xe.xoxp-1-" + fakeFrom(alphaB62, 140, 7)
	refresh := "xo" + "xe-1-" + fakeFrom(alphaB62, 140, 8)
	legacy := "xo" + "xp-" + fakeDigits(10, 9) + "-" + fakeHex(6, 10)
	cases = append(cases,
		spanCase{"an app-level xapp- token matches", "SLACK_APP_TOKEN=" + xapp, one("slack-token", xapp)},
		spanCase{"a rotating access token spans its xoxe. prefix", "token " + xoxe + " rotated", one("slack-token", xoxe)},
		spanCase{"a rotating refresh token matches", "refresh: " + refresh, one("slack-token", refresh)},
		spanCase{"a legacy token with fewer groups matches", "legacy " + legacy + " (2015)", one("slack-token", legacy)},
		spanCase{"a placeholder of X's is no token", "SLACK_TOKEN=" + "xo" + "xb-" + fakeDigits(12, 1) + "-" + fakeDigits(13, 2) + "-" + strings.Repeat("X", 24), none},
		spanCase{"a placeholder of #'s is no token", "format " + "xo" + "xp-" + fakeDigits(12, 3) + "-" + fakeDigits(12, 4) + "-" + strings.Repeat("#", 13), none},
		spanCase{"a token cut after a dash is no token", "xo" + "xb-" + fakeDigits(12, 1) + "-" + fakeDigits(13, 2) + "- is the prefix", none},
	)
	runSpanCases(t, c, cases)
}

func TestPrivateKeyBlocks(t *testing.T) {
	c := allDetectors(t)
	pgp := fakePGP("PRIV"+"ATE", 1)
	runSpanCases(t, c, []spanCase{
		{"a PGP private key block spans from BEGIN to END", "here:\n" + pgp + "\nthanks", one("private-key", pgp)},
		{"a PGP public key block is not a secret", "my key:\n" + fakePGP("PUBLIC", 2), none},
		{"a block with nothing between BEGIN and END is a template", "template:\n" + pemHeader("RSA ") + "\n" + pemFooter("RSA "), none},
		{"a block whose body is ... is a template", pemHeader("") + "\n...\n" + pemFooter(""), none},
		{"a block whose body is a placeholder is a template", pemHeader("EC ") + "\n<your key here>\n" + pemFooter("EC "), none},
		{"a block of X's is a template", pemHeader("") + "\n" + strings.Repeat("X", 64) + "\n" + pemFooter(""), none},
		{"an unclosed block spans to the end of the text", "key:\n" + pemHeader("") + "\n...", one("private-key", pemHeader("")+"\n...")},
	})
}

func TestJWTSegmentsMayKeepTheirPadding(t *testing.T) {
	c := allDetectors(t)
	padded := fakePaddedJWT(1)
	if !strings.Contains(padded, "=.") || !strings.HasSuffix(padded, "=") {
		t.Fatalf("fake %q does not pad both its payload and its signature", padded)
	}
	runSpanCases(t, c, []spanCase{
		{"a padded token spans its padding", "id_token=" + padded + "; Path=/", one("jwt", padded)},
		{"a padded token at the end of the text matches", "Bearer " + padded, one("jwt", padded)},
		{"three '=' are not padding", "x " + padded + "== y", none},
	})
}

func TestAWSAccessKeyPlaceholders(t *testing.T) {
	c := allDetectors(t)
	id := fakeAWSKeyID("AK"+"IA", 1)
	runSpanCases(t, c, []spanCase{
		{"a key id matches", "aws_access_key_id = " + id, one("aws-access-key", id)},
		{"a key id of X's is a placeholder", "AWS_ACCESS_KEY_ID=" + "AK" + "IA" + strings.Repeat("X", 16), none},
		{"AWS's documented example id is published, not secret", "e.g. " + "AKIAIOSFODNN7" + "EXAMPLE", none},
	})
}

func TestSecretAssignmentSyntaxes(t *testing.T) {
	c := allDetectors(t)
	v := fakeToken("", 28, 11)
	cases := []spanCase{}
	for _, f := range []struct{ name, format string }{
		{"PHP concatenating assignment", "$apiKey .= '%s';"},
		{"an XML element named for a secret", "<password>%s</password>"},
		{"an XML element with a namespace", "<cfg:apiToken>%s</cfg:apiToken>"},
		{"an XML add element with key and value attributes", `<add key="ApiKey" value="%s" />`},
		{"an XML param element with name and value attributes", `<param name="password" value="%s"/>`},
		{"a JSON name/value pair", `{"name": "db_password", "value": "%s"}`},
		{"a Kubernetes env item in YAML", "env:\n  - name: DB_PASSWORD\n    value: %s\n"},
		{"Java setProperty", `props.setProperty("db.password", "%s");`},
		{"PHP define", `define('AUTH_KEY', '%s');`},
		{"a Makefile ::= assignment", "DEPLOY_KEY ::= %s"},
		{"a Makefile ?= assignment", "API_TOKEN ?= %s"},
		{"a Makefile += assignment", "API_KEYS += %s"},
		{"a Go var with a type", `var apiKey string = "%s"`},
		{"a TypeScript const with a type", `const apiKey: string = "%s";`},
		{"a Kotlin val with a type", `val apiToken: String = "%s"`},
	} {
		text := fmt.Sprintf(f.format, v)
		cases = append(cases, spanCase{f.name + " is a secret", text, one("generic-secret", v)})
	}
	for _, f := range []struct{ name, text string }{
		{"a CSRF token parameter", "csrf_token=" + v},
		{"a CSRF form field", `<input type="hidden" name="_csrf" value="` + v + `">`},
		{"a CSRF header", "X-CSRF-Token: " + v},
		{"a CSRF meta tag", `<meta name="csrf-token" content="` + v + `">`},
		{"an XSRF cookie", "Set-Cookie: XSRF-TOKEN=" + v + "; Path=/"},
		{"a Rails authenticity token", "authenticity_token=" + v},
		{"a placeholder value", "api_key: YourTokenHere"},
		{"a placeholder in angle brackets", `token = "<your-api-key>"`},
		{"an XML element that is not a secret", "<version>" + v + "</version>"},
		{"an XML element whose end tag differs", "<password>" + v + "</passphrase>"},
		{"a name/value pair that names no secret", `<add key="LogLevel" value="` + v + `" />`},
		{"a call whose first argument is not a literal", `setProperty(name, "` + v + `")`},
		{"a call whose value is an expression", `setProperty("db.password", getenv("DB_PASSWORD"))`},
		{"a comparison is not an assignment", "if password == " + v},
	} {
		cases = append(cases, spanCase{f.name + " is not", f.text, none})
	}
	runSpanCases(t, c, cases)
}

func TestSSNsAfterACue(t *testing.T) {
	c := allDetectors(t)
	runSpanCases(t, c, []spanCase{
		{"an SSN with spaces after SSN: matches", "SSN: 536 22 8714", one("us-ssn", "536 22 8714")},
		{"nine digits after social security number match", "social security number 536228714 on file", one("us-ssn", "536228714")},
		{"an SSN after Social Security No. matches", "Social Security No. 536 22 8714", one("us-ssn", "536 22 8714")},
		{"nine digits after ssn= match", "ssn=401234567", one("us-ssn", "401234567")},
		{"dashes need no cue", "on file: 536-22-8714, signed", one("us-ssn", "536-22-8714")},
		{"spaces without a cue are not an SSN", "Part 536 22 8714 is out of stock", none},
		{"nine digits without a cue are not an SSN", "Tracking 536228714 (ground)", none},
		{"a cue does not make an unissued area an SSN", "SSN: 900 22 8714", none},
	})
}

func TestPhoneNumbersWithAnExitCode(t *testing.T) {
	c := allDetectors(t)
	runSpanCases(t, c, []spanCase{
		{"00 and a country code is international", "Office: 0044 20 7946 0958 (reception)", one("phone", "0044 20 7946 0958")},
		{"00 49 with a long subscriber group", "Call 0049 30 901820 before noon.", one("phone", "0049 30 901820")},
		{"00 33 with a one-digit area code", "Tel. 0033 1 42 68 53 00", one("phone", "0033 1 42 68 53 00")},
		{"00 and a code no country has is not a phone", "ref 0012 3456 7890", none},
		{"00 and too few digits is not a phone", "code 0044 123 456", none},
	})
}

func TestE164Lengths(t *testing.T) {
	c := only(t, "phone")
	for n := 6; n <= 17; n++ {
		digits := "4" + fakeDigits(n-1, n)
		for strings.Count(digits, digits[:1]) == len(digits) || repetitive(digits) {
			digits = "4" + fakeDigits(n-1, n+100)
		}
		text := "call +" + digits + " now"
		want := n >= 10 && n <= 15 // contiguous: 10 to 15 digits (E.164 allows 15)
		t.Run(fmt.Sprintf("+ and %d contiguous digits", n), func(t *testing.T) {
			if got := len(spansOf(t, c, text)) == 1; got != want {
				t.Errorf("%q matches: %v, want %v", text, got, want)
			}
		})
		// The subscriber number in groups of four, the last of up to eight digits.
		rest, groups := digits[:max(0, n-2)], []string{}
		for len(rest) > 8 {
			groups, rest = append(groups, rest[:4]), rest[4:]
		}
		grouped := "+44 " + strings.Join(append(groups, rest), " ")
		wantGrouped := n >= 8 && n <= 15
		t.Run(fmt.Sprintf("+44 and groups, %d digits in all", n), func(t *testing.T) {
			if got := len(spansOf(t, c, "call "+grouped+" now")) == 1; got != wantGrouped {
				t.Errorf("%q matches: %v, want %v", grouped, got, wantGrouped)
			}
		})
	}
}

func TestCardBrandLengths(t *testing.T) {
	c := only(t, "credit-card")
	tests := []struct {
		brand  string
		prefix string
		ok     []int // lengths the network issues
	}{
		{"Visa", "4", []int{13, 16, 19}},
		{"Mastercard", "51", []int{16}},
		{"Mastercard 2-series", "2221", []int{16}},
		{"American Express", "37", []int{15}},
		{"Diners Club", "36", []int{14, 15, 16, 17, 18, 19}},
		{"JCB", "3528", []int{16, 17, 18, 19}},
		{"Discover", "6011", []int{16, 17, 18, 19}},
		{"Maestro", "6759", []int{13, 14, 15, 16, 17, 18, 19}},
		{"UnionPay", "62", []int{16, 17, 18, 19}},
	}
	for _, tt := range tests {
		for n := 12; n <= 20; n++ {
			num := fakeCard(tt.prefix, n, n)
			want := slices.Contains(tt.ok, n)
			t.Run(fmt.Sprintf("a %d-digit %s number matches: %v", n, tt.brand, want), func(t *testing.T) {
				if got := len(spansOf(t, c, "card "+num+" ok")) == 1; got != want {
					t.Errorf("%s matches: %v, want %v", num, got, want)
				}
			})
		}
	}
}

func TestAddressSpans(t *testing.T) {
	c := allDetectors(t)
	runSpanCases(t, c, []spanCase{
		{"an apostrophe in the local part is part of the address", "Please cc o'brien@example.ie today.", one("email", "o'brien@example.ie")},
		{"a quote before an address is not", "author='mary@example.org'", one("email", "mary@example.org")},
		{"an apostrophe inside a quoted address is", "--author='mary.o'connor@example.org'", one("email", "mary.o'connor@example.org")},
		{"an IPv4-mapped IPv6 address is one address", "client ::ffff:192.0.2.1 connected", one("ip-address", "::ffff:192.0.2.1")},
		{"an IPv4-mapped address in full form is one address", "from 0:0:0:0:0:ffff:192.0.2.1 ok", one("ip-address", "0:0:0:0:0:ffff:192.0.2.1")},
	})
}
