package proxy

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

func TestUnforwardablePath(t *testing.T) {
	for _, tc := range []struct {
		target  string
		refused bool
	}{
		{"/v1/models", false},
		{"/v1/models/", false},
		{"/", false},
		{"/v1/models/ft:gpt-4o:org:x.y", false},
		{"/v1/files/file-abc/content", false},
		{"/v1/models/a..b", false},
		{"/v1/models?x=../..", false},
		{"/v1/..", true},
		{"/v1/../models", true},
		{"/./v1/models", true},
		{"/v1/%2e%2e/models", true},
		{"/v1/%2E/models", true},
		{"/v1/.%2E/models", true},
		{"/v1//models", true},
		{"//v1/models", true},
		{"/v1/models%2Fx", true},
		{"/v1/models%2fx", true},
		{"/v1/models%5Cx", true},
		{"/v1/models%252e%252e", true},
		{"/v1/models%00", true},
		{"/v1/models%0a", true},
	} {
		t.Run(tc.target, func(t *testing.T) {
			u, err := url.ParseRequestURI(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if why := unforwardablePath(u); (why != "") != tc.refused {
				t.Errorf("refused %q, want refused %v", why, tc.refused)
			}
		})
	}
}

func TestRetrieval(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{http.MethodGet, "/v1/responses/resp_1", true},
		{http.MethodGet, "/v1/responses/resp_1/", true},
		{http.MethodGet, "/V1/RESPONSES/resp_1", true},
		{http.MethodGet, "/v1/responses/resp_1/input_items", false},
		{http.MethodGet, "/v1/responses/", false},
		{http.MethodGet, "/v1/responses", false},
		{http.MethodGet, "/v1/chat/completions/c_1", true},
		{http.MethodGet, "/v1/chat/completions", true},
		{http.MethodGet, "/v1/chat/completions/c_1/messages", true},
		{http.MethodGet, "/v1/chat/completions/c_1/other", false},
		{http.MethodGet, "/v1/chat/completionsx", false},
		{http.MethodHead, "/v1/responses/resp_1", false},
		{http.MethodHead, "/v1/chat/completions/c_1", false},
		{http.MethodPost, "/v1/chat/completions/c_1", false},
		{http.MethodDelete, "/v1/responses/resp_1", false},
		{http.MethodDelete, "/v1/chat/completions/c_1", false},
	} {
		if _, got := retrieval(tc.method, tc.path); got != tc.want {
			t.Errorf("%s %s: retrieval %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestStoredChatOf(t *testing.T) {
	for _, tc := range []struct {
		path string
		want storedChat
	}{
		{"/v1/chat/completions", storedCompletions},
		{"/v1/chat/completions/", storedCompletions},
		{"/V1/Chat/Completions", storedCompletions},
		{"/v1/chat/completions/chatcmpl-1", storedCompletion},
		{"/v1/chat/completions/chatcmpl-1/", storedCompletion},
		{"/v1/chat/completions/chatcmpl-1/messages", storedMessages},
		{"/v1/chat/completions/chatcmpl-1/Messages/", storedMessages},
		{"/v1/chat/completions/chatcmpl-1/input_items", 0},
		{"/v1/chat/completions/chatcmpl-1/messages/m1", 0},
		{"/v1/chat/completionsx", 0},
		{"/v1/chat", 0},
		{"/v1/responses/resp_1", 0},
	} {
		if got := storedChatOf(tc.path); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.path, got, tc.want)
		}
	}
}

func TestStreamedRetrieval(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"", false},
		{"include[]=message.output_text.logprobs", false},
		{"stream=false", false},
		{"stream=0", false},
		{"stream=true", true},
		{"stream=1", true},
		{"Stream=TRUE", true},
		{"starting_after=4&stream=true", true},
		{"stream=false&stream=true", true},
		{"stream=", true},
		{"stream=yes", true},
		{"stream=true;x", true},
		{"a=%zz", true},
	} {
		if got := streamedRetrieval(tc.query); got != tc.want {
			t.Errorf("%q: streamed %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestEnforcesAnswers(t *testing.T) {
	g := func(mode policy.Mode, phases ...policy.Phase) *policy.Guardrail {
		var s policy.PhaseSet
		for _, p := range phases {
			s = s.With(p)
		}
		return &policy.Guardrail{Mode: mode, Phases: s}
	}
	for _, tc := range []struct {
		name       string
		guardrails []*policy.Guardrail
		want       bool
	}{
		{"no guardrail", nil, false},
		{"prompts only", []*policy.Guardrail{g(policy.ModeEnforce, policy.PhaseInput)}, false},
		{"an enforced Output phase", []*policy.Guardrail{g(policy.ModeEnforce, policy.PhaseInput, policy.PhaseOutput)}, true},
		{"an enforced Stream phase", []*policy.Guardrail{g(policy.ModeEnforce, policy.PhaseStream)}, true},
		{"an enforced ToolCalls phase", []*policy.Guardrail{g(policy.ModeEnforce, policy.PhaseToolCalls)}, true},
		{"a reported Output phase", []*policy.Guardrail{g(policy.ModeReport, policy.PhaseOutput, policy.PhaseStream)}, false},
		{"one of several", []*policy.Guardrail{g(policy.ModeReport, policy.PhaseOutput), g(policy.ModeEnforce, policy.PhaseOutput)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := enforcesAnswers(tc.guardrails); got != tc.want {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}

// TestBothBaseURLConventions: a client whose base URL holds /v1 (the AI SDK's Anthropic
// provider posts to $ANTHROPIC_BASE_URL/messages) and one whose base URL does not (the
// official SDKs post to $ANTHROPIC_BASE_URL/v1/messages) are both guarded, and the
// provider receives the versioned path.
func TestBothBaseURLConventions(t *testing.T) {
	h := newHarness(t, streamPolicy)
	cases := []struct{ path, body, want string }{
		{"/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "/v1/messages"},
		{"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "/v1/chat/completions"},
		{"/responses", `{"model":"m","input":"hi"}`, "/v1/responses"},
		{"/embeddings", `{"model":"m","input":"hi"}`, "/v1/embeddings"},
	}
	for _, tc := range cases {
		resp, body := h.post(t, tc.path, tc.body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("POST %s: %d %s", tc.path, resp.StatusCode, body)
			continue
		}
		if sent, _ := h.p.LastRequest(); sent.Path != tc.want {
			t.Errorf("POST %s reached the provider as %s, want %s", tc.path, sent.Path, tc.want)
		}
	}
	n := len(h.p.Requests())
	if resp, body := h.post(t, "/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"about bluebird"}]}`,
		"anthropic-version", "2023-06-01"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Bluebird") {
		t.Errorf("a prompt the policy blocks, without /v1: %d %s", resp.StatusCode, body)
	}
	if len(h.p.Requests()) != n {
		t.Error("the blocked prompt reached the provider")
	}
	if resp, body := h.post(t, "/completions", `{}`); resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "POST /v1/completions") {
		t.Errorf("an unguarded route without /v1: %d %s", resp.StatusCode, body)
	}
}
