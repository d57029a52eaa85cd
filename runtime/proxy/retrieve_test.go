package proxy

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// storedResponse is a Responses answer as GET /v1/responses/{id} returns it: the same
// object as the answer to a non-streamed POST.
func storedResponse(text string) string {
	return `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[` +
		`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"` + text + `"}]}],` +
		`"text":{"format":{"type":"text"}},"usage":{"input_tokens":1,"output_tokens":3,"total_tokens":4}}`
}

// storedToolCall is a stored Responses answer that is a function call.
const storedToolCall = `{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"m","output":[` +
	`{"id":"fc_1","type":"function_call","status":"completed","call_id":"c1","name":"search","arguments":"{\"q\":\"bluebird\"}"}],` +
	`"usage":{"input_tokens":1,"output_tokens":3,"total_tokens":4}}`

// storedResponses serves GET /v1/responses/{id} from answers (by id), reading the path
// without regard to case as some servers do, and counts the retrievals it served; every
// other request goes to the fake provider.
func storedResponses(answers map[string]string, served *atomic.Int64) harnessOpt {
	return upstreamVia(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, ok := strings.CutPrefix(strings.ToLower(r.URL.Path), "/v1/responses/")
			if r.Method != http.MethodGet || !ok || strings.Contains(id, "/") {
				next.ServeHTTP(w, r)
				return
			}
			served.Add(1)
			if r.URL.Query().Get("stream") == "true" || id == "resp_streams" {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"bluebird\"}\n\n"))
				return
			}
			body, ok := answers[id]
			if !ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"error":{"message":"No response found with id '` + id + `'.","type":"invalid_request_error","param":null,"code":null}}`))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		})
	})
}

// reportPolicy is streamPolicy in Report mode: it records, it never changes an answer.
var reportPolicy = strings.Replace(streamPolicy, "mode: Enforce", "mode: Report", 1)

// A Responses answer made with background: true is fetched later with GET
// /v1/responses/{id}, outside the exchange the guard judges. While a Guardrail enforces a
// phase that judges answers on this pod, the guard refuses background: true with 400
// naming the reason; the provider sees nothing.
func TestABackgroundResponseIsRefusedWhileAnswersAreJudged(t *testing.T) {
	const body = `{"model":"m","background":true,"input":"hi"}`
	t.Run("refused under a policy that judges answers", func(t *testing.T) {
		h := newHarness(t, streamPolicy)
		resp, b := h.post(t, "/v1/responses", body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "background") || !strings.Contains(string(b), `"type":"invalid_request_error"`) {
			t.Errorf("%d %s, want 400 naming background", resp.StatusCode, b)
		}
		if n := len(h.p.Requests()); n != 0 {
			t.Errorf("the provider received the request")
		}
	})
	for _, tc := range []struct{ name, policy string }{
		{"forwarded under a policy that judges prompts only", inputPolicy},
		{"forwarded under a policy that only reports", reportPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy)
			if resp, b := h.post(t, "/v1/responses", body); resp.StatusCode != http.StatusOK {
				t.Errorf("%d %s", resp.StatusCode, b)
			}
			if n := len(h.p.Requests()); n != 1 {
				t.Errorf("the provider received %d requests, want 1", n)
			}
		})
	}
	t.Run("background false passes", func(t *testing.T) {
		h := newHarness(t, streamPolicy)
		if resp, b := h.post(t, "/v1/responses", `{"model":"m","background":false,"input":"hi"}`); resp.StatusCode != http.StatusOK {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
}

// GET /v1/responses/{id} returns a stored answer (store defaults to true) as the provider
// made it, not as the guard let the client have it. The guard judges the retrieved answer
// with the Output and ToolCalls phases as it judges the answer to a non-streamed POST.
func TestARetrievedResponseIsJudgedAsAnAnswer(t *testing.T) {
	var served atomic.Int64
	answers := map[string]string{
		"resp_clean":  storedResponse("hello there"),
		"resp_secret": storedResponse("the bluebird plan"),
		"resp_tool":   storedToolCall,
	}
	h := newHarness(t, streamPolicy, storedResponses(answers, &served))

	t.Run("an allowed answer is returned byte for byte", func(t *testing.T) {
		resp, b := h.do(t, http.MethodGet, "/v1/responses/resp_clean", "")
		if resp.StatusCode != http.StatusOK || string(b) != answers["resp_clean"] {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
	for _, id := range []string{"resp_secret", "resp_tool"} {
		t.Run("a blocked answer is replaced by the reason: "+id, func(t *testing.T) {
			resp, b := h.do(t, http.MethodGet, "/v1/responses/"+id, "")
			if strings.Contains(string(b), "bluebird") || !strings.Contains(string(b), "Project Bluebird is not discussed here.") {
				t.Errorf("%d %s, want the answer replaced by the reason", resp.StatusCode, b)
			}
		})
	}
	t.Run("a path that is not the guard's spelling is judged too", func(t *testing.T) {
		_, b := h.do(t, http.MethodGet, "/V1/Responses/resp_secret", "")
		if strings.Contains(string(b), "bluebird") {
			t.Errorf("the stored answer reached the client unjudged: %s", b)
		}
	})
	t.Run("a provider's error passes through", func(t *testing.T) {
		resp, b := h.do(t, http.MethodGet, "/v1/responses/resp_gone", "")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "No response found") {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("a streamed retrieval is refused before the provider", func(t *testing.T) {
		before := served.Load()
		for _, q := range []string{"?stream=true", "?starting_after=3&stream=true", "?stream=1", "?Stream=true", "?stream=yes", "?stream=false&stream=true"} {
			resp, b := h.do(t, http.MethodGet, "/v1/responses/resp_secret"+q, "")
			if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "bluebird") {
				t.Errorf("%s: %d %s, want 400", q, resp.StatusCode, b)
			}
		}
		if served.Load() != before {
			t.Errorf("the provider was asked for a streamed retrieval")
		}
	})
	t.Run("an event stream the provider sends anyway is not passed on", func(t *testing.T) {
		resp, b := h.do(t, http.MethodGet, "/v1/responses/resp_streams", "")
		if strings.Contains(string(b), "bluebird") || resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("%d %s, want the stream refused as a failure", resp.StatusCode, b)
		}
	})
	t.Run("input items pass through", func(t *testing.T) {
		// Not a stored answer: the prompt as the guard forwarded it. The fake provider does
		// not know the route; what matters is that the guard forwards it.
		before := len(h.p.Requests())
		h.do(t, http.MethodGet, "/v1/responses/resp_clean/input_items", "")
		if len(h.p.Requests()) != before+1 {
			t.Errorf("input items were not forwarded")
		}
	})

	t.Run("refused without a policy, fail closed", func(t *testing.T) {
		var none atomic.Int64
		u := newHarness(t, "", storedResponses(answers, &none))
		resp, b := u.do(t, http.MethodGet, "/v1/responses/resp_secret", "")
		if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(b), "bluebird") || none.Load() != 0 {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
	})
}

// A stored answer retrieved with include[]=message.output_text.logprobs carries each
// token of the text again: a redaction that rewrote only the text would hand the client
// what it redacted in the logprobs. The rewritten part's logprobs are emptied, as a
// chat answer's are.
func TestARedactedRetrievedAnswerKeepsNoLogprobsOfWhatWasRedacted(t *testing.T) {
	const stored = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[` +
		`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],` +
		`"logprobs":[{"token":"Write to ","logprob":-0.1,"bytes":[],"top_logprobs":[]},{"token":"jane.doe@example.com","logprob":-0.2,"bytes":[],"top_logprobs":[]}],` +
		`"text":"Write to jane.doe@example.com"}]}],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}`
	var served atomic.Int64
	h := newHarness(t, redactPolicy, storedResponses(map[string]string{"resp_1": stored}, &served))
	resp, b := h.do(t, http.MethodGet, "/v1/responses/resp_1?include[]=message.output_text.logprobs", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "[REDACTED:") || strings.Contains(string(b), "jane.doe") {
		t.Errorf("%d %s, want the address redacted everywhere", resp.StatusCode, b)
	}
}
