package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
	"github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The guard's environment comes from the pod spec: whoever can edit the guard container's
// variables must not thereby get the credentials the guard attaches to its calls. The real
// binary is started with every such setting at once (a proxy, a CA of the tenant's as the
// system bundle, GODEBUG=http2debug=2, which logs HTTP/2 request headers) and must
// honour none: its calls go straight to their servers, a server certified only by the
// tenant's CA is refused, and nothing it writes holds a credential.

// tenant is what a tenant who sets the guard's variables controls.
type tenant struct {
	proxyURL string
	// proxied counts the connections the proxy got; proxiedLines are their first lines.
	proxied      atomic.Int64
	mu           sync.Mutex
	proxiedLines []string
	// caFile and caDir hold the tenant's CA; tlsURL is a server certified by it alone,
	// which counts the requests it gets in served.
	caFile, caDir string
	tlsURL        string
	served        atomic.Int64
}

func newTenant(t *testing.T) *tenant {
	t.Helper()
	tn := &tenant{caDir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	tn.proxyURL = "http://" + ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tn.proxied.Add(1)
			go func() {
				defer func() { _ = c.Close() }()
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				tn.mu.Lock()
				tn.proxiedLines = append(tn.proxiedLines, strings.TrimSpace(line))
				tn.mu.Unlock()
			}()
		}
	}()

	if _, err := envtestutil.ServingCert(tn.caDir, "127.0.0.1", "localhost"); err != nil {
		t.Fatal(err)
	}
	tn.caFile = filepath.Join(tn.caDir, "ca.crt")
	cert, err := tls.LoadX509KeyPair(filepath.Join(tn.caDir, "tls.crt"), filepath.Join(tn.caDir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tn.served.Add(1)
		http.Error(w, "the tenant's server", http.StatusTeapot)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the guard's refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tn.tlsURL = srv.URL // https://127.0.0.1:port: a loopback address, which no proxy setting covers
	return tn
}

// env is the guard's hostile environment.
func (tn *tenant) env() []string {
	return []string{
		"GODEBUG=http2debug=2",
		"HTTPS_PROXY=" + tn.proxyURL, "HTTP_PROXY=" + tn.proxyURL, "ALL_PROXY=" + tn.proxyURL,
		"https_proxy=" + tn.proxyURL, "http_proxy=" + tn.proxyURL, "NO_PROXY=", "no_proxy=",
		"SSL_CERT_FILE=" + tn.caFile, "SSL_CERT_DIR=" + tn.caDir,
	}
}

// checkNothingProxied fails the test if the proxy got a connection.
func (tn *tenant) checkNothingProxied(t *testing.T) {
	t.Helper()
	if n := tn.proxied.Load(); n != 0 {
		tn.mu.Lock()
		defer tn.mu.Unlock()
		t.Errorf("the tenant's proxy got %d connections: %q", n, tn.proxiedLines)
	}
}

// byName rewrites a loopback URL to name its host LOCALHOST: the environment proxy of
// net/http never proxies a loopback address or "localhost", but it does this spelling,
// which resolves to the same address. The guard must dial it directly all the same.
func byName(t *testing.T, rawURL string) string {
	t.Helper()
	if !strings.HasPrefix(rawURL, "http://127.0.0.1:") {
		t.Fatalf("%s is not a loopback http URL", rawURL)
	}
	return "http://LOCALHOST:" + strings.TrimPrefix(rawURL, "http://127.0.0.1:")
}

// envGuard is a guard process whose stdout and stderr are both kept.
type envGuard struct {
	URL, Admin string
	out        lockedBuffer
}

type bufferWriter struct{ b *lockedBuffer }

func (w bufferWriter) Write(p []byte) (int, error) { w.b.write(p); return len(p), nil }

// startEnvGuard starts the guard binary with args and the test's environment plus env, and
// returns once it is ready.
func startEnvGuard(t *testing.T, args, env []string) *envGuard {
	t.Helper()
	g := &envGuard{}
	cmd := exec.Command(guardBin, append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--shutdown-grace", "5s", "--log-level", "debug"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	w := &bufferWriter{b: &g.out}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(waitTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("guard output:\n%s", g.out.String())
		}
	})
	eventually(t, "the guard to listen", func() bool {
		select {
		case <-exited:
			t.Fatalf("the guard exited:\n%s", g.out.String())
		default:
		}
		for _, line := range strings.Split(g.out.String(), "\n") {
			var rec struct{ Msg, Proxy, Admin string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "Guard listening" {
				g.URL, g.Admin = "http://"+rec.Proxy, "http://"+rec.Admin
				return true
			}
		}
		return false
	})
	eventually(t, "the guard to be ready", func() bool {
		resp, err := http.Get(g.Admin + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return g
}

// checkOutput fails the test if the guard's output holds one of secrets or an
// authorization header, or lacks the notice naming the variables it ignored, or names
// their values.
func (g *envGuard) checkOutput(t *testing.T, tn *tenant, secrets ...string) {
	t.Helper()
	out := g.out.String()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the guard's output holds the credential %q", s)
		}
	}
	lower := strings.ToLower(out)
	for _, s := range []string{`"authorization"`, "authorization:", "bearer ", "x-api-key", "http2: transport"} {
		if strings.Contains(lower, s) {
			t.Errorf("the guard's output holds %q", s)
		}
	}
	var notice struct{ Variables []string }
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "The guard ignores these environment variables") {
			if err := json.Unmarshal([]byte(line), &notice); err != nil {
				t.Errorf("the notice %q: %v", line, err)
			}
			for _, value := range []string{tn.proxyURL, tn.caFile, tn.caDir, "http2debug"} {
				if strings.Contains(line, value) {
					t.Errorf("the notice %q holds the value %q", line, value)
				}
			}
		}
	}
	names := strings.Join(notice.Variables, ",")
	for _, want := range []string{"GODEBUG", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR"} {
		if !strings.Contains(","+names+",", ","+want+",") {
			t.Errorf("the guard did not say it ignores %s (it named %q)", want, names)
		}
	}
}

func TestAGuardHonoursNoProxyTLSOrDebugSettingOfItsEnvironment(t *testing.T) {
	t.Run("keyless: the provider's key goes straight to the provider; a provider certified by the tenant's CA gets nothing", func(t *testing.T) {
		tn := newTenant(t)
		prov := fakeprovider.New(fakeprovider.WithKeys(keylessOpenAIKey, keylessAnthropicKey),
			fakeprovider.WithDefault(fakeprovider.Reply("Hello from ", "the provider.")))
		t.Cleanup(prov.Close)
		decoy := newProvider(t)
		c := startControlPlane(t)
		c.set(t, "v1",
			cp.Provider{Name: "openai-prod", API: guardv1.ProviderAPIOpenAI, URL: byName(t, prov.URL) + "/v1", Credential: keylessOpenAIKey},
			cp.Provider{Name: "claude", API: guardv1.ProviderAPIAnthropic, URL: tn.tlsURL, Credential: keylessAnthropicKey})
		g := startEnvGuard(t, []string{"--openai-upstream", decoy.URL, "--anthropic-upstream", decoy.URL,
			"--control-plane", c.srv.URL, "--token-file", c.tokenFile, "--ca-file", c.caFile, "--snapshot-dir", t.TempDir(),
			"--provider=openai-prod", "--provider=claude", "--namespace", "shop"}, tn.env())

		oa := openai.NewClient(oaoption.WithBaseURL(g.URL+"/v1/"), oaoption.WithAPIKey(guardv1.PlaceholderAPIKey), oaoption.WithMaxRetries(0))
		chat, err := oa.Chat.Completions.New(testContext(t), chatParams("hi"))
		if err != nil || chat.Choices[0].Message.Content != "Hello from the provider." {
			t.Errorf("chat through the OpenAI ModelProvider: %v %+v", err, chat)
		}
		if seen := prov.KeysSeen(); seen[keylessOpenAIKey] != 1 {
			t.Errorf("the provider saw keys %v, want the ModelProvider's once", keyCounts(seen))
		}

		an := anthropic.NewClient(antoption.WithBaseURL(g.URL), antoption.WithAPIKey(guardv1.PlaceholderAPIKey), antoption.WithMaxRetries(0))
		if _, err := an.Messages.New(testContext(t), messageParams("hi")); err == nil {
			t.Error("a message to a provider certified only by the tenant's CA (SSL_CERT_FILE) was answered")
		}
		if n := tn.served.Load(); n != 0 {
			t.Errorf("the server certified by the tenant's CA got %d requests: the guard trusted SSL_CERT_FILE", n)
		}
		if n := len(decoy.Requests()); n != 0 {
			t.Errorf("the upstream flags got %d calls", n)
		}
		tn.checkNothingProxied(t)
		g.checkOutput(t, tn, keylessOpenAIKey, keylessAnthropicKey, "projected-token")
	})

	t.Run("a classifier's token over HTTP/2 is not logged, and the app's own key goes straight to the upstream", func(t *testing.T) {
		tn := newTenant(t)
		const hookToken = "e2e-webhook-token-5c1d9a77"
		const appKey = "sk-e2e-the-apps-key-41f0c2"
		hook := fakeclassifiers.NewWebhook().Respond(func(fakeclassifiers.Request) fakeclassifiers.Reply {
			return fakeclassifiers.WebhookScores(fakeclassifiers.Scores{"harm": 0.0})
		})
		var protos sync.Map
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			protos.Store(r.Proto, true)
			hook.ServeHTTP(w, r)
		}))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		t.Cleanup(srv.Close)
		t.Cleanup(hook.Close)
		classifier := webhookClassifier("judge", srv.URL, "E2E_WEBHOOK_TOKEN", "harm")
		classifier.Spec.Webhook.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		policyPath := filepath.Join(t.TempDir(), "policy.yaml")
		policy := policyFile(t, classifier, guardrail("no-harm", "judge", phases(v1alpha1.PhaseInput)))
		if err := os.WriteFile(policyPath, []byte(policy), 0o600); err != nil {
			t.Fatal(err)
		}
		prov := fakeprovider.New(fakeprovider.WithKeys(appKey), fakeprovider.WithDefault(fakeprovider.Reply("ok")))
		t.Cleanup(prov.Close)
		g := startEnvGuard(t, []string{"--policy-file", policyPath,
			"--openai-upstream", byName(t, prov.URL), "--anthropic-upstream", byName(t, prov.URL)},
			append(tn.env(), "E2E_WEBHOOK_TOKEN="+hookToken))

		oa := openai.NewClient(oaoption.WithBaseURL(g.URL+"/v1/"), oaoption.WithAPIKey(appKey), oaoption.WithMaxRetries(0))
		chat, err := oa.Chat.Completions.New(testContext(t), chatParams("hi"))
		if err != nil || chat.Choices[0].Message.Content != "ok" {
			t.Errorf("chat: %v %+v", err, chat)
		}
		reqs := hook.Requests()
		if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+hookToken {
			t.Errorf("the webhook got %d requests, want 1 with the classifier's token", len(reqs))
		}
		if _, ok := protos.Load("HTTP/2.0"); !ok {
			t.Error("the webhook was not called over HTTP/2: the check of the log below proves nothing")
		}
		if seen := prov.KeysSeen(); seen[appKey] != 1 {
			t.Errorf("the provider saw keys %v, want the app's once", keyCounts(seen))
		}
		tn.checkNothingProxied(t)
		g.checkOutput(t, tn, hookToken, appKey)
	})
}
