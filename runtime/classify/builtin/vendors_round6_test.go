package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// TestRound6Formats (issue 42, round 6): the prefixes that begin with a small letter and
// have no separator (NuGet's oy2, crates.io's cio, JFrog's reference tokens, Databricks'
// dapi), Azure's identifiable keys found at their signature, and Entra ID client secrets
// that begin with a symbol of their alphabet are found whole in prose, under a key and in a
// JSON string; their near misses (a body one character short or long, a body written by
// hand, the signature at another offset) and ordinary words that begin like a prefix are not.
// Every value is built here from random draws; none is a real key.
func TestRound6Formats(t *testing.T) {
	c := secretsPack(t)
	spans := func(text string) []classify.Span {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return res.Spans
	}
	b62 := func(n, seed int) string { return fakeFrom(alphaB62, n, seed) }
	b64 := func(n, seed int) string { return fakeBase64(n, seed) }
	low := func(n, seed int) string { return fakeFrom(alphaLower+alphaDigit, n, seed) }
	cases := []struct {
		kind  string
		token string
		near  []string // near misses of the token, each flagged by nothing
	}{
		{kind: "nuget-api-key", token: "oy2" + low(43, 1), near: []string{"oy2" + low(42, 2), "oy2" + low(44, 3), "oy2" + strings.Repeat("x", 43)}},
		{kind: "cratesio-token", token: "cio" + b62(32, 4), near: []string{"cio" + b62(31, 5), "cio" + b62(33, 6), "cio" + strings.Repeat("X", 32)}},
		{kind: "cratesio-token", token: "cio7" + b62(31, 7)},
		{kind: "jfrog-reference-token", token: "cmVmdGtu" + b64(56, 8), near: []string{"cmVmdGtu" + b64(55, 9), "cmVmdGtu" + b64(57, 10), "cmVmdGtu" + strings.Repeat("A", 56)}},
		{kind: "databricks-token", token: "dapi" + fakeHex(32, 11), near: []string{"dapi" + fakeHex(31, 12), "dapi" + fakeHex(33, 13)}},
		{kind: "databricks-token", token: "dapi" + fakeHex(32, 14) + "-2"},
		{kind: "azure-ai-services-key", token: b62(52, 15) + "JQQJ99" + b62(26, 16), near: []string{b62(51, 17) + "JQQJ99" + b62(26, 18), b62(52, 19) + "JQQJ99" + b62(27, 20), strings.Repeat("x", 52) + "JQQJ99" + strings.Repeat("x", 26)}},
		{kind: "azure-ai-services-key", token: b62(52, 21) + "JQQJ9D" + b62(28, 22) + "=="},
		{kind: "azure-search-key", token: b62(42, 23) + "AzSe" + "B" + b62(5, 24), near: []string{b62(41, 25) + "AzSeB" + b62(5, 26), b62(42, 27) + "AzSeB" + b62(6, 28)}},
		{kind: "azure-container-registry-key", token: b64(42, 29) + "+ACR" + "C" + b64(5, 30), near: []string{b64(43, 31) + "+ACRC" + b64(5, 32)}},
		{kind: "azure-storage-key", token: b64(76, 33) + "+ASt" + b64(5, 34) + "g==", near: []string{b64(75, 35) + "+ASt" + b64(5, 36) + "g==", b64(76, 37) + "+ASt" + b64(7, 38) + "=="}},
		{kind: "azure-cosmosdb-key", token: b64(76, 39) + "ACDb" + b64(5, 40) + "w=="},
		{kind: "azure-batch-key", token: b64(76, 41) + "+BMC" + b64(5, 42) + "Q=="},
		{kind: "azure-apim-key", token: b64(76, 43) + "APIM" + b64(5, 44) + "A=="},
		{kind: "azure-ml-key", token: b64(76, 45) + "+AMC" + b64(5, 46) + "g=="},
		{kind: "azure-function-key", token: fakeFrom(alphaB62+"-_", 44, 47) + "AzFu" + fakeFrom(alphaB62+"-_", 5, 48) + "w=="},
		{kind: "azure-service-bus-key", token: b64(33, 49) + "+ASb" + b64(5, 50) + "Q=", near: []string{b64(34, 51) + "+ASb" + b64(5, 52) + "Q="}},
		{kind: "azure-event-hub-key", token: b64(33, 53) + "+AEh" + b64(5, 54) + "g="},
		{kind: "azure-relay-key", token: b64(33, 55) + "+ARm" + b64(5, 56) + "A="},
		{kind: "azure-iot-key", token: b64(33, 57) + "AIoT" + b64(5, 58) + "w="},
		{kind: "azure-redis-key", token: b62(33, 59) + "AzCa" + "K" + b62(5, 60) + "="},
		{kind: "entra-client-secret", token: "_V2" + "8Q~" + fakeFrom(alphaB62+"-_.~", 34, 61)},
		{kind: "entra-client-secret", token: "~Gg" + "8Q~" + fakeFrom(alphaB62+"-_.~", 34, 62)},
		{kind: "entra-client-secret", token: "GN." + "7Q~" + fakeFrom(alphaB62+"-_.~", 34, 63)},
	}
	kinds := map[string]bool{}
	for _, tc := range cases {
		kinds[tc.kind] = true
		v := tc.token
		for _, text := range []string{v, "I found " + v + " in the log", "token = \"" + v + "\"\n", "export API_KEY=" + v + "\n", `{"key": "` + v + `"}`} {
			a := strings.Index(text, v)
			if !covered(spans(text), a, a+len(v)) {
				t.Errorf("%s: %q not redacted whole: %v", tc.kind, text, spans(text))
			}
		}
		for _, nm := range tc.near {
			for _, text := range []string{"I found " + nm + " in the log", "tokens look like " + nm + " in the docs"} {
				if sp := spans(text); len(sp) > 0 {
					t.Errorf("%s: near miss %q flagged: %v", tc.kind, text, sp)
				}
			}
		}
	}
	for _, r := range append(round6VendorRules[:len(round6VendorRules):len(round6VendorRules)], databricksRules...) {
		if !kinds[r.kind] {
			t.Errorf("rule %s (%s) has no case", r.kind, r.prefix)
		}
	}
	for _, z := range azureKeys {
		if !kinds[z.kind] {
			t.Errorf("Azure key %s (%s) has no case", z.kind, z.marker)
		}
	}
	// Ordinary words and identifiers that begin like a prefix, and signatures in text.
	for _, text := range []string{
		"Cioffi and cioccolato2 are words; so is ciottolo9 in a list of cio3 items.",
		"the oy2 prefix is what NuGet keys begin with, e.g. oy2 followed by 43 characters",
		"dapi2 and dapi3 are identifiers, as is cmVmdGtu alone",
		"var cio2Config = loadConfig(oy2Path, dapi4Host)",
		"JQQJ99 is the signature of a CASK key; AzSe, +ACR and +ASt are others.",
		"Use the API, the APIM gateway (Azure API Management) and AzCa keys, AIoT hubs.",
		"base64 " + b64(60, 64) + " ends here",
		"sha256:" + fakeHex(64, 65) + " and crc " + fakeHex(8, 66),
		"version oy2" + strings.Repeat("a", 43) + " is a word run",
		// A signature at its offset inside a longer run of base64 is not a key.
		"blob " + b64(20, 67) + "/" + b64(76, 68) + "+ASt" + b64(5, 69) + "g==",
		"blob " + b64(20, 70) + "+" + b64(33, 71) + "+ASb" + b64(5, 72) + "Q= end",
	} {
		if sp := spans(text); len(sp) > 0 {
			t.Errorf("%q flagged: %v", text, sp)
		}
	}
}
