package builtin

import (
	"context"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// The phone detector's country codes, at the edges of each zone's lengths (ITU-T E.164).
func TestCountryCodes(t *testing.T) {
	for cc, want := range map[string]bool{
		"": false, "0": false, "01": false,
		"1": true, "7": true, "12": false, "76": false,
		"44": true, "49": true, "4": false, "440": false,
		"212": true, "353": true, "21": false, "35": false, "2120": false, "3530": false,
		"999": true, "998": true, "280": false, "80": false,
	} {
		if got := countryCode(cc); got != want {
			t.Errorf("countryCode(%q) = %v, want %v", cc, got, want)
		}
	}
}

// Digit strings with a run of five equal digits, or six counting up or down by one, are
// placeholders rather than numbers; one digit shorter is not enough.
func TestRepetitiveDigits(t *testing.T) {
	for d, want := range map[string]bool{
		"4155550100": false, "4111100100": false, "4111110100": true,
		"9012349010": false, "9123456901": true, "9654329000": false, "9765432900": true,
		"11111": true, "1111": false, "123456": true, "12345": false, "654321": true, "65432": false,
	} {
		if got := repetitive(d); got != want {
			t.Errorf("repetitive(%q) = %v, want %v", d, got, want)
		}
	}
}

// French-style numbers are five pairs; pairs counting up by one are a hex dump or a
// placeholder, not a phone number.
func TestPairsCountingUpAreNoPhone(t *testing.T) {
	c := only(t, "phone")
	for text, want := range map[string]bool{
		"Appelez le 01 23 45 67 89 demain.":   true,
		"Appelez le 06 12 34 56 78 demain.":   true,
		"Appelez le 01 02 03 04 05 demain.":   false,
		"Appelez le 05 06 07 08 09 demain.":   false,
		"Appelez le 09 10 11 12 13 demain.":   false,
		"Appelez le 09 10 11 12 14 demain.":   true,
		"Appelez le 00 12 34 56 78 demain.":   false,
		"Appelez le 01 23 00 67 89 demain.":   true,
		"Appelez le 01 00 00 67 89 demain.":   false,
		"Appelez le 01.23.45.67.89 demain.":   true,
		"Appelez le 01-23-45-67-89 demain.":   true,
		"Appelez le 01 (23) 45 67 89 demain.": false,
	} {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Spans) > 0; got != want {
			t.Errorf("%q: phone found %v, want %v", text, got, want)
		}
	}
}

// International numbers written with the 00 exit code: a country calling code of one to
// three digits after 00, 9–15 digits after the 00, groups of two to eight digits (one digit
// only right after the code), a trunk "(0)" allowed.
func TestInternationalNumbersWithTheExitCode(t *testing.T) {
	c := only(t, "phone")
	for n, want := range map[string]bool{
		"001 415 555 0100":      true,
		"00353 1 234 5678":      true,
		"003531 234 5678":       false,
		"0044 123 4567":         true,
		"0044 123 456":          false,
		"0044 12345678 12345":   true,
		"0044 12345678 123456":  false,
		"0044 123456789 12":     false,
		"0044 12345678 1234":    true,
		"0044 (0) 20 7946 0958": true,
		"0044 20 7 9460 958":    false,
		"0044 20 79 4609 58":    true,
		"00 44 20 7946 0958":    false,
		"0099 20 7946 0958":     false,
		"(0044) 20 7946 0958":   false,
	} {
		res, err := c.Classify(context.Background(), classify.Input{Text: "Ring " + n + " now."})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Spans) > 0; got != want {
			t.Errorf("%q: phone found %v, want %v", n, got, want)
		}
	}
}
