package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// Stored chat completions as OpenAI returns them (API reference: "Get chat completion",
// "List Chat Completions", "Get chat messages"): the completion object repeats its
// request's settings (seed, temperature, tools, response_format, metadata, request_id);
// lists are {"object":"list","data":[…],"first_id","last_id","has_more"}; a stored message
// (ChatCompletionStoreMessage) is a message with an id and content_parts (null, or the
// text and image_url parts the request sent).

// storedChatCompletion is GET /v1/chat/completions/{id} answering content.
func storedChatCompletion(id, text string) string {
	return `{"object":"chat.completion","id":"` + id + `","model":"gpt-4o-2024-08-06","created":1738960610,` +
		`"request_id":"req_ded8ab984ec4bf840f37566c1011c417","tool_choice":null,` +
		`"usage":{"total_tokens":31,"completion_tokens":18,"prompt_tokens":13},"seed":4944116822809979520,` +
		`"top_p":1.0,"temperature":1.0,"presence_penalty":0.0,"frequency_penalty":0.0,"system_fingerprint":"fp_50cad350e4",` +
		`"input_user":null,"service_tier":"default","tools":null,"metadata":{},` +
		`"choices":[{"index":0,"message":{"content":"` + text + `","role":"assistant","tool_calls":null,"function_call":null},` +
		`"finish_reason":"stop","logprobs":null}],"response_format":null}`
}

// storedToolCallCompletion is a stored completion that calls a tool.
const storedToolCallCompletion = `{"object":"chat.completion","id":"chatcmpl-tool","model":"gpt-4o","created":1,"metadata":{},` +
	`"choices":[{"index":0,"message":{"content":null,"role":"assistant","tool_calls":[{"id":"call_1","type":"function",` +
	`"function":{"name":"search","arguments":"{\"q\":\"bluebird\"}"}}]},"finish_reason":"tool_calls","logprobs":null}],` +
	`"usage":{"total_tokens":3,"completion_tokens":2,"prompt_tokens":1}}`

// storedList is a list page of items.
func storedList(first, last string, items ...string) string {
	return `{"object":"list","data":[` + strings.Join(items, ",") + `],"first_id":"` + first + `","last_id":"` + last + `","has_more":false}`
}

// storedMessage is one stored message; parts, when set, is its content_parts JSON.
func storedMessage(id, role, text, parts string) string {
	if parts == "" {
		parts = "null"
	}
	return `{"id":"` + id + `","role":"` + role + `","content":"` + text + `","name":null,"content_parts":` + parts + `}`
}

// storedChats serves the stored chat completion routes from bodies (keyed by the path
// after /v1/chat/completions, "" for the list), reading the path without regard to case,
// and counts what it served; every other request goes to the fake provider.
func storedChats(bodies map[string]string, served *atomic.Int64) harnessOpt {
	return upstreamVia(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rest, ok := strings.CutPrefix(strings.ToLower(r.URL.Path), "/v1/chat/completions")
			if r.Method != http.MethodGet || !ok {
				next.ServeHTTP(w, r)
				return
			}
			served.Add(1)
			rest = strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/")
			if rest == "chatcmpl-streams" {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bluebird\"}}]}\n\n"))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			body, ok := bodies[rest]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"error":{"message":"Chat completion ` + rest + ` not found.","type":"invalid_request_error","param":null,"code":null}}`))
				return
			}
			_, _ = w.Write([]byte(body))
		})
	})
}

// message returns the message of choice i of a chat completion body.
func completionMessage(t *testing.T, body []byte, i int) (msg map[string]any, finish string) {
	t.Helper()
	var c struct {
		Choices []struct {
			Message      map[string]any `json:"message"`
			FinishReason string         `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) <= i {
		t.Fatalf("not a chat completion with choice %d: %v %s", i, err, body)
	}
	return c.Choices[i].Message, c.Choices[i].FinishReason
}

const bluebirdReason = "Project Bluebird is not discussed here."

// GET /v1/chat/completions/{id} returns a stored chat completion as the provider made it:
// made by any app of the project, through the guard or not. The guard judges it as the
// answer to a non-streamed request.
func TestAStoredChatCompletionIsJudgedAsAnAnswer(t *testing.T) {
	var served atomic.Int64
	bodies := map[string]string{
		"chatcmpl-clean":  storedChatCompletion("chatcmpl-clean", "hello there"),
		"chatcmpl-secret": storedChatCompletion("chatcmpl-secret", "the bluebird plan"),
		"chatcmpl-tool":   storedToolCallCompletion,
	}
	h := newHarness(t, streamPolicy, storedChats(bodies, &served))

	t.Run("an allowed answer is returned byte for byte", func(t *testing.T) {
		resp, b := h.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-clean", "")
		if resp.StatusCode != http.StatusOK || string(b) != bodies["chatcmpl-clean"] {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
	for _, id := range []string{"chatcmpl-secret", "chatcmpl-tool"} {
		t.Run("a blocked answer is replaced by the reason: "+id, func(t *testing.T) {
			resp, b := h.do(t, http.MethodGet, "/v1/chat/completions/"+id, "")
			if resp.StatusCode != http.StatusOK || strings.Contains(string(b), "bluebird") {
				t.Fatalf("%d %s, want the answer replaced by the reason", resp.StatusCode, b)
			}
			msg, finish := completionMessage(t, b, 0)
			if msg["content"] != bluebirdReason || finish != "content_filter" || msg["tool_calls"] != nil {
				t.Errorf("message %v finish %q", msg, finish)
			}
			if !strings.Contains(string(b), `"id":"`+id+`"`) || !strings.Contains(string(b), `"usage"`) {
				t.Errorf("the blocked answer lost its id or usage: %s", b)
			}
		})
	}
	t.Run("a path that is not the guard's spelling is judged too", func(t *testing.T) {
		for _, path := range []string{"/V1/Chat/Completions/chatcmpl-secret", "/v1/chat/completions/chatcmpl-secret/", "/chat/completions/chatcmpl-secret"} {
			if _, b := h.do(t, http.MethodGet, path, ""); strings.Contains(string(b), "bluebird") {
				t.Errorf("%s: the stored answer reached the client unjudged: %s", path, b)
			}
		}
	})
	t.Run("a provider's error passes through", func(t *testing.T) {
		resp, b := h.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-gone", "")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "not found") {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("an event stream the provider sends is not passed on", func(t *testing.T) {
		resp, b := h.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-streams", "")
		if strings.Contains(string(b), "bluebird") || resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("%d %s, want the stream refused as a failure", resp.StatusCode, b)
		}
	})
	t.Run("a body that is no chat completion is refused as a failure", func(t *testing.T) {
		var n atomic.Int64
		u := newHarness(t, streamPolicy, storedChats(map[string]string{"chatcmpl-x": `{"choices":"bluebird"}`}, &n))
		resp, b := u.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-x", "")
		if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(b), "bluebird") {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("refused without a policy, fail closed", func(t *testing.T) {
		var none atomic.Int64
		u := newHarness(t, "", storedChats(bodies, &none))
		resp, b := u.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-secret", "")
		if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(b), "bluebird") || none.Load() != 0 {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("counted as a chat completions request", func(t *testing.T) {
		if n := h.counter(t, "guard_requests_total", "family", "chat/completions", "outcome", "blocked"); n < 2 {
			t.Errorf("blocked retrievals counted %v", n)
		}
	})
}

// A redacted stored answer is the redacted body; Report mode counts what it would do and
// changes nothing.
func TestAStoredChatCompletionIsRedactedOrReported(t *testing.T) {
	var served atomic.Int64
	bodies := map[string]string{"chatcmpl-mail": storedChatCompletion("chatcmpl-mail", "Write to jane.doe@example.com today.")}
	t.Run("redacted", func(t *testing.T) {
		h := newHarness(t, redactPolicy, storedChats(bodies, &served))
		resp, b := h.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-mail", "")
		msg, finish := completionMessage(t, b, 0)
		if resp.StatusCode != http.StatusOK || msg["content"] != "Write to [REDACTED:email] today." || finish != "stop" {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
		if !strings.Contains(string(b), `"seed":4944116822809979520`) || !strings.Contains(string(b), `"request_id":"req_ded8ab984ec4bf840f37566c1011c417"`) {
			t.Errorf("fields the guard does not judge were changed: %s", b)
		}
	})
	t.Run("reported", func(t *testing.T) {
		h := newHarness(t, strings.Replace(redactPolicy, "mode: Enforce", "mode: Report", 1), storedChats(bodies, &served))
		resp, b := h.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-mail", "")
		if resp.StatusCode != http.StatusOK || string(b) != bodies["chatcmpl-mail"] {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
		if n := h.counter(t, "guard_decisions_total", "guardrail", "default/redact-pii", "phase", "Output", "outcome", "wouldRedact"); n != 1 {
			t.Errorf("wouldRedact decisions %v, want 1", n)
		}
	})
}

// GET /v1/chat/completions lists stored completions, of every app of the project: each is
// judged as an answer on its own, a blocked one replaced in the list by the verdict, the
// others and the page's cursor kept.
func TestStoredChatCompletionListsAreJudgedOneByOne(t *testing.T) {
	var served atomic.Int64
	clean, secret := storedChatCompletion("chatcmpl-a", "hello there"), storedChatCompletion("chatcmpl-b", "the bluebird plan")
	mail := storedChatCompletion("chatcmpl-c", "Write to jane.doe@example.com today.")
	bodies := map[string]string{"": storedList("chatcmpl-a", "chatcmpl-c", clean, secret, mail, storedToolCallCompletion)}
	h := newHarness(t, streamPolicy, storedChats(bodies, &served))

	resp, b := h.do(t, http.MethodGet, "/v1/chat/completions?limit=4&order=asc&metadata[app]=mail", "")
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), "bluebird") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var page struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		FirstID string            `json:"first_id"`
		HasMore *bool             `json:"has_more"`
	}
	if err := json.Unmarshal(b, &page); err != nil || page.Object != "list" || len(page.Data) != 4 || page.FirstID != "chatcmpl-a" || page.HasMore == nil {
		t.Fatalf("%v %s", err, b)
	}
	if string(page.Data[0]) != clean || string(page.Data[2]) != mail {
		t.Errorf("allowed completions were changed: %s", b)
	}
	for _, i := range []int{1, 3} {
		if msg, finish := completionMessage(t, page.Data[i], 0); msg["content"] != bluebirdReason || finish != "content_filter" {
			t.Errorf("item %d: %s", i, page.Data[i])
		}
	}
	if n := h.counter(t, "guard_requests_total", "family", "chat/completions", "outcome", "blocked"); n != 1 {
		t.Errorf("the list counted %v blocked requests, want 1", n)
	}

	t.Run("a list with nothing to change is returned byte for byte", func(t *testing.T) {
		bodies[""] = storedList("chatcmpl-a", "chatcmpl-c", clean, mail)
		resp, b := h.do(t, http.MethodGet, "/v1/chat/completions/", "")
		if resp.StatusCode != http.StatusOK || string(b) != bodies[""] {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("redacted items are rewritten", func(t *testing.T) {
		u := newHarness(t, redactPolicy, storedChats(map[string]string{"": storedList("chatcmpl-a", "chatcmpl-c", clean, mail)}, &served))
		_, b := u.do(t, http.MethodGet, "/v1/chat/completions", "")
		if strings.Contains(string(b), "jane.doe") || !strings.Contains(string(b), "[REDACTED:email]") || !strings.Contains(string(b), clean) {
			t.Errorf("%s", b)
		}
	})
	t.Run("a page that is not a list is refused as a failure", func(t *testing.T) {
		u := newHarness(t, streamPolicy, storedChats(map[string]string{"": `{"object":"list","data":{"x":"bluebird"}}`}, &served))
		resp, b := u.do(t, http.MethodGet, "/v1/chat/completions", "")
		if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(b), "bluebird") {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
}

// GET /v1/chat/completions/{id}/messages returns the messages of a stored completion, its
// prompt included, with their text again in content_parts when the request sent parts.
// Each message is judged as an answer; a blocked one keeps its id and role, with the
// reason as its content.
func TestStoredChatMessagesAreJudged(t *testing.T) {
	var served atomic.Int64
	plain := storedMessage("chatcmpl-1-0", "user", "hello", "")
	secret := storedMessage("chatcmpl-1-1", "user", "the bluebird plan", "")
	parts := storedMessage("chatcmpl-1-2", "user", "see the picture",
		`[{"type":"text","text":"see the bluebird picture"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"auto"}}]`)
	mail := storedMessage("chatcmpl-1-3", "user", "Write to jane.doe@example.com", `[{"type":"text","text":"Write to jane.doe@example.com"}]`)
	bodies := map[string]string{"chatcmpl-1/messages": storedList("chatcmpl-1-0", "chatcmpl-1-3", plain, secret, parts, mail)}
	h := newHarness(t, streamPolicy, storedChats(bodies, &served))

	resp, b := h.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-1/messages?limit=20", "")
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), "bluebird") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &page); err != nil || len(page.Data) != 4 {
		t.Fatalf("%v %s", err, b)
	}
	if string(page.Data[0]) != plain || string(page.Data[3]) != mail {
		t.Errorf("allowed messages were changed: %s", b)
	}
	for _, i := range []int{1, 2} {
		var m map[string]any
		if err := json.Unmarshal(page.Data[i], &m); err != nil {
			t.Fatal(err)
		}
		if m["id"] != "chatcmpl-1-"+string(rune('0'+i)) || m["role"] != "user" || m["content"] != bluebirdReason {
			t.Errorf("message %d: %s", i, page.Data[i])
		}
	}

	t.Run("redacted in content and in content_parts", func(t *testing.T) {
		u := newHarness(t, redactPolicy, storedChats(bodies, &served))
		_, b := u.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-1/MESSAGES/", "")
		if strings.Contains(string(b), "jane.doe") || strings.Count(string(b), "Write to [REDACTED:email]") != 2 || !strings.Contains(string(b), "https://example.com/a.png") {
			t.Errorf("%s", b)
		}
	})
	t.Run("other sub-routes pass through", func(t *testing.T) {
		before := served.Load()
		resp, _ := h.do(t, http.MethodGet, "/v1/chat/completions/chatcmpl-1/other", "")
		if served.Load() != before+1 || resp.StatusCode != http.StatusNotFound {
			t.Errorf("%d, not forwarded as it is", resp.StatusCode)
		}
	})
}
