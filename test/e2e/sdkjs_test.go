package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// sdkJSDir holds the official OpenAI and Anthropic JavaScript SDKs as an app (keyless.mjs)
// and their locked dependencies.
const sdkJSDir = "sdkjs"

// TestKeylessAppsWithTheJavaScriptSDKs runs a keyless app written with the official
// OpenAI and Anthropic JavaScript SDKs (Node), with their default retries, behind the real
// guard: holding only the placeholder key they get answers streamed and not, with the
// provider's usage, the provider sees only the ModelProviders' keys, and a key of the
// app's own is refused once, with the reason, and never reaches the provider.
func TestKeylessAppsWithTheJavaScriptSDKs(t *testing.T) {
	installNodeDeps(t, sdkJSDir, filepath.Join("openai", "package.json"))
	prov := fakeprovider.New(fakeprovider.WithKeys(keylessOpenAIKey, keylessAnthropicKey),
		fakeprovider.WithDefault(fakeprovider.Reply("Hello from ", "the provider.")))
	t.Cleanup(prov.Close)
	decoy := newProvider(t)
	c := startControlPlane(t)
	c.set(t, "v1", keylessProviders(prov.URL, keylessOpenAIKey)...)
	g := keylessGuard(t, c, decoy.URL, t.TempDir())

	out := runNodeApp(t, sdkJSDir, nil, "keyless.mjs", g.URL, guardv1.PlaceholderAPIKey, keylessAppsOwnKey)
	type step struct {
		Step         string `json:"step"`
		Text         string `json:"text"`
		OutputTokens int    `json:"outputTokens"`
		Status       int    `json:"status"`
		Code         string `json:"code"`
		Message      string `json:"message"`
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
	const want = "Hello from the provider."
	for _, name := range []string{"chat", "chat stream", "responses stream", "messages", "messages stream"} {
		s, ok := steps[name]
		switch {
		case !ok:
			t.Errorf("%s: the app printed nothing", name)
		case s.Text != want:
			t.Errorf("%s: %+v, want %q", name, s, want)
		}
	}
	for _, name := range []string{"chat", "chat stream", "messages"} {
		if steps[name].OutputTokens == 0 {
			t.Errorf("%s: the app got no usage", name)
		}
	}
	own := steps["own key"]
	if own.Status != 400 || own.Code != "provider_key_not_accepted" || !strings.Contains(own.Message, "ModelProvider openai-prod") ||
		strings.Contains(own.Message, keylessAppsOwnKey) {
		t.Errorf("a key of the app's own: %+v", own)
	}
	seen := prov.KeysSeen()
	if seen[keylessOpenAIKey] != 3 || seen[keylessAnthropicKey] != 2 || len(seen) != 2 {
		t.Errorf("the provider saw keys %v, want only the ModelProviders' (3 OpenAI calls, 2 Anthropic)", keyCounts(seen))
	}
	if n := len(decoy.Requests()); n != 0 {
		t.Errorf("the guard's upstream flags received %d calls", n)
	}
}

// runNodeApp runs node with args in dir (test/e2e/dir), with env added to the test's
// environment, and returns what it printed on stdout; it fails the test, with what the app
// printed on stderr, when the app fails or outlives twice waitTimeout.
func runNodeApp(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// installNodeDeps installs a Node app's locked dependencies (npm ci) when marker, a file
// under its node_modules, is missing, as in a fresh clone.
func installNodeDeps(t *testing.T, dir, marker string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", marker)); err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in test/e2e/%s (node 20 and npm are needed): %v\n%s", dir, err, out)
	}
}

// TestDisguisedCredentialsThroughTheJavaScriptSDKs: from an attacker's seat, with clients
// the detectors were not written against. The answer of TestDisguisedCredentialsAreRedacted
// (credentials behind zero-width spaces, look-alikes, tag characters — astral characters, two
// UTF-16 units each in JavaScript — fullwidth forms and a right-to-left override) reaches
// the official OpenAI and Anthropic JavaScript SDKs, streamed in deltas of 1 to 7 bytes and
// not, through the shipped redaction sample: what they accumulate never shows 8 bytes of a
// credential, and says each was redacted.
func TestDisguisedCredentialsThroughTheJavaScriptSDKs(t *testing.T) {
	installNodeDeps(t, sdkJSDir, filepath.Join("openai", "package.json"))
	d := disguisedCredentials(rand.New(rand.NewPCG(2, 17)))
	p := newProvider(t)
	g := startGuard(t, samplePolicy(t, "pii-secrets-redaction.yaml"), upstream(p.URL))
	whole := fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts(d.reply)}}}
	streamed := fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts(d.deltas...)}}}
	steps := []string{"chat", "chat stream", "responses stream", "messages", "messages stream"}
	for _, s := range []fakeprovider.Script{whole, streamed, streamed, whole, streamed} { // in the app's order
		p.Enqueue(s)
	}
	out := runNodeApp(t, sdkJSDir, nil, "disguised.mjs", g.URL)
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct{ Step, Text, Error string }
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("the app printed %q", sc.Text())
		}
		if s.Error != "" {
			t.Errorf("%s: %s", s.Step, s.Error)
		}
		got[s.Step] = s.Text
	}
	for _, step := range steps {
		text, ok := got[step]
		if !ok {
			t.Errorf("%s: the app printed nothing", step)
			continue
		}
		d.check(t, step, text)
	}
}
