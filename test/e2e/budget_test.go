package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Budgets with the real guard binary and the official Go SDKs: a snapshot that marks the
// pod's ModelProviders exhausted (a limit in Enforce mode reached by the namespace) makes
// the guard answer their calls with 429 and Retry-After, which the SDKs surface as a
// rate-limit error naming the budget; nothing reaches the provider. The next snapshot
// without the marks (the window ended) lets the calls through again.
func TestKeylessAppsOverBudgetGet429FromTheGuard(t *testing.T) {
	prov := fakeprovider.New(fakeprovider.WithKeys(keylessOpenAIKey, keylessAnthropicKey),
		fakeprovider.WithDefault(fakeprovider.Reply("Hello from ", "the provider.")))
	t.Cleanup(prov.Close)
	decoy := newProvider(t)
	c := startControlPlane(t)
	exhausted := keylessProviders(prov.URL, keylessOpenAIKey)
	exhausted[0].Exhausted = &guardv1.ProviderExhaustion{Budget: guardv1.BudgetRequestsPerDay, Until: time.Now().Add(2 * time.Hour)}
	exhausted[1].Exhausted = &guardv1.ProviderExhaustion{Budget: guardv1.BudgetTokensPerMinute, Until: time.Now().Add(30 * time.Second)}
	c.set(t, "v1", exhausted...)
	g := keylessGuard(t, c, decoy.URL, t.TempDir())
	oa, an := placeholderClients(g, guardv1.PlaceholderAPIKey)

	_, err := oa.Chat.Completions.New(testContext(t), chatParams("hi"))
	apiErr, ok := errAs[*openai.Error](err)
	if !ok || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != guardv1.CodeBudgetExceeded ||
		apiErr.Type != "rate_limit_exceeded" || !strings.Contains(apiErr.Message, "tokens per minute (tokensPerMinute) of ModelProvider openai-prod") {
		t.Fatalf("OpenAI SDK over budget: %v", err)
	}
	if secs, err := strconv.Atoi(apiErr.Response.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 30 {
		t.Errorf("Retry-After %q, want the seconds left in the minute's window", apiErr.Response.Header.Get("Retry-After"))
	}
	_, err = an.Messages.New(testContext(t), messageParams("hi"))
	anErr, ok := errAs[*anthropic.Error](err)
	if !ok || anErr.StatusCode != http.StatusTooManyRequests || !strings.Contains(anErr.Error(), "rate_limit_error") ||
		!strings.Contains(anErr.Error(), "requests per day (requestsPerDay) of ModelProvider claude") {
		t.Fatalf("Anthropic SDK over budget: %v", err)
	}
	if n := len(prov.Requests()) + len(decoy.Requests()); n != 0 {
		t.Fatalf("%d calls over budget reached a provider", n)
	}

	c.set(t, "v2", keylessProviders(prov.URL, keylessOpenAIKey)...)
	g.waitVersion("v1")
	if chat, err := oa.Chat.Completions.New(testContext(t), chatParams("hi")); err != nil || chat.Choices[0].Message.Content != "Hello from the provider." {
		t.Fatalf("after the window: %v", err)
	}
	if msg, err := an.Messages.New(testContext(t), messageParams("hi")); err != nil || messageText(msg) != "Hello from the provider." {
		t.Fatalf("after the window: %v", err)
	}
}
