package builtin

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// A labelled snippet: want lists the detectors that must match; every other detector must
// not.
type snippet struct {
	Text string   `json:"text"`
	Want []string `json:"want"`
	// origin says where the snippet comes from, for failure messages.
	origin string
}

// minPrecision and minRecall are the bar every detector must clear on the corpus.
const (
	minPrecision = 0.98
	minRecall    = 0.98
)

// loadCorpus reads testdata/corpus.jsonl, the tuning corpus, expands its {{placeholders}}
// into fake tokens, and adds the generated snippets.
func loadCorpus(t testing.TB) []snippet {
	t.Helper()
	return append(loadSnippets(t, "corpus.jsonl"), generatedCorpus()...)
}

// loadSnippets reads a JSON-lines file of testdata and expands its placeholders.
func loadSnippets(t testing.TB, name string) []snippet {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []snippet
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var s snippet
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		s.Text = expandPlaceholders(t, s.Text)
		s.origin = fmt.Sprintf("%s:%d", name, line)
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var placeholderRE = regexp.MustCompile(`\{\{([A-Z0-9_]+)(?::([^}]*))?\}\}`)

// expandPlaceholders replaces {{NAME:args}} with a fake value built at test time, so that no
// token-shaped string is stored in the repository.
func expandPlaceholders(t testing.TB, text string) string {
	return placeholderRE.ReplaceAllStringFunc(text, func(m string) string {
		g := placeholderRE.FindStringSubmatch(m)
		args := strings.Split(g[2], ":")
		num := func(k int) int {
			var n int
			if _, err := fmt.Sscan(args[k], &n); err != nil {
				t.Fatalf("placeholder %s: %v", m, err)
			}
			return n
		}
		b64url := alphaB62 + "-_"
		enc := base64.RawURLEncoding
		switch g[1] {
		case "AWS_ID":
			return fakeAWSKeyID("AK"+"IA", num(0))
		case "AWS_TEMP_ID":
			return fakeAWSKeyID("AS"+"IA", num(0))
		case "AWS_AROA_ID":
			return fakeAWSKeyID("AR"+"OA", num(0))
		case "AWS_A3T_ID":
			return fakeAWSKeyID("A3T"+"B", num(0))
		case "AWS_ID_LOWER":
			return strings.ToLower(fakeAWSKeyID("AK"+"IA", num(0)))
		case "AWS_DOC_ID":
			return "AKIAIOSFODNN7" + "EXAMPLE"
		case "AWS_DOC_ID2":
			return "AKIAI44QH8DHB" + "EXAMPLE"
		case "AWS_SECRET":
			return fakeBase64(40, num(0))
		case "AWS_DOC_SECRET":
			return "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
		case "GH_CLASSIC":
			return withChecksum("gh" + string("pousr"[num(0)%5]) + "_" + fakeFrom(alphaB62, 36, num(0)))
		case "GH_PAT":
			return "github" + "_pat_" + fakeFrom(alphaB62, 22, num(0)) + "_" + fakeFrom(alphaB62, 59, num(0)+1)
		case "GH_PLACEHOLDER":
			return "gh" + "p_" + strings.Repeat("x", 36)
		case "GITLAB_PLACEHOLDER":
			return "gl" + "pat-" + strings.Repeat("x", 20)
		case "ANTHROPIC_PLACEHOLDER":
			return "s" + "k-ant-" + strings.Repeat("x", 42)
		case "GITLAB":
			return "gl" + "pat-" + fakeFrom(b64url, 20, num(0))
		case "SLACK_BOT":
			return "xo" + "xb-" + fakeDigits(12, num(0)) + "-" + fakeDigits(13, num(0)+1) + "-" + fakeFrom(alphaB62, 24, num(0))
		case "SLACK_USER":
			return "xo" + "xp-" + fakeDigits(12, num(0)) + "-" + fakeDigits(12, num(0)+1) + "-" + fakeDigits(13, num(0)+2) + "-" + fakeHex(32, num(0))
		case "SLACK_APP":
			return "xo" + "xa-2-" + fakeDigits(12, num(0)) + "-" + fakeFrom(alphaB62, 30, num(0))
		case "OPENAI_LEGACY":
			return "s" + "k-" + fakeFrom(alphaB62, 20, num(0)) + "T3Blbk" + "FJ" + fakeFrom(alphaB62, 20, num(0)+1)
		case "OPENAI_PROJ":
			return "s" + "k-proj-" + fakeFrom(b64url, 120, num(0))
		case "OPENAI_SVC":
			return "s" + "k-svcacct-" + fakeFrom(b64url, 100, num(0))
		case "ANTHROPIC":
			return "s" + "k-ant-api03-" + fakeFrom(b64url, 93, num(0)) + "AA"
		case "ANTHROPIC_ADMIN":
			return "s" + "k-ant-admin01-" + fakeFrom(b64url, 93, num(0)) + "AA"
		case "STRIPE":
			return "sk_" + "live_" + fakeFrom(alphaB62, 24, num(0))
		case "PEM":
			return fakePEM(args[0], num(1))
		case "PEM_OPEN":
			return pemHeader(args[0]) + "\n" + fakeBase64(64, num(1)) + "\n" + fakeBase64(64, num(1)+1)
		case "PEM_JSON":
			return strings.ReplaceAll(fakePEM("", num(0)), "\n", `\n`)
		case "PEM_PUBLIC":
			return "-----BEGIN PUBLIC KEY-----\n" + fakeBase64(64, 1) + "\n-----END PUBLIC KEY-----"
		case "PEM_CERT":
			return "-----BEGIN CERTIFICATE-----\n" + fakeBase64(64, 2) + "\n-----END CERTIFICATE-----"
		case "JWT":
			return fakeJWT(num(0))
		case "JWT_NONE":
			return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
				enc.EncodeToString([]byte(`{"sub":"fake","admin":true}`)) + "."
		case "JWT_PREFIX":
			j := fakeJWT(num(0))
			return j[:strings.IndexByte(j, '.')+12]
		case "JWT_HEADER":
			return enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
		case "AWS_X_ID":
			return "AK" + "IA" + strings.Repeat("X", 16)
		case "SLACK_TOKEN": // {{SLACK_TOKEN:kind:seed}}: xox<kind>- in the current layouts
			if args[0] == "p" {
				return "xo" + "xp-" + fakeDigits(12, num(1)) + "-" + fakeDigits(12, num(1)+1) + "-" + fakeDigits(13, num(1)+2) + "-" + fakeHex(32, num(1))
			}
			return "xo" + "x" + args[0] + "-" + fakeDigits(12, num(1)) + "-" + fakeDigits(13, num(1)+1) + "-" + fakeFrom(alphaB62, 24, num(1))
		case "SLACK_LEGACY":
			return "xo" + "xp-" + fakeDigits(10, num(0)) + "-" + fakeDigits(10, num(0)+1) + "-" + fakeHex(10, num(0))
		case "SLACK_XAPP":
			return "xa" + "pp-1-A" + fakeFrom(alphaUpper+alphaDigit, 10, num(0)) + "-" + fakeDigits(13, num(0)) + "-" + fakeHex(64, num(0))
		case "SLACK_XOXE":
			return "xo" + "xe.xoxp-1-" + fakeFrom(alphaB62, 140, num(0))
		case "SLACK_XOXE_REFRESH":
			return "xo" + "xe-1-" + fakeFrom(alphaB62, 140, num(0))
		case "SLACK_XXX":
			return "xo" + "xb-" + fakeDigits(12, 1) + "-" + fakeDigits(13, 2) + "-" + strings.Repeat("X", 24)
		case "SLACK_HASH":
			return "xo" + "xp-" + fakeDigits(12, 3) + "-" + fakeDigits(12, 4) + "-" + strings.Repeat("#", 13) + "-" + strings.Repeat("#", 32)
		case "PGP_PRIV":
			return fakePGP("PRIV"+"ATE", num(0))
		case "PGP_PUB":
			return fakePGP("PUBLIC", num(0))
		case "PEM_EMPTY":
			return pemHeader(args[0]) + "\n" + pemFooter(args[0])
		case "PEM_DOTS":
			return pemHeader(args[0]) + "\n...\n" + pemFooter(args[0])
		case "JWT_PAD":
			return fakePaddedJWT(num(0))
		case "RAND":
			return fakeToken("", num(0), num(1))
		case "HEX":
			return fakeHex(num(0), num(1))
		case "UPNUM": // {{UPNUM:n:seed}}: capital letters and digits
			return fakeFrom(alphaUpper+alphaDigit, num(0), num(1))
		case "LOWNUM": // {{LOWNUM:n:seed}}: small letters and digits
			return fakeFrom(alphaLower+alphaDigit, num(0), num(1))
		case "BASE32": // {{BASE32:n:seed}}: RFC 4648 base32 without padding (TOTP seeds)
			return fakeFrom(alphaUpper+"234567", num(0), num(1))
		case "B64":
			v := []byte(fakeBase64(num(0), num(1)))
			if v[0] == '+' || v[0] == '/' {
				v[0] = 'Q'
			}
			return string(v)
		}
		if v, ok := expandSecretPlaceholder(g[1], args, num); ok {
			return v
		}
		t.Fatalf("unknown placeholder %s", m)
		return ""
	})
}

// generatedCorpus adds deterministic snippets built from generators: valid and invalid card
// numbers and IBANs, SSNs, addresses, phones and tokens in sentence templates.
func generatedCorpus() []snippet {
	var out []snippet
	add := func(origin, text string, want ...string) {
		out = append(out, snippet{Text: text, Want: want, origin: "generated " + origin})
	}
	cards := []struct {
		prefix string
		n      int
	}{{"4", 16}, {"51", 16}, {"52", 16}, {"53", 16}, {"54", 16}, {"55", 16}, {"2221", 16}, {"2720", 16},
		{"34", 15}, {"37", 15}, {"6011", 16}, {"65", 16}, {"3528", 16}, {"3589", 19}, {"36", 14},
		{"4", 13}, {"4", 19}, {"62", 16}, {"300", 14}, {"6759", 16}}
	templates := []string{"Card on file: %s.", "Please charge %s for the order.", "cc=%s", "the number %s was declined", "%s"}
	for k, c := range cards {
		num := fakeCard(c.prefix, c.n, k)
		format := num
		switch {
		case c.n == 15 && k%2 == 0:
			format = num[:4] + " " + num[4:10] + " " + num[10:]
		case k%3 == 1:
			format = group4(num, " ")
		case k%3 == 2 && c.n != 15:
			format = group4(num, "-")
		}
		add("card", fmt.Sprintf(templates[k%len(templates)], format), "credit-card")
		add("card with a bad check digit", fmt.Sprintf(templates[k%len(templates)], group4(fakeCardBadLuhn(c.prefix, c.n, k), " ")))
	}
	ibans := []struct {
		cc string
		n  int
	}{{"DE", 22}, {"FR", 27}, {"GB", 22}, {"ES", 24}, {"IT", 27}, {"NL", 18}, {"BE", 16}, {"AT", 20}, {"PL", 28},
		{"PT", 25}, {"SE", 24}, {"CH", 21}, {"IE", 22}, {"DK", 18}, {"NO", 15}, {"FI", 18}, {"LU", 20}, {"CZ", 24}}
	for k, c := range ibans {
		iban := fakeIBAN(c.cc, fakeDigits(c.n-4, 100+k))
		text := iban
		if k%2 == 0 {
			text = group4(iban, " ")
		}
		add("iban", "Transfer to "+text+" by Friday.", "iban")
		bad := []byte(iban)
		bad[len(bad)-1] = '0' + (bad[len(bad)-1]-'0'+3)%10
		add("iban with a bad checksum", "Transfer to "+group4(string(bad), " ")+" by Friday.")
	}
	for k := range 10 {
		add("ssn", "SSN "+fakeSSN(k)+" is on the form.", "us-ssn")
	}
	for k := range 10 {
		r := fakeRand(200 + k)
		ip := fmt.Sprintf("%d.%d.%d.%d", 1+r.IntN(223), r.IntN(256), r.IntN(256), 1+r.IntN(254))
		add("ipv4", "Blocked "+ip+" after 5 attempts.", "ip-address")
		add("version", fmt.Sprintf("Upgrade from %d.%d.%d to %d.%d.%d.%d.%d.", r.IntN(9), r.IntN(20), r.IntN(30), r.IntN(9), r.IntN(20), r.IntN(30), r.IntN(9), r.IntN(9)))
		v6 := fmt.Sprintf("2001:db8:%x:%x::%x", r.IntN(65536), r.IntN(65536), 1+r.IntN(65535))
		add("ipv6", "Route via "+v6+" now.", "ip-address")
	}
	for k := range 10 {
		r := fakeRand(300 + k)
		a, e, n := 200+r.IntN(800), 200+r.IntN(800), r.IntN(10000)
		formats := []string{"(%d) %d-%04d", "%d-%d-%04d", "%d.%d.%04d", "+1 %d %d %04d", "1-%d-%d-%04d"}
		add("phone", "Call "+fmt.Sprintf(formats[k%len(formats)], a, e, n)+" today.", "phone")
	}
	for k := range 8 {
		local := []string{"sam", "j.doe", "ops+alerts", "first.last", "a_b", "x9"}[k%6]
		domain := []string{"example.com", "mail.example.org", "example.co.uk", "corp.example.net"}[k%4]
		add("email", fmt.Sprintf("Write to %s%d@%s soon.", local, k, domain), "email")
	}
	for k := range 3 {
		add("tokens", "export GITHUB_TOKEN="+withChecksum("gh"+"s_"+fakeFrom(alphaB62, 36, 400+k)), "github-token")
		add("tokens", "key "+fakeAWSKeyID("AK"+"IA", 410+k)+" in the log", "aws-access-key")
		add("tokens", "jwt: "+fakeJWT(420+k), "jwt")
		add("tokens", "SLACK="+"xo"+"xb-"+fakeDigits(11, 430+k)+"-"+fakeDigits(13, 431+k)+"-"+fakeFrom(alphaB62, 24, 432+k), "slack-token")
		add("tokens", "api_key = '"+fakeToken("", 24+8*k, 440+k)+"'", "generic-secret")
		add("tokens", "Use "+"gl"+"pat-"+fakeFrom(alphaB62, 20, 450+k)+" for CI.", "gitlab-token")
		add("tokens", "OPENAI_API_KEY="+"s"+"k-proj-"+fakeFrom(alphaB62+"-_", 80, 460+k), "openai-key")
		add("tokens", "ANTHROPIC_API_KEY="+"s"+"k-ant-api03-"+fakeFrom(alphaB62+"-_", 93, 470+k)+"AA", "anthropic-key")
		add("tokens", "aws_secret_access_key="+fakeBase64(40, 480+k), "aws-secret-key")
		add("tokens", fakePEM([]string{"RSA ", "EC ", "OPENSSH "}[k], 490+k), "private-key")
	}
	return out
}

// detectorStats counts, for one detector, how the corpus fared.
type detectorStats struct{ tp, fp, fn int }

func (s detectorStats) precision() float64 {
	if s.tp+s.fp == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fp)
}

func (s detectorStats) recall() float64 {
	if s.tp+s.fn == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fn)
}

// allDetectors returns a classifier with every detector, in canonical order.
func allDetectors(t testing.TB) *Classifier {
	t.Helper()
	c, err := New(Config{Detectors: DetectorNames()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// matched returns the categories that matched text.
func matched(t testing.TB, c *Classifier, text string) []string {
	t.Helper()
	r, err := c.Classify(context.Background(), classify.Input{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, s := range r.Scores {
		if s == 1 {
			got = append(got, c.categories[i])
		}
	}
	return got
}

// scoreCorpus runs every detector over the snippets and counts, per detector, the snippets it
// matched that want it (TP), matched that do not (FP) and missed (FN). It logs each miss and
// false positive, then the table.
func scoreCorpus(t *testing.T, name string, corpus []snippet) map[string]*detectorStats {
	t.Helper()
	c := allDetectors(t)
	stats := map[string]*detectorStats{}
	for _, n := range DetectorNames() {
		stats[n] = &detectorStats{}
	}
	negatives := 0
	for _, s := range corpus {
		for _, w := range s.Want {
			if stats[w] == nil {
				t.Fatalf("%s: unknown detector %q in want", s.origin, w)
			}
		}
		if len(s.Want) == 0 {
			negatives++
		}
		got := matched(t, c, s.Text)
		for _, n := range DetectorNames() {
			st := stats[n]
			want, have := slices.Contains(s.Want, n), slices.Contains(got, n)
			switch {
			case want && have:
				st.tp++
			case have:
				st.fp++
				t.Logf("%s: false positive %s in %q", s.origin, n, s.Text)
			case want:
				st.fn++
				t.Logf("%s: missed %s in %q", s.origin, n, s.Text)
			}
		}
	}
	t.Logf("%s: %d snippets, %d of them must match nothing", name, len(corpus), negatives)
	t.Logf("%-17s %5s %4s %4s %9s %7s", "detector", "TP", "FP", "FN", "precision", "recall")
	for _, n := range DetectorNames() {
		st := stats[n]
		t.Logf("%-17s %5d %4d %4d %9.3f %7.3f", n, st.tp, st.fp, st.fn, st.precision(), st.recall())
	}
	return stats
}

// TestCorpusPrecisionRecall scores every detector over the tuning corpus and fails when a
// detector's precision or recall is below 0.98. Run with -v to see the table.
func TestCorpusPrecisionRecall(t *testing.T) {
	corpus := loadCorpus(t)
	if len(corpus) < 300 {
		t.Fatalf("corpus has %d snippets, want at least 300", len(corpus))
	}
	stats := scoreCorpus(t, "tuning corpus", corpus)
	for _, name := range DetectorNames() {
		st := stats[name]
		if st.tp == 0 {
			t.Errorf("%s: no positive example in the corpus", name)
		}
		if st.precision() < minPrecision || st.recall() < minRecall {
			t.Errorf("%s: precision %.3f, recall %.3f; want both ≥ %.2f", name, st.precision(), st.recall(), minPrecision)
		}
	}
}

// TestHeldOutPrecisionRecall reports every detector's precision and recall over each held-out
// file: heldout.jsonl, and heldout2.jsonl — values assigned to secret-shaped keys in
// configuration and code, half of them secrets of one letter case and digits (API keys,
// passwords, base32 TOTP seeds), half non-secrets under the same keys, written before the
// generic-secret change it measures. It holds them to no bar: a file measures the detectors
// on text they were not tuned on, and a bar would invite tuning on it. It fails only when a
// file is malformed or too small to say anything. Run with -v to see the tables.
func TestHeldOutPrecisionRecall(t *testing.T) {
	for _, f := range []struct {
		name string
		min  int
	}{{"heldout.jsonl", 120}, {"heldout2.jsonl", 80}} {
		t.Run(f.name, func(t *testing.T) {
			corpus := loadSnippets(t, f.name)
			if len(corpus) < f.min {
				t.Fatalf("held-out file has %d snippets, want at least %d", len(corpus), f.min)
			}
			scoreCorpus(t, f.name, corpus)
		})
	}
}
