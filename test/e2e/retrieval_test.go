package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// Responses answers collected later, through the guard binary, with openai-go: a stored
// answer fetched with Responses.Get is judged as the answer to a non-streamed request; a
// background request and a streamed retrieval are API errors while answers are judged.

// storedAnswer is a Responses object as GET /v1/responses/{id} returns it.
func storedAnswer(id, text string) string {
	return `{"id":"` + id + `","object":"response","created_at":1,"status":"completed","model":"gpt-e2e","output":[` +
		`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"` + text + `"}]}],` +
		`"text":{"format":{"type":"text"}},"usage":{"input_tokens":1,"output_tokens":3,"total_tokens":4}}`
}

func TestResponsesCollectedLaterAreJudgedOrRefused(t *testing.T) {
	stored := map[string]string{
		"resp_clean":  storedAnswer("resp_clean", "hello there"),
		"resp_secret": storedAnswer("resp_secret", "the bluebird plan"),
	}
	var mu sync.Mutex
	var calls []string
	called := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(calls) }
	provider := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		id, ok := strings.CutPrefix(r.URL.Path, "/v1/responses/")
		if body, found := stored[id]; ok && found && r.Method == http.MethodGet {
			_, _ = w.Write([]byte(body))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"not found","type":"invalid_request_error","param":null,"code":null}}`))
	}))
	g := startGuard(t, streamedBluebird(t), upstream(provider))
	c := openaiClient(g)
	ctx := testContext(t)

	t.Run("an allowed stored answer is the provider's", func(t *testing.T) {
		res, err := c.Responses.Get(ctx, "resp_clean", responses.ResponseGetParams{})
		if err != nil || res.OutputText() != "hello there" || res.Status != "completed" {
			t.Fatalf("%v: %+v", err, res)
		}
	})
	t.Run("a stored answer the policy blocks reaches the SDK as the block", func(t *testing.T) {
		res, err := c.Responses.Get(ctx, "resp_secret", responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		if strings.Contains(string(raw), "bluebird plan") || res.OutputText() != bluebirdReason ||
			res.Status != "incomplete" || res.IncompleteDetails.Reason != "content_filter" {
			t.Fatalf("the SDK holds %s", raw)
		}
	})
	t.Run("a background request is an API error", func(t *testing.T) {
		before := len(called())
		params := responsesParams("hi")
		params.Background = openai.Bool(true)
		_, err := c.Responses.New(ctx, params)
		apiErr, ok := errAs[*openai.Error](err)
		if !ok || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "unsupported_parameter" || !strings.Contains(apiErr.Message, "background") {
			t.Fatalf("error %v, want a 400 naming background", err)
		}
		if got := called(); len(got) != before {
			t.Errorf("the provider was called: %v", got[before:])
		}
	})
	t.Run("a streamed retrieval is an API error", func(t *testing.T) {
		// openai-go sends stream in the body of the GET; the guard refuses GETs with a body.
		before := len(called())
		stream := c.Responses.GetStreaming(ctx, "resp_secret", responses.ResponseGetParams{})
		defer func() { _ = stream.Close() }()
		for stream.Next() {
			if strings.Contains(stream.Current().RawJSON(), "bluebird") {
				t.Fatal("an unjudged event reached the SDK")
			}
		}
		apiErr, ok := errAs[*openai.Error](stream.Err())
		if !ok || apiErr.StatusCode != http.StatusBadRequest {
			t.Fatalf("error %v, want a 400", stream.Err())
		}
		if got := called(); len(got) != before {
			t.Errorf("the provider was called: %v", got[before:])
		}
	})
}
