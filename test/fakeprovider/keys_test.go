package fakeprovider

import (
	"net/http"
	"strings"
	"testing"
)

func TestAProviderWithKeysAnswersOnlyThemAndCountsEveryKeyItSaw(t *testing.T) {
	p := New(WithKeys("sk-right"))
	t.Cleanup(p.Close)
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	if resp, body := post(t, p, "/v1/chat/completions", chat, "Authorization", "Bearer sk-right"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the right key: %d %s", resp.StatusCode, body)
	}
	resp, body := post(t, p, "/v1/chat/completions", chat, "Authorization", "Bearer placeholder")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"code":"invalid_api_key"`) {
		t.Errorf("a wrong key: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, p, "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"authentication_error"`) {
		t.Errorf("no key on Messages: %d %s", resp.StatusCode, body)
	}
	p.SetKeys("sk-rotated")
	if resp, _ := post(t, p, "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		"X-Api-Key", "sk-rotated"); resp.StatusCode != http.StatusOK {
		t.Errorf("the rotated key: %d", resp.StatusCode)
	}
	seen := p.KeysSeen()
	if seen["sk-right"] != 1 || seen["placeholder"] != 1 || seen[""] != 1 || seen["sk-rotated"] != 1 {
		t.Errorf("keys seen %v", seen)
	}
}
