package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Keyless apps (keyless.go): a guard started with --provider sends its pod's calls to the
// ModelProvider the snapshot holds, with the provider's credential, and to nothing else.

const (
	openaiCred    = "sk-proj-canary-openai-credential-71c2"
	anthropicCred = "sk-ant-canary-anthropic-credential-9e04"
)

// keylessHarness is a proxy whose upstream flags point at a decoy fake provider (h.p) and
// whose ModelProviders are another fake provider, which accepts only their credentials.
type keylessHarness struct {
	*harness
	// prov is the ModelProviders' fake provider; provURL its base URL.
	prov    *fakeprovider.Provider
	provURL *url.URL
	log     *lockedLog
}

// lockedLog is the proxy's log, kept for the test to search.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newKeylessHarness starts a guard started with --provider for each of names; apply, when
// set, is the providers of the first snapshot applied (nil applies none).
func newKeylessHarness(t *testing.T, names []string, apply []*policy.Provider, opts ...harnessOpt) *keylessHarness {
	t.Helper()
	prov := fakeprovider.New(fakeprovider.WithKeys(openaiCred, anthropicCred))
	t.Cleanup(prov.Close)
	u, err := url.Parse(prov.URL + "/v1") // as a ModelProvider's url is often written
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedLog{}
	opts = append(opts, withConfig(func(c *Config) { c.Providers = names }))
	h := newHarness(t, "", opts...)
	h.px.cfg.Log = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	k := &keylessHarness{harness: h, prov: prov, provURL: u, log: log}
	if apply != nil {
		k.apply(t, apply...)
	}
	return k
}

// apply puts inputPolicy in force with providers.
func (k *keylessHarness) apply(t *testing.T, providers ...*policy.Provider) {
	t.Helper()
	snap := compile(t, inputPolicy)
	snap.Providers = providers
	if err := k.px.Apply(snap); err != nil {
		t.Fatal(err)
	}
}

func (k *keylessHarness) openai(cred string) *policy.Provider {
	return &policy.Provider{Name: "openai-prod", Family: policy.ProviderOpenAI, URL: k.provURL,
		Headers: map[string]string{"OpenAI-Organization": "org-canary"}, Credential: policy.Secret(cred)}
}

func (k *keylessHarness) anthropic(cred string) *policy.Provider {
	return &policy.Provider{Name: "claude", Family: policy.ProviderAnthropic, URL: k.provURL, Credential: policy.Secret(cred)}
}

// apiError is an error body of either family.
func apiError(t *testing.T, body []byte) (code, typ, msg string) {
	t.Helper()
	var e struct {
		Error struct {
			Code, Type, Message string
			// Details carry the code in Anthropic's shape.
			Details struct {
				ErrorCode string `json:"error_code"`
			}
		}
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not an error body: %s", body)
	}
	if e.Error.Code == "" {
		e.Error.Code = e.Error.Details.ErrorCode
	}
	return e.Error.Code, e.Error.Type, e.Error.Message
}

const (
	keylessChat  = `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	messagesBody = `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hello"}]}`
)

func TestEveryCallOfAKeylessFamilyGoesToTheProviderWithItsCredentialAndNoneToTheUpstreamFlag(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod", "claude"}, nil, withConfig(func(c *Config) {
		c.PassThrough = []string{"/v1/audio/speech"}
	}))
	k.apply(t, k.openai(openaiCred), k.anthropic(anthropicCred))
	placeholder := "Bearer " + guardv1.PlaceholderAPIKey
	for _, c := range []struct {
		name, method, path, body string
		header                   []string
		want                     int
		cred                     string
	}{
		{"a chat completion with the placeholder", "POST", "/v1/chat/completions", keylessChat,
			[]string{"Authorization", placeholder, "OpenAI-Organization", "org-of-the-app", "OpenAI-Project", "proj-of-the-app"}, 200, openaiCred},
		{"a streamed chat completion", "POST", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]}`,
			[]string{"Authorization", placeholder}, 200, openaiCred},
		{"a response with a short dummy key", "POST", "/v1/responses", `{"model":"m","input":"hello"}`, []string{"Authorization", "Bearer dummy"}, 200, openaiCred},
		{"an embedding with the dummies of every credential header", "POST", "/v1/embeddings", `{"model":"m","input":"hello"}`,
			[]string{"X-Api-Key", "x", "Api-Key", "none", "X-Goog-Api-Key", "dummy"}, 200, openaiCred},
		{"the models list (a pass-through GET)", "GET", "/v1/models", "", []string{"Authorization", placeholder}, 200, openaiCred},
		{"a --pass-through route", "POST", "/v1/audio/speech", `{"model":"m"}`, []string{"Authorization", placeholder}, 404, openaiCred},
		{"a message with the placeholder as x-api-key", "POST", "/v1/messages", messagesBody,
			[]string{"X-Api-Key", guardv1.PlaceholderAPIKey, "Anthropic-Version", "2023-06-01"}, 200, anthropicCred},
		{"Anthropic's models list", "GET", "/v1/models", "", []string{"X-Api-Key", "x", "Anthropic-Version", "2023-06-01"}, 200, anthropicCred},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := k.do(t, c.method, c.path, c.body, c.header...)
			if resp.StatusCode != c.want {
				t.Fatalf("%d %s, want %d from the ModelProvider", resp.StatusCode, body, c.want)
			}
			got, ok := k.prov.LastRequest()
			if !ok || got.Path != c.path {
				t.Fatalf("the ModelProvider's last request is %s, want %s", got.Path, c.path)
			}
			var keys []string
			for _, h := range credentialHeaders {
				keys = append(keys, got.Header.Values(h)...)
			}
			want := []string{"Bearer " + c.cred}
			if c.cred == anthropicCred {
				want = []string{c.cred}
			}
			if strings.Join(keys, "|") != strings.Join(want, "|") {
				t.Errorf("the ModelProvider received the credentials %q, want only the provider's", keys)
			}
			if c.cred == openaiCred && got.Header.Get("OpenAI-Organization") != "org-canary" {
				t.Errorf("the provider's extra header is missing: %v", got.Header)
			}
			if got.Header.Get("OpenAI-Project") != "" {
				t.Error("the app chose the project the provider's key bills")
			}
		})
	}
	if n := len(k.p.Requests()); n != 0 {
		t.Errorf("the upstream flags' provider received %d calls of keyless families", n)
	}
	seen := k.prov.KeysSeen()
	if seen[guardv1.PlaceholderAPIKey] != 0 || seen["dummy"] != 0 || seen["x"] != 0 || seen[""] != 0 {
		t.Errorf("the ModelProvider saw a client's key: %v", seen)
	}
	if strings.Contains(k.log.String(), openaiCred) || strings.Contains(k.log.String(), anthropicCred) {
		t.Error("a credential reached the guard's log")
	}
}

func TestARetrievalOfAStoredResponseGoesToTheProvider(t *testing.T) {
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+openaiCred || r.URL.Path != "/v1/responses/resp_1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, storedResponse("stored"))
	}))
	t.Cleanup(prov.Close)
	u, _ := url.Parse(prov.URL)
	k := newKeylessHarness(t, []string{"openai-prod"}, nil)
	k.apply(t, &policy.Provider{Name: "openai-prod", Family: policy.ProviderOpenAI, URL: u, Credential: openaiCred})
	resp, body := k.do(t, "GET", "/v1/responses/resp_1", "", "Authorization", "Bearer "+guardv1.PlaceholderAPIKey)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "stored") {
		t.Fatalf("retrieval: %d %s", resp.StatusCode, body)
	}
	if got := k.counter(t, "guard_provider_tokens_total", "provider", "openai-prod", "direction", "output"); got != 3 {
		t.Errorf("output tokens %v, want the stored answer's 3", got)
	}
}

func TestAKeyOfTheClientsOwnIsRefusedAndNotForwarded(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod", "claude"}, nil)
	k.apply(t, k.openai(openaiCred), k.anthropic(anthropicCred))
	for _, c := range []struct {
		name, method, path, body string
		header                   []string
		provider, key            string
	}{
		{"an OpenAI key on chat", "POST", "/v1/chat/completions", keylessChat, []string{"Authorization", "Bearer sk-proj-own-key-of-the-app"}, "openai-prod", "sk-proj-own-key-of-the-app"},
		{"a long token on Responses", "POST", "/v1/responses", `{"model":"m","input":"hi"}`, []string{"Authorization", "Bearer 0123456789abcdef01234567"}, "openai-prod", "0123456789abcdef01234567"},
		{"an Azure api-key on embeddings", "POST", "/v1/embeddings", `{"model":"m","input":"hi"}`, []string{"Api-Key", "azure0123456789abcdef0123456789"}, "openai-prod", "azure0123456789abcdef0123456789"},
		{"a Google key on chat", "POST", "/v1/chat/completions", keylessChat, []string{"X-Goog-Api-Key", "AIzaSyCanaryGoogleKey0123456789abcd"}, "openai-prod", "AIzaSyCanaryGoogleKey0123456789abcd"},
		{"a key in the query of a GET", "GET", "/v1/models?api-key=sk-query-key", "", nil, "openai-prod", "sk-query-key"},
		{"an Anthropic key on Messages", "POST", "/v1/messages", messagesBody, []string{"X-Api-Key", "sk-ant-own-key-of-the-app", "Anthropic-Version", "2023-06-01"}, "claude", "sk-ant-own-key-of-the-app"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(k.prov.Requests())
			resp, body := k.do(t, c.method, c.path, c.body, c.header...)
			code, _, msg := apiError(t, body)
			if resp.StatusCode != http.StatusBadRequest || code != codeProviderKey {
				t.Fatalf("%d %s, want 400 %s", resp.StatusCode, body, codeProviderKey)
			}
			if !strings.Contains(msg, "ModelProvider "+c.provider) || !strings.Contains(msg, "must not send a key of its own") ||
				!strings.Contains(msg, guardv1.PlaceholderAPIKey) {
				t.Errorf("the message does not say why: %s", msg)
			}
			if strings.Contains(string(body), c.key) {
				t.Error("the answer echoes the client's key")
			}
			if c.provider == "claude" && !strings.Contains(string(body), `"type":"error"`) {
				t.Errorf("not in Anthropic's error shape: %s", body)
			}
			if len(k.prov.Requests()) != before || len(k.p.Requests()) != 0 {
				t.Error("a refused call reached a provider")
			}
		})
	}
}

func TestLooksLikeKey(t *testing.T) {
	for _, c := range []struct {
		name, header, value string
		key                 bool
	}{
		{"the placeholder is replaced", "Authorization", "Bearer " + guardv1.PlaceholderAPIKey, false},
		{"the placeholder as x-api-key is replaced", "X-Api-Key", guardv1.PlaceholderAPIKey, false},
		{"an empty bearer is replaced", "Authorization", "Bearer ", false},
		{"a short dummy is replaced", "Authorization", "Bearer not-needed", false},
		{"EMPTY, as vLLM docs write it, is replaced", "Authorization", "Bearer EMPTY", false},
		{"nineteen characters are a dummy", "X-Api-Key", strings.Repeat("x", 19), false},
		{"twenty characters are a key", "X-Api-Key", strings.Repeat("x", 20), true},
		{"an sk- prefix is a key however short", "Authorization", "Bearer sk-1", true},
		{"sk- in any case", "Authorization", "Bearer SK-1", true},
		{"an Anthropic key", "X-Api-Key", "sk-ant-api03-abc", true},
		{"a key without a scheme", "Authorization", "sk-proj-abc", true},
		{"the scheme is not the key", "Authorization", "Basic " + strings.Repeat("y", 24), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := looksLikeKey(c.value, c.header); got != c.key {
				t.Errorf("looksLikeKey(%q) = %v", c.value, got)
			}
		})
	}
}

func TestCallsAreRefusedWhileANamedProviderIsUnavailable(t *testing.T) {
	for _, c := range []struct {
		name      string
		providers func(k *keylessHarness) []*policy.Provider
		why       string
	}{
		{"not in the snapshot", func(*keylessHarness) []*policy.Provider { return []*policy.Provider{} },
			"ModelProvider openai-prod is not available to this pod"},
		{"without its credential (a persisted snapshot after a restart)", func(k *keylessHarness) []*policy.Provider {
			return []*policy.Provider{k.openai("")}
		}, "has not reached the guardrail sidecar since it started"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := newKeylessHarness(t, []string{"openai-prod"}, nil)
			k.apply(t, c.providers(k)...)
			for _, call := range [][]string{
				{"POST", "/v1/chat/completions", keylessChat},
				// The family is unknown: an Anthropic call is refused too.
				{"POST", "/v1/messages", messagesBody, "X-Api-Key", "sk-ant-app-key"},
				{"GET", "/v1/models", ""},
			} {
				resp, body := k.do(t, call[0], call[1], call[2], append([]string{"Authorization", "Bearer sk-app-own"}, call[3:]...)...)
				code, _, msg := apiError(t, body)
				if resp.StatusCode != http.StatusServiceUnavailable || code != codeProviderUnavailable || !strings.Contains(msg, c.why) {
					t.Errorf("%s %s: %d %s, want 503 %s saying %q", call[0], call[1], resp.StatusCode, body, codeProviderUnavailable, c.why)
				}
			}
			if len(k.p.Requests()) != 0 || len(k.prov.Requests()) != 0 {
				t.Error("a call went out with the app's own key")
			}
		})
	}
}

func TestBeforeAnyPolicyAKeylessGuardSendsNothing(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod"}, nil)
	resp, body := k.do(t, "GET", "/v1/models", "")
	if code, _, msg := apiError(t, body); resp.StatusCode != http.StatusServiceUnavailable || code != codeProviderUnavailable ||
		!strings.Contains(msg, "openai-prod") {
		t.Errorf("a pass-through GET before any policy: %d %s", resp.StatusCode, body)
	}
	resp, body = k.post(t, "/v1/chat/completions", keylessChat)
	if code, _, _ := apiError(t, body); resp.StatusCode != http.StatusServiceUnavailable || code != "policy_not_loaded" {
		t.Errorf("a guarded call before any policy: %d %s", resp.StatusCode, body)
	}
	if len(k.p.Requests()) != 0 || len(k.prov.Requests()) != 0 {
		t.Error("a call went out")
	}
}

func TestAFamilyWithoutAProviderKeepsTheClientsKeyWhenEveryNamedProviderIsInForce(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod"}, nil)
	k.apply(t, k.openai(openaiCred))
	resp, body := k.post(t, "/v1/messages", messagesBody, "X-Api-Key", "sk-ant-the-apps-own", "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	got, _ := k.p.LastRequest()
	if got.Header.Get("X-Api-Key") != "sk-ant-the-apps-own" || len(k.prov.Requests()) != 0 {
		t.Errorf("the Anthropic call did not go to --anthropic-upstream with the app's key: %v", got.Header)
	}
}

func TestAGuardWithoutProviderFlagsIgnoresTheSnapshotsProviders(t *testing.T) {
	k := newKeylessHarness(t, nil, nil)
	k.apply(t, k.openai(openaiCred))
	resp, body := k.post(t, "/v1/chat/completions", keylessChat, "Authorization", "Bearer sk-the-apps-own")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	got, _ := k.p.LastRequest()
	if got.Header.Get("Authorization") != "Bearer sk-the-apps-own" || len(k.prov.Requests()) != 0 {
		t.Errorf("the call did not go to the upstream flag with the app's key: %v", got.Header)
	}
}

func TestTwoNamedProvidersOfOneFamilyRefuseTheSnapshot(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod", "openai-dev"}, nil)
	dev := k.openai(openaiCred)
	dev.Name = "openai-dev"
	snap := compile(t, inputPolicy)
	snap.Providers = []*policy.Provider{dev, k.openai(openaiCred)}
	if err := k.px.Apply(snap); err == nil || !strings.Contains(err.Error(), "one per API family") {
		t.Errorf("Apply = %v", err)
	}
}

// watchedBody is a request body that says when the handler first reads it.
type watchedBody struct {
	io.ReadCloser
	reading chan struct{}
	once    sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.reading) })
	return b.ReadCloser.Read(p)
}

func TestARotatedCredentialAppliesToTheNextRequestAndARequestInFlightKeepsItsOwn(t *testing.T) {
	const rotated = "sk-proj-canary-rotated-credential-88aa"
	k := newKeylessHarness(t, []string{"openai-prod"}, nil)
	k.apply(t, k.openai(openaiCred))
	k.prov.SetKeys(openaiCred, rotated)

	// A request in flight: the guard handles it and waits for its body, which comes only
	// after the rotation.
	reading := make(chan struct{})
	watched := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &watchedBody{ReadCloser: r.Body, reading: reading}
		k.px.ServeHTTP(w, r)
	}))
	t.Cleanup(watched.Close)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, watched.URL+"/v1/chat/completions", pr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := watched.Client().Do(req)
		if err != nil {
			done <- nil
			return
		}
		done <- resp
	}()
	_, _ = pw.Write([]byte("{")) // the body has begun: the transport sends the headers
	<-reading
	k.apply(t, k.openai(rotated))
	_, _ = pw.Write([]byte(keylessChat[1:]))
	_ = pw.Close()
	inFlight := <-done
	if inFlight == nil || inFlight.StatusCode != http.StatusOK {
		t.Fatalf("the request in flight: %v", inFlight)
	}
	_ = inFlight.Body.Close()

	resp, body := k.post(t, "/v1/chat/completions", keylessChat)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the rotation: %d %s", resp.StatusCode, body)
	}
	reqs := k.prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests reached the provider", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+openaiCred {
		t.Errorf("the request in flight carried %q, want the credential of the policy it started with", redactKey(got))
	}
	if got := reqs[1].Header.Get("Authorization"); got != "Bearer "+rotated {
		t.Errorf("the next request carried %q, want the rotated credential", redactKey(got))
	}
	if strings.Contains(k.log.String(), rotated) {
		t.Error("the rotated credential reached the log")
	}
}

// redactKey shows which test credential a header holds without printing it whole.
func redactKey(v string) string {
	if len(v) > 16 {
		return v[:16] + "…"
	}
	return v
}

func TestProviderUsageCountsRequestsAndTheProvidersTokensStreamedIncluded(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod", "claude"}, nil)
	k.apply(t, k.openai(openaiCred), k.anthropic(anthropicCred))
	script := fakeprovider.Script{Usage: fakeprovider.Usage{InputTokens: 10, OutputTokens: 4}}
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", keylessChat},
		{"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
		// Without include_usage a chat stream carries no usage: the request counts, not its tokens.
		{"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"m","stream":true,"input":"hi"}`},
		{"/v1/messages", `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		k.prov.Enqueue(script)
		if resp, body := k.post(t, c.path, c.body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, body)
		}
	}
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"provider", "openai-prod"}, 4},
		{[]string{"provider", "claude"}, 1},
	} {
		if got := k.counter(t, "guard_provider_requests_total", c.labels...); got != c.want {
			t.Errorf("requests %v: %v, want %v", c.labels, got, c.want)
		}
	}
	for _, c := range []struct {
		provider, direction string
		want                float64
	}{
		{"openai-prod", "input", 30}, {"openai-prod", "output", 12},
		{"claude", "input", 10}, {"claude", "output", 4},
	} {
		if got := k.counter(t, "guard_provider_tokens_total", "provider", c.provider, "direction", c.direction); got != c.want {
			t.Errorf("%s %s tokens: %v, want %v", c.provider, c.direction, got, c.want)
		}
	}
}

func TestATransportFailureToTheProviderLogsNoCredential(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod"}, nil)
	down, _ := url.Parse("http://127.0.0.1:1/v1")
	k.apply(t, &policy.Provider{Name: "openai-prod", Family: policy.ProviderOpenAI, URL: down, Credential: openaiCred})
	for _, path := range []string{"/v1/chat/completions", "/v1/models"} {
		method, body := "POST", keylessChat
		if path == "/v1/models" {
			method, body = "GET", ""
		}
		if resp, b := k.do(t, method, path, body); resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("%s: %d %s, want 502", path, resp.StatusCode, b)
		}
	}
	log := k.log.String()
	if !strings.Contains(log, "127.0.0.1:1") {
		t.Fatalf("the failures were not logged: %s", log)
	}
	if strings.Contains(log, openaiCred) || strings.Contains(log, "Bearer") {
		t.Errorf("the log holds the credential: %s", log)
	}
}

func TestAProvidersRefusalOfItsCredentialIsNotPassedToTheApp(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod", "claude"}, nil)
	k.apply(t, k.openai("sk-proj-revoked-credential-000"), k.anthropic("sk-ant-revoked-credential-000"))
	for _, c := range [][]string{
		{"POST", "/v1/chat/completions", keylessChat},
		{"GET", "/v1/models", ""},
		{"POST", "/v1/messages", messagesBody, "Anthropic-Version", "2023-06-01"},
	} {
		resp, body := k.do(t, c[0], c[1], c[2], c[3:]...)
		code, _, msg := apiError(t, body)
		if resp.StatusCode != http.StatusUnauthorized || code != codeProviderCredential || !strings.Contains(msg, "ModelProvider") {
			t.Errorf("%s %s: %d %s, want 401 %s", c[0], c[1], resp.StatusCode, body, codeProviderCredential)
		}
		if strings.Contains(string(body), "Incorrect API key") || strings.Contains(string(body), "invalid x-api-key") {
			t.Errorf("%s %s: the provider's own answer, which may quote the key, reached the app: %s", c[0], c[1], body)
		}
	}
	if n := len(k.prov.Requests()); n != 3 {
		t.Errorf("%d calls reached the provider, want 3", n)
	}
}
