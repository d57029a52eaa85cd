package builtin

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// A vendor prefix followed by an identifier's words without a digit is code, not a token:
// "mint_tokenForUserAccountBalance" names a function, whatever Mintlify's keys begin with.
// A real token of the same rule, a random base62 body, is still found: of 20,000 random
// bodies of 12 to 64 characters under such prefixes, the identifier rule refuses almost
// none.
func TestIdentifiersAfterAVendorPrefixAreNotTokens(t *testing.T) {
	c := secretsPack(t)
	found := func(text string) bool {
		res, err := c.Classify(context.Background(), classify.Input{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Spans) > 0
	}
	for _, code := range []string{
		"func mint_tokenForUserAccountBalance() {}",
		"see console-applicationSettingsPanelViewController for details",
		"call unkey_verifyTheKeyForTheRequest(req)",
		"ory_st_SessionTokenHandlerForTheIdentityServer.go",
	} {
		if found(code) {
			t.Errorf("an identifier after a vendor prefix was flagged: %q", code)
		}
	}

	rng := rand.New(rand.NewPCG(42, 7)) //nolint:gosec // test data
	refused, n := 0, 0
	for _, r := range moreVendorRules {
		if len(r.segs) != 1 || r.segs[0].cls != cB62 {
			continue
		}
		for range 20000 / 40 {
			size := r.segs[0].min + rng.IntN(r.segs[0].max-r.segs[0].min+1)
			body := make([]byte, size)
			for i := range body {
				body[i] = alphaB62[rng.IntN(len(alphaB62))]
			}
			v := string(body)
			n++
			// The refusal's clause for identifiers (vendorRule.refuses).
			if len(v) >= minGenericValue && !isOneCaseDraw(v) && !hasDigit(v) && isWordlike(v) {
				refused++
			}
		}
	}
	if n == 0 {
		t.Fatal("no base62 rule among moreVendorRules")
	}
	if share := float64(refused) / float64(n); share > 0.001 {
		t.Errorf("%d of %d random bodies (%.4f) read as an identifier's words: real tokens would be missed", refused, n, share)
	}
	t.Logf("%d of %d random base62 bodies read as identifiers", refused, n)
}
