package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/tlsreload/tlstest"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

const (
	tlsEmail  = "ana.lima@example.org"
	tlsPolicy = `
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: pii}
spec:
  builtin:
    packs: [pii]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: redact-pii}
spec:
  mode: Enforce
  classifierRef: {name: pii}
  phases: [Stream, Output]
  threshold: 0.5
  action: Redact
  reason: Personal data is not shared.
`
)

// TestTheJavaScriptSDKsCallAnHTTPSGuardTrustingItsCAFromTheEnvironment is an app's side of
// a SharedGuard with spec.tls, as docs/shared-guard.md tells Node apps to set it up: the
// official OpenAI and Anthropic SDKs with the guard's https base URL, and the CA that
// issued the guard's certificate in NODE_EXTRA_CA_CERTS (which adds to Node's roots). The
// guard is the real binary serving --tls-cert-file and --tls-key-file. With the variable
// the SDKs get the guard's redacted answers, streamed and not; without it, the same app
// is refused by its own TLS check, so the trust came from the variable.
func TestTheJavaScriptSDKsCallAnHTTPSGuardTrustingItsCAFromTheEnvironment(t *testing.T) {
	installNodeDeps(t, sdkJSDir, filepath.Join("openai", "package.json"))
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "team-a guard CA")
	certPEM, keyPEM := ca.Issue(t, 2, "localhost")
	caFile, certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for name, b := range map[string][]byte{
		caFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}),
		certFile: certPEM,
		keyFile:  keyPEM,
	} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	prov := fakeprovider.New(fakeprovider.WithDefault(fakeprovider.Reply("Write to ", tlsEmail[:7], tlsEmail[7:]+" and", " ask for Ana.")))
	t.Cleanup(prov.Close)
	g := startGuard(t, tlsPolicy, upstream(prov.URL), flags("--tls-cert-file", certFile, "--tls-key-file", keyFile))
	// The certificate names localhost, as a SharedGuard's names its Service; the guard
	// listens on 127.0.0.1.
	_, port, _ := strings.Cut(strings.TrimPrefix(g.URL, "http://"), ":")
	base := "https://localhost:" + port

	type step struct {
		Step   string `json:"step"`
		Text   string `json:"text"`
		Error  string `json:"error"`
		Cause  string `json:"cause"`
		Status int    `json:"status"`
	}
	run := func(t *testing.T, retries string, extraEnv ...string) map[string]step {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", "https.mjs", base, "sk-app-own-key", retries)
		cmd.Dir = sdkJSDir
		// The app's environment holds no CA setting but the one under test.
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "NODE_EXTRA_CA_CERTS=") && !strings.HasPrefix(kv, "NODE_TLS_REJECT_UNAUTHORIZED=") &&
				!strings.HasPrefix(kv, "SSL_CERT_FILE=") && !strings.HasPrefix(kv, "NODE_OPTIONS=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, extraEnv...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node https.mjs: %v\n%s", err, stderr.String())
		}
		steps := map[string]step{}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			var s step
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatalf("the app printed %q", sc.Text())
			}
			steps[s.Step] = s
		}
		return steps
	}
	names := []string{"chat", "chat stream", "messages stream"}

	t.Run("with NODE_EXTRA_CA_CERTS the SDKs get the guard's answers", func(t *testing.T) {
		steps := run(t, "2", "NODE_EXTRA_CA_CERTS="+caFile)
		for _, name := range names {
			s, ok := steps[name]
			switch {
			case !ok:
				t.Errorf("%s: the app printed nothing", name)
			case s.Error != "":
				t.Errorf("%s: %+v", name, s)
			case strings.Contains(s.Text, tlsEmail) || !strings.Contains(s.Text, "[REDACTED:") || !strings.HasPrefix(s.Text, "Write to "):
				t.Errorf("%s: %q, want the answer with the address redacted", name, s.Text)
			}
		}
	})

	t.Run("without it the same app refuses the guard's certificate", func(t *testing.T) {
		before := len(prov.Requests())
		steps := run(t, "0")
		for _, name := range names {
			s, ok := steps[name]
			switch {
			case !ok:
				t.Errorf("%s: the app printed nothing", name)
			case s.Error == "" || s.Status != 0:
				t.Errorf("%s: %+v, want a connection error", name, s)
			case !strings.Contains(s.Cause, "CERT") && !strings.Contains(s.Cause, "VERIFY"):
				t.Errorf("%s: the cause is %q, want a certificate verification error", name, s.Cause)
			}
		}
		if n := len(prov.Requests()) - before; n != 0 {
			t.Errorf("the provider saw %d requests from an app that refused the guard", n)
		}
	})
}
