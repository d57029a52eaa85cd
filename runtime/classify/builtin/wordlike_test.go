package builtin

import "testing"

// TestIsWordlikeAtTheEdgesOfItsRules pins isWordlike where each of its rules decides: values
// made of words, numbers and acronyms are wordlike (not a secret), random tokens are not,
// and each rule's threshold is met exactly by one value here.
func TestIsWordlikeAtTheEdgesOfItsRules(t *testing.T) {
	tests := []struct {
		v    string
		want bool
		why  string
	}{
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
	}
	for _, tt := range tests {
		if got := isWordlike(tt.v); got != tt.want {
			t.Errorf("isWordlike(%q) = %v, want %v: %s", tt.v, got, tt.want, tt.why)
		}
	}
}
