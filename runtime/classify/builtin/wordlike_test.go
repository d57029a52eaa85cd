package builtin

import (
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// TestIsWordlikeAtTheEdgesOfItsRules pins isWordlike where each of its rules decides: values
// made of words, numbers and acronyms are wordlike (not a secret), random tokens are not,
// and each rule's threshold is met exactly by one value here.
func TestIsWordlikeAtTheEdgesOfItsRules(t *testing.T) {
	checkEdges(t, "isWordlike", isWordlike, []edge{
		{"test/env-east_k8s.Private", true, "words, and one short hump cut out of \"k8s\""},
		{"http/s3", true, "\"s\" cut out of \"s3\" is the only short hump"},
		{"my.v2-Qdv", true, "one hump without a vowel (\"Qdv\") among four is not enough to be random"},
		{"krlGSHfj", false, "\"krl\" and \"fj\"… two of three humps cannot be spoken"},
		{"Qdv-Xkw-test-prod-env-worst", false, "two unspeakable humps in six: exactly a third"},
		{"Y6JJXVVNWHwZLHCU", false, "\"JJXVVNWH\" then \"w\": an acronym cut before a lower-case letter, short humps everywhere"},
		{"LvgHtzshYjcvTYrSafBuuMYSlxwAKXMA", false, "case changes every few letters in a varied value"},
		{"Bake1Dine2Fort3Gush4Jinx5Kelp6Mavy7Quiz8", false, "humps of exactly four letters, entropy 4.9 bits per byte"},
		{"2GyeNDJaeyHLSRuo1iiVBaou1FTP2KQM", false, "short humps and entropy of exactly 4.5 bits per byte (16 bytes once, 8 twice)"},
		{"1!2@3#4$5%6^7&8*9(0)-=+[]{};:,.<>?", true, "no letters, so no humps: the other checks judge it"},
	})
}

// edge is a value at the edge of a rule: what the rule says of it, and why.
type edge struct {
	v    string
	want bool
	why  string
}

// checkEdges checks what f, the rule called name, says of each value.
func checkEdges(t *testing.T, name string, f func(string) bool, edges []edge) {
	t.Helper()
	for _, e := range edges {
		if got := f(e.v); got != e.want {
			t.Errorf("%s(%q) = %v, want %v: %s", name, e.v, got, e.want, e.why)
		}
	}
}

// TestOneCaseRandomValuesAreSecrets: a random value of capitals and digits, small letters and
// digits, or base32, assigned to a key that names a secret, is reported as generic-secret,
// and identifiers of one case with a number or two in them are not. Before isOneCaseDraw,
// generic-secret missed 17–34 % of these capital-and-digit values of 24 to 40 characters
// (isWordlike read them as acronyms; see testdata/README.md).
func TestOneCaseRandomValuesAreSecrets(t *testing.T) {
	c, err := New(Config{Detectors: []string{"generic-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	found := func(v string) bool {
		res, err := c.Classify(t.Context(), classify.Input{Text: "API_KEY=" + v})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Spans) == 1 && res.Spans[0].Start == len("API_KEY=") && res.Spans[0].End == len("API_KEY=")+len(v)
	}
	// want is the least share found, in percent, at 16, 24, 32 and 40 characters. A short
	// draw switches too seldom between letters and digits to be told from an identifier one
	// time in ten; base32, with six digits among 32 characters, switches less still.
	for _, alphabet := range []struct {
		name, chars string
		want        [4]int
	}{
		{"capitals and digits", alphaUpper + alphaDigit, [4]int{85, 95, 95, 95}},
		{"small letters and digits", alphaLower + alphaDigit, [4]int{85, 95, 95, 95}},
		{"base32", alphaUpper + "234567", [4]int{70, 85, 95, 95}},
	} {
		for k, n := range []int{16, 24, 32, 40} {
			const draws = 200
			hits := 0
			for seed := range draws {
				// Drawn uniformly: fakeFrom's forced characters would put a digit in
				// every value, more switches than a draw of capitals and digits has.
				if found(string(fakeDraw(fakeRand(50000+1000*n+seed), alphabet.chars, n))) {
					hits++
				}
			}
			t.Logf("%s, %d characters: %d of %d", alphabet.name, n, hits, draws)
			if hits < draws*alphabet.want[k]/100 {
				t.Errorf("%s, %d characters: found %d of %d, want at least %d %%", alphabet.name, n, hits, draws, alphabet.want[k])
			}
		}
	}
	for _, v := range []string{"AES256GCM", "utf8mb4_unicode_ci", "BILLING2025", "HMACSHA256", "X25519", "RSA4096SHA256", "OAUTH2BEARER"} {
		if found(v) {
			t.Errorf("API_KEY=%s: reported as a secret", v)
		}
	}
}

// TestIsOneCaseDrawAtItsThresholds pins isOneCaseDraw where it decides: four switches between
// letters and digits, at least one every seven characters, letters of one case, nothing but
// letters and digits.
func TestIsOneCaseDrawAtItsThresholds(t *testing.T) {
	four := strings.Repeat("Q", 12) + "7" + strings.Repeat("Q", 12) + "7QQ" // 28 characters, 4 switches
	checkEdges(t, "isOneCaseDraw", isOneCaseDraw, []edge{
		{four, true, "four switches in 28 characters: one every seven"},
		{four + "Q", false, "four switches in 29 characters: fewer than one every seven"},
		{strings.ToLower(four), true, "small letters as well as capitals"},
		{"QQQ7QQQ7", false, "three switches"},
		{"Q7Q7q7Q7Q7Q7", false, "letters of both cases"},
		{"Q7Q7Q7-Q7Q7Q7", false, "a byte that is neither a letter nor a digit"},
		{"123456789012", false, "no letters"},
		{"7Q7Q7Q7Q", true, "switches counted from a leading digit"},
	})
}

// TestOneCaseDrawEntropyThreshold pins the entropy a one-case draw needs: 0.72·log2(n) bits,
// at most 3.6 (a value of the same shape but mixed case needs 0.8·log2(n), at most 4.0).
func TestOneCaseDrawEntropyThreshold(t *testing.T) {
	checkEdges(t, "isGenericSecret", isGenericSecret, []edge{
		{"Q7R8X9Y6Q7R8X9Q7", true, "16 characters, 2.91 bits: above 0.72·log2(16) = 2.88"},
		{"Q7R8X9Q7R8X9Q7R8", false, "16 characters, 2.56 bits: below 2.88"},
		{"Q7R8X9Y6Z5W4V3Q7R8X9Y6Z5W4V3Q7R8", true, "32 characters, 3.78 bits: above 0.72·log2(32) = 3.6"},
		{"Q7R8X9Y6Z5W4Q7R8X9Y6Z5W4Q7R8X9Y6", false, "32 characters, 3.56 bits: below 3.6"},
		{"Q7R8X9Y6Z5W4VQ7R8X9Y6Z5W4VQ7R8X9Y6Z5W4VQ", true, "40 characters, 3.70 bits: below 0.72·log2(40) = 3.83, above the cap of 3.6"},
		{"Q7R8X9Y6Z5W4Q7R8X9Y6Z5W4Q7R8X9Y6Z5W4Q7R8", false, "40 characters, 3.57 bits: below the cap"},
	})
}
