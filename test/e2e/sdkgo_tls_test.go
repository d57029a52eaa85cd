package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheGoSDKsCallAnHTTPSGuardTrustingItsCAFromTheEnvironment: a Go app (sdkgo/https) with
// the official openai-go and anthropic-sdk-go clients and Go's default transport, and the CA
// in SSL_CERT_FILE, which on Linux replaces the system roots that crypto/x509 loads
// (tls_apps_test.go says what is checked).
func TestTheGoSDKsCallAnHTTPSGuardTrustingItsCAFromTheEnvironment(t *testing.T) {
	app := filepath.Join(t.TempDir(), "https")
	if out, err := exec.CommandContext(testContext(t), "go", "build", "-o", app, "./sdkgo/https").CombinedOutput(); err != nil {
		t.Fatalf("go build ./sdkgo/https: %v\n%s", err, out)
	}
	base, caFile, prov := httpsGuard(t)
	run := func(t *testing.T, retries string, env ...string) map[string]tlsAppStep {
		return runTLSApp(t, ".", app, []string{base, "sk-app-own-key", retries}, env...)
	}
	t.Run("with SSL_CERT_FILE the SDKs get the guard's answers", func(t *testing.T) {
		wantGuardAnswers(t, run(t, "2", "SSL_CERT_FILE="+caFile))
	})
	t.Run("without it the same app refuses the guard's certificate", func(t *testing.T) {
		before := len(prov.Requests())
		wantCertificateRefused(t, run(t, "0"), prov, before, func(s tlsAppStep) bool {
			return strings.Contains(s.Error, "x509: certificate signed by unknown authority")
		})
	})
}
