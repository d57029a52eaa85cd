package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// A ModelProvider whose budget the pod's namespace used up (marked exhausted in the
// snapshot, Enforce mode): every call the guard would send it is answered 429 with
// Retry-After, the seconds left in the window, in the family's error shape the official
// SDKs surface as a rate-limit error, naming the budget and the ModelProvider; the call
// reaches no provider. The other family's provider, not exhausted, still answers, and a
// mark whose window ended refuses nothing.
func TestAnExhaustedProviderIsAnswered429WithRetryAfterInItsFamilysShape(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod", "claude"}, nil, withConfig(func(c *Config) { c.Namespace = "shop" }))
	until := time.Now().Add(42 * time.Second).Truncate(time.Second)
	oa := k.openai(openaiCred)
	oa.Exhausted, oa.ExhaustedUntil = guardv1.BudgetTokensPerMinute, until
	an := k.anthropic(anthropicCred)
	k.apply(t, oa, an)
	placeholder := []string{"Authorization", "Bearer " + guardv1.PlaceholderAPIKey}

	for _, c := range []struct{ name, method, path, body string }{
		{"chat", "POST", "/v1/chat/completions", keylessChat},
		{"streamed chat", "POST", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]}`},
		{"responses", "POST", "/v1/responses", `{"model":"m","input":"hello"}`},
		{"embeddings", "POST", "/v1/embeddings", `{"model":"m","input":"hello"}`},
		{"the models list", "GET", "/v1/models", ""},
	} {
		t.Run("OpenAI "+c.name, func(t *testing.T) {
			before := len(k.prov.Requests())
			resp, body := k.do(t, c.method, c.path, c.body, placeholder...)
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("%d %s, want 429", resp.StatusCode, body)
			}
			secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || secs < 40 || secs > 42 {
				t.Errorf("Retry-After %q, want the 40 to 42 seconds left in the window", resp.Header.Get("Retry-After"))
			}
			var e struct {
				Error struct {
					Message, Type string
					Code          string
					Param         *string
				}
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("not OpenAI's error shape: %s", body)
			}
			if e.Error.Type != "rate_limit_exceeded" || e.Error.Code != guardv1.CodeBudgetExceeded {
				t.Errorf("type %q code %q, want rate_limit_exceeded budget_exceeded", e.Error.Type, e.Error.Code)
			}
			for _, want := range []string{"Namespace shop", "tokens per minute (tokensPerMinute)", "ModelProvider openai-prod",
				until.UTC().Format(time.RFC3339), "was not sent"} {
				if !strings.Contains(e.Error.Message, want) {
					t.Errorf("the message %q does not say %q", e.Error.Message, want)
				}
			}
			if strings.Contains(string(body), openaiCred) {
				t.Error("the answer holds the credential")
			}
			if len(k.prov.Requests()) != before || len(k.p.Requests()) != 0 {
				t.Error("a call over budget reached a provider")
			}
		})
	}
	t.Run("Anthropic's provider, not exhausted, answers", func(t *testing.T) {
		resp, body := k.do(t, "POST", "/v1/messages", messagesBody, "X-Api-Key", guardv1.PlaceholderAPIKey, "Anthropic-Version", "2023-06-01")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})

	an.Exhausted, an.ExhaustedUntil = guardv1.BudgetRequestsPerDay, time.Now().Add(3*time.Hour)
	k.apply(t, k.openai(openaiCred), an)
	t.Run("Anthropic", func(t *testing.T) {
		before := len(k.prov.Requests())
		resp, body := k.do(t, "POST", "/v1/messages", messagesBody, "X-Api-Key", guardv1.PlaceholderAPIKey, "Anthropic-Version", "2023-06-01")
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%d %s, want 429", resp.StatusCode, body)
		}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || secs < 3*3600-5 || secs > 3*3600 {
			t.Errorf("Retry-After %q, want about 3 hours", resp.Header.Get("Retry-After"))
		}
		var e struct {
			Type  string
			Error struct {
				Type, Message string
				Details       struct {
					ErrorCode string `json:"error_code"`
				}
			}
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type != "rate_limit_error" ||
			e.Error.Details.ErrorCode != guardv1.CodeBudgetExceeded {
			t.Fatalf("not Anthropic's rate_limit_error with budget_exceeded: %s", body)
		}
		if !strings.Contains(e.Error.Message, "requests per day (requestsPerDay) of ModelProvider claude") {
			t.Errorf("the message %q does not name the budget and the provider", e.Error.Message)
		}
		if len(k.prov.Requests()) != before {
			t.Error("a call over budget reached the provider")
		}
	})
	t.Run("OpenAI's provider, no longer marked, answers", func(t *testing.T) {
		if resp, body := k.do(t, "POST", "/v1/chat/completions", keylessChat, placeholder...); resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})

	// A mark whose window ended (the guard's clock passed it before the next snapshot)
	// refuses nothing.
	past := k.openai(openaiCred)
	past.Exhausted, past.ExhaustedUntil = guardv1.BudgetRequestsPerMinute, time.Now().Add(-time.Second)
	k.apply(t, past, k.anthropic(anthropicCred))
	if resp, body := k.do(t, "POST", "/v1/chat/completions", keylessChat, placeholder...); resp.StatusCode != http.StatusOK {
		t.Fatalf("a mark whose window ended: %d %s, want the provider's answer", resp.StatusCode, body)
	}
	if strings.Contains(k.log.String(), openaiCred) || strings.Contains(k.log.String(), anthropicCred) {
		t.Error("a credential reached the guard's log")
	}
	if !strings.Contains(k.log.String(), "used up a budget") {
		t.Error("the guard did not log that calls to an exhausted provider are refused")
	}
}

// An own key is still refused as such (400) while the budget is used up: the app must
// mend its configuration either way.
func TestAnOwnKeyIsRefusedBeforeTheBudget(t *testing.T) {
	k := newKeylessHarness(t, []string{"openai-prod"}, nil)
	p := k.openai(openaiCred)
	p.Exhausted, p.ExhaustedUntil = guardv1.BudgetRequestsPerMinute, time.Now().Add(time.Minute)
	k.apply(t, []*policy.Provider{p}...)
	resp, body := k.do(t, "POST", "/v1/chat/completions", keylessChat, "Authorization", "Bearer sk-proj-own-key-of-the-app")
	if code, _, _ := apiError(t, body); resp.StatusCode != http.StatusBadRequest || code != codeProviderKey {
		t.Fatalf("%d %s, want 400 %s", resp.StatusCode, body, codeProviderKey)
	}
}
