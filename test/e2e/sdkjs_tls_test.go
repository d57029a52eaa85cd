package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTheJavaScriptSDKsCallAnHTTPSGuardTrustingItsCAFromTheEnvironment: the official OpenAI
// and Anthropic JavaScript SDKs (sdkjs/https.mjs) with the CA in NODE_EXTRA_CA_CERTS, which
// adds to Node's roots (tls_apps_test.go says what is checked).
func TestTheJavaScriptSDKsCallAnHTTPSGuardTrustingItsCAFromTheEnvironment(t *testing.T) {
	installNodeDeps(t, sdkJSDir, filepath.Join("openai", "package.json"))
	base, caFile, prov := httpsGuard(t)
	run := func(t *testing.T, retries string, env ...string) map[string]tlsAppStep {
		return runTLSApp(t, sdkJSDir, "node", []string{"https.mjs", base, "sk-app-own-key", retries}, env...)
	}
	t.Run("with NODE_EXTRA_CA_CERTS the SDKs get the guard's answers", func(t *testing.T) {
		wantGuardAnswers(t, run(t, "2", "NODE_EXTRA_CA_CERTS="+caFile))
	})
	t.Run("without it the same app refuses the guard's certificate", func(t *testing.T) {
		before := len(prov.Requests())
		wantCertificateRefused(t, run(t, "0"), prov, before, func(s tlsAppStep) bool {
			return strings.Contains(s.Cause, "CERT") || strings.Contains(s.Cause, "VERIFY")
		})
	})
}
