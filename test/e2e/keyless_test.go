package e2e

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Keyless apps with the real guard binary: the guard subscribes to a
// control plane that serves its pod's snapshot with two ModelProviders, as the operator
// does (the same wire types; the operator's side is tested with the real manager in the
// cluster suite). The apps are the official SDKs holding nothing but the injector's
// placeholder key; the provider answers only its own keys.

const (
	keylessOpenAIKey    = "sk-proj-e2e-keyless-openai-3f9a1c"
	keylessAnthropicKey = "sk-ant-e2e-keyless-anthropic-7d2b40"
	keylessRotatedKey   = "sk-proj-e2e-keyless-rotated-c81e55"
	keylessAppsOwnKey   = "sk-proj-e2e-the-apps-own-key-0b6d"
)

// keylessObjects is the pod's policy: prompts about flamingos are blocked.
const keylessObjects = `{
 "classifiers": [{"apiVersion": "guardrail.dev/v1alpha1", "kind": "Classifier",
   "metadata": {"namespace": "shop", "name": "words", "generation": 1},
   "spec": {"builtin": {"keywords": [{"category": "birds", "words": ["flamingo"]}]}}}],
 "guardrails": [{"apiVersion": "guardrail.dev/v1alpha1", "kind": "Guardrail",
   "metadata": {"namespace": "shop", "name": "no-flamingo", "generation": 1},
   "spec": {"mode": "Enforce", "classifierRef": {"name": "words"}, "phases": ["Input"], "threshold": 0.5, "action": "Block",
     "reason": "Flamingos are not discussed here."}}]}`

// fakeControlPlane serves /v1/subscribe and /v1/decisions over TLS as the operator does:
// a long poll answered with the snapshot as soon as it differs from the guard's running
// version, and the decision batches recorded.
type fakeControlPlane struct {
	srv               *httptest.Server
	tokenFile, caFile string
	mu                sync.Mutex
	version           string
	snap              []byte
	changed           chan struct{}
	down              bool
	batch             *guardv1.DecisionsRequest
}

func startControlPlane(t *testing.T) *fakeControlPlane {
	t.Helper()
	c := &fakeControlPlane{changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+cp.SubscribePath, c.subscribe)
	mux.HandleFunc("POST "+guardv1.DecisionsPath, c.decisions)
	c.srv = httptest.NewTLSServer(mux)
	t.Cleanup(c.srv.Close)
	dir := t.TempDir()
	c.tokenFile, c.caFile = filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw})
	if err := os.WriteFile(c.caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.tokenFile, []byte("projected-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// set makes snap, of version, the pod's snapshot.
func (c *fakeControlPlane) set(t *testing.T, version string, providers ...cp.Provider) {
	t.Helper()
	s := cp.Snapshot{Version: version, Namespace: "shop", Providers: providers}
	var objs struct {
		Classifiers []policy.ClassifierObject `json:"classifiers"`
		Guardrails  []policy.GuardrailObject  `json:"guardrails"`
	}
	if err := json.Unmarshal([]byte(keylessObjects), &objs); err != nil {
		t.Fatal(err)
	}
	s.Classifiers, s.Guardrails = objs.Classifiers, objs.Guardrails
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version, c.snap = version, b
	close(c.changed)
	c.changed = make(chan struct{})
}

// setDown makes the control plane answer 503 to everything (the operator unreachable).
func (c *fakeControlPlane) setDown(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
}

func (c *fakeControlPlane) subscribe(w http.ResponseWriter, r *http.Request) {
	var req cp.SubscribeRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for {
		c.mu.Lock()
		if c.down {
			c.mu.Unlock()
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		version, snap, changed := c.version, c.snap, c.changed
		c.mu.Unlock()
		if version != "" && version != req.Running && (req.Refused == nil || req.Refused.Version != version) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(snap)
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (c *fakeControlPlane) decisions(w http.ResponseWriter, r *http.Request) {
	var req guardv1.DecisionsRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad batch", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	c.batch = &req
	w.WriteHeader(http.StatusNoContent)
}

// usage returns provider's usage in the latest decisions batch.
func (c *fakeControlPlane) usage(provider string) guardv1.ProviderUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batch == nil {
		return guardv1.ProviderUsage{}
	}
	for _, u := range c.batch.Providers {
		if u.Provider == provider {
			return u
		}
	}
	return guardv1.ProviderUsage{}
}

// keylessProviders are the pod's two ModelProviders at one provider URL.
func keylessProviders(url, openaiKey string) []cp.Provider {
	return []cp.Provider{
		{Name: "claude", API: guardv1.ProviderAPIAnthropic, URL: url, Credential: keylessAnthropicKey},
		{Name: "openai-prod", API: guardv1.ProviderAPIOpenAI, URL: url + "/v1", Headers: map[string]string{"OpenAI-Project": "proj-e2e"},
			Credential: openaiKey},
	}
}

// keylessGuard starts a guard subscribed to c for the two providers, its upstream flags at
// decoy.
func keylessGuard(t *testing.T, c *fakeControlPlane, decoy, snapDir string, opts ...guardOpt) *guard {
	t.Helper()
	return startGuard(t, "", append([]guardOpt{upstream(decoy),
		subscribedTo(c.srv.URL, c.tokenFile, c.caFile, snapDir),
		flags("--provider=openai-prod", "--provider", "claude", "--namespace", "shop", "--decision-interval", "200ms")}, opts...)...)
}

// placeholderClients are the apps' SDKs as the injector configures them: the guard's base
// URL and the placeholder key, no retries (a refusal is seen as it is).
func placeholderClients(g *guard, key string) (openai.Client, anthropic.Client) {
	return openai.NewClient(oaoption.WithBaseURL(g.URL+"/v1/"), oaoption.WithAPIKey(key), oaoption.WithMaxRetries(0)),
		anthropic.NewClient(antoption.WithBaseURL(g.URL), antoption.WithAPIKey(key), antoption.WithMaxRetries(0))
}

func TestKeylessAppsCallTheirProviderOnlyThroughTheGuardWithTheProvidersKey(t *testing.T) {
	prov := fakeprovider.New(fakeprovider.WithKeys(keylessOpenAIKey, keylessAnthropicKey),
		fakeprovider.WithDefault(fakeprovider.Reply("Hello from ", "the provider.")))
	t.Cleanup(prov.Close)
	decoy := newProvider(t)
	c := startControlPlane(t)
	c.set(t, "v1", keylessProviders(prov.URL, keylessOpenAIKey)...)
	snapDir := t.TempDir()
	g := keylessGuard(t, c, decoy.URL, snapDir)
	oa, an := placeholderClients(g, guardv1.PlaceholderAPIKey)
	const want = "Hello from the provider."

	t.Run("the official SDKs holding only the placeholder get answers, streamed and not", func(t *testing.T) {
		ctx := testContext(t)
		chat, err := oa.Chat.Completions.New(ctx, chatParams("hi"))
		if err != nil || chat.Choices[0].Message.Content != want {
			t.Fatalf("chat: %v %+v", err, chat)
		}
		params := chatParams("hi")
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		acc, _, err := chatStream(ctx, oa, params)
		if err != nil || acc.Choices[0].Message.Content != want || acc.Usage.CompletionTokens == 0 {
			t.Fatalf("streamed chat: %v %q usage %+v", err, acc.Choices[0].Message.Content, acc.Usage)
		}
		resp, err := oa.Responses.New(ctx, responsesParams("hi"))
		if err != nil || resp.OutputText() != want {
			t.Fatalf("response: %v %+v", err, resp)
		}
		run, err := responsesStream(ctx, oa, responsesParams("hi"))
		if err != nil || run.text != want {
			t.Fatalf("streamed response: %v %q", err, run.text)
		}
		msg, err := an.Messages.New(ctx, messageParams("hi"))
		if err != nil || messageText(msg) != want {
			t.Fatalf("message: %v %+v", err, msg)
		}
		streamed, _, err := messageStream(ctx, an, messageParams("hi"))
		if err != nil || messageText(&streamed) != want {
			t.Fatalf("streamed message: %v %q", err, messageText(&streamed))
		}
		models, err := oa.Models.List(ctx)
		if err != nil || len(models.Data) == 0 {
			t.Fatalf("models (a pass-through GET): %v", err)
		}
		seen := prov.KeysSeen()
		if seen[keylessOpenAIKey] != 5 || seen[keylessAnthropicKey] != 2 || len(seen) != 2 {
			t.Errorf("the provider saw keys %v, want only the ModelProviders' (5 OpenAI calls, 2 Anthropic)", keyCounts(seen))
		}
		for _, r := range prov.Requests() {
			if r.Path == "/v1/messages" && r.Header.Get("Anthropic-Version") == "" {
				t.Error("the Anthropic SDK's headers did not reach the provider")
			}
			if r.Path != "/v1/messages" && r.Header.Get("OpenAI-Project") != "proj-e2e" {
				t.Errorf("%s %s lacks the provider's extra header", r.Method, r.Path)
			}
		}
		if n := len(decoy.Requests()); n != 0 {
			t.Errorf("the guard's upstream flags received %d calls", n)
		}
	})

	t.Run("the guard still enforces the pod's policy", func(t *testing.T) {
		_, err := oa.Chat.Completions.New(testContext(t), chatParams("tell me about flamingo"))
		apiErr, ok := errAs[*openai.Error](err)
		if !ok || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "content_policy_violation" {
			t.Errorf("a blocked prompt: %v", err)
		}
	})

	t.Run("a key of the app's own is refused with the reason and never forwarded", func(t *testing.T) {
		before := len(prov.Requests())
		own, ownAn := placeholderClients(g, keylessAppsOwnKey)
		_, err := own.Chat.Completions.New(testContext(t), chatParams("hi"))
		apiErr, ok := errAs[*openai.Error](err)
		if !ok || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "provider_key_not_accepted" ||
			!strings.Contains(apiErr.Message, "ModelProvider openai-prod, which holds the API key") ||
			strings.Contains(apiErr.Message, keylessAppsOwnKey) {
			t.Errorf("OpenAI SDK with a key of its own: %v", err)
		}
		_, err = ownAn.Messages.New(testContext(t), messageParams("hi"))
		anErr, ok := errAs[*anthropic.Error](err)
		if !ok || anErr.StatusCode != http.StatusBadRequest || !strings.Contains(anErr.Error(), "ModelProvider claude") {
			t.Errorf("Anthropic SDK with a key of its own: %v", err)
		}
		if len(prov.Requests()) != before || prov.KeysSeen()[keylessAppsOwnKey] != 0 {
			t.Error("the app's own key reached the provider")
		}
	})

	t.Run("a rotated credential is used from the next request, without a restart", func(t *testing.T) {
		prov.SetKeys(keylessRotatedKey, keylessAnthropicKey) // the old key no longer works
		c.set(t, "v2", keylessProviders(prov.URL, keylessRotatedKey)...)
		g.waitVersion("v1")
		chat, err := oa.Chat.Completions.New(testContext(t), chatParams("hi"))
		if err != nil || chat.Choices[0].Message.Content != want {
			t.Fatalf("after the rotation: %v", err)
		}
		if last, _ := prov.LastRequest(); last.Header.Get("Authorization") != "Bearer "+keylessRotatedKey {
			t.Error("the call after the rotation did not carry the rotated key")
		}
	})

	t.Run("usage reaches the metrics and the decisions batch", func(t *testing.T) {
		if got := g.metric(`guard_provider_requests_total{provider="openai-prod"}`); got != 6 {
			t.Errorf("openai-prod requests %v, want 6", got)
		}
		if got := g.metric(`guard_provider_requests_total{provider="claude"}`); got != 2 {
			t.Errorf("claude requests %v, want 2", got)
		}
		for _, series := range []string{
			`guard_provider_tokens_total{direction="input",provider="openai-prod"}`,
			`guard_provider_tokens_total{direction="output",provider="openai-prod"}`,
			`guard_provider_tokens_total{direction="output",provider="claude"}`,
		} {
			if g.metric(series) <= 0 {
				t.Errorf("%s did not move", series)
			}
		}
		eventually(t, "the usage in a decisions batch", func() bool {
			u := c.usage("openai-prod")
			return u.Requests == 6 && u.OutputTokens > 0 && c.usage("claude").Requests == 2
		})
	})

	t.Run("neither the log, the metrics nor the snapshot on disk hold a key", func(t *testing.T) {
		var disk strings.Builder
		_ = filepath.WalkDir(snapDir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(path) //nolint:gosec // the test's own directory
				disk.Write(b)
			}
			return nil
		})
		if !strings.Contains(disk.String(), "openai-prod") {
			t.Fatalf("no snapshot persisted in %s", snapDir)
		}
		for where, text := range map[string]string{"log": g.logs(), "metrics": g.metrics(), "snapshot on disk": disk.String()} {
			for _, key := range []string{keylessOpenAIKey, keylessAnthropicKey, keylessRotatedKey, keylessAppsOwnKey} {
				if strings.Contains(text, key) {
					t.Errorf("the guard's %s holds a key", where)
				}
			}
		}
	})

	t.Run("a guard restarted with the control plane down enforces its policy and refuses calls until it answers", func(t *testing.T) {
		g.stop()
		c.setDown(true)
		restarted := keylessGuard(t, c, decoy.URL, snapDir) // ready on its persisted snapshot
		oa, an := placeholderClients(restarted, guardv1.PlaceholderAPIKey)
		_, err := oa.Chat.Completions.New(testContext(t), chatParams("hi"))
		apiErr, ok := errAs[*openai.Error](err)
		if !ok || apiErr.StatusCode != http.StatusServiceUnavailable || apiErr.Code != "provider_unavailable" ||
			!strings.Contains(apiErr.Message, "has not reached the guardrail sidecar since it started") {
			t.Fatalf("a call with the control plane down: %v", err)
		}
		if _, err := an.Messages.New(testContext(t), messageParams("hi")); err == nil {
			t.Error("an Anthropic call went out with the control plane down")
		}
		if status, version := restarted.readyz(); status != http.StatusOK || version != "v2" {
			t.Errorf("/readyz %d %q, want the persisted policy v2 in force", status, version)
		}
		if n := len(decoy.Requests()); n != 0 {
			t.Errorf("%d calls went to the upstream flags", n)
		}

		c.setDown(false)
		eventually(t, "the credentials back from the control plane", func() bool {
			chat, err := oa.Chat.Completions.New(testContext(t), chatParams("hi"))
			return err == nil && chat.Choices[0].Message.Content == want
		})
		if last, _ := prov.LastRequest(); last.Header.Get("Authorization") != "Bearer "+keylessRotatedKey {
			t.Error("the call after the control plane came back did not carry the provider's key")
		}
		if strings.Contains(restarted.logs(), keylessRotatedKey) {
			t.Error("the restarted guard logged a key")
		}
	})
}

// keyCounts shows which keys a provider saw without printing any of them whole.
func keyCounts(seen map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range seen {
		if len(k) > 12 {
			k = k[:12] + "…"
		}
		out[k] += n
	}
	return out
}
