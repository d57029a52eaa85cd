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

// An app's side of a SharedGuard with spec.tls, as docs/shared-guard.md tells apps to set it
// up: the official SDKs with the guard's https base URL, and the CA that issued the guard's
// certificate in the variable the app's runtime reads. The guard is the real binary serving
// --tls-cert-file and --tls-key-file. With the variable the SDKs get the guard's redacted
// answers, streamed and not; without it, the same app is refused by its own TLS check, so
// the trust came from the variable.

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

// tlsAppSteps are the calls every TLS app makes, in its output's step names.
var tlsAppSteps = []string{"chat", "chat stream", "messages stream"}

// tlsCAVariables are the CA settings of the runtimes the apps run on; an app's environment
// holds none of them but the one under test.
var tlsCAVariables = []string{"NODE_EXTRA_CA_CERTS=", "NODE_TLS_REJECT_UNAUTHORIZED=", "NODE_OPTIONS=", "SSL_CERT_FILE=", "SSL_CERT_DIR="}

// httpsGuard starts the guard binary serving HTTPS with a certificate for localhost issued
// by a new CA, in front of a provider whose answer holds an address. It returns the guard's
// https base URL, the CA's PEM file and the provider.
func httpsGuard(t *testing.T) (base, caFile string, prov *fakeprovider.Provider) {
	t.Helper()
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
	prov = fakeprovider.New(fakeprovider.WithDefault(fakeprovider.Reply("Write to ", tlsEmail[:7], tlsEmail[7:]+" and", " ask for Ana.")))
	t.Cleanup(prov.Close)
	g := startGuard(t, tlsPolicy, upstream(prov.URL), flags("--tls-cert-file", certFile, "--tls-key-file", keyFile))
	// The certificate names localhost, as a SharedGuard's names its Service; the guard
	// listens on 127.0.0.1.
	_, port, _ := strings.Cut(strings.TrimPrefix(g.URL, "http://"), ":")
	return "https://localhost:" + port, caFile, prov
}

// tlsAppStep is one line of a TLS app's output.
type tlsAppStep struct {
	Step   string `json:"step"`
	Text   string `json:"text"`
	Error  string `json:"error"`
	Cause  string `json:"cause"`
	Status int    `json:"status"`
}

// runTLSApp runs an app with no CA setting in its environment but extraEnv, and returns its
// steps by name.
func runTLSApp(t *testing.T, dir, name string, args []string, extraEnv ...string) map[string]tlsAppStep {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		keep := true
		for _, v := range tlsCAVariables {
			keep = keep && !strings.HasPrefix(kv, v)
		}
		if keep {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, stderr.String())
	}
	steps := map[string]tlsAppStep{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var s tlsAppStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("the app printed %q", sc.Text())
		}
		steps[s.Step] = s
	}
	return steps
}

// wantGuardAnswers checks that every step got the guard's answer with the address redacted.
func wantGuardAnswers(t *testing.T, steps map[string]tlsAppStep) {
	t.Helper()
	for _, name := range tlsAppSteps {
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
}

// wantCertificateRefused checks that every step failed in the app's own certificate check
// (certError reports whether a step's error is one) and that the provider saw nothing.
func wantCertificateRefused(t *testing.T, steps map[string]tlsAppStep, prov *fakeprovider.Provider, before int, certError func(tlsAppStep) bool) {
	t.Helper()
	for _, name := range tlsAppSteps {
		s, ok := steps[name]
		switch {
		case !ok:
			t.Errorf("%s: the app printed nothing", name)
		case s.Error == "" || s.Status != 0:
			t.Errorf("%s: %+v, want a connection error", name, s)
		case !certError(s):
			t.Errorf("%s: %+v, want a certificate verification error", name, s)
		}
	}
	if n := len(prov.Requests()) - before; n != 0 {
		t.Errorf("the provider saw %d requests from an app that refused the guard", n)
	}
}
