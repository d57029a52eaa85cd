package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// OpenAI chat completions through the guard binary, with openai-go as the client.

func newProvider(t *testing.T) *fakeprovider.Provider {
	p := fakeprovider.New()
	t.Cleanup(p.Close)
	return p
}

func chatParams(prompt string, tools ...openai.ChatCompletionToolUnionParam) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "gpt-e2e", Tools: tools,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
}

// shellTool is a function tool with a string argument "command".
var shellTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "shell",
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}})

// chatStream reads a whole stream with the SDK and returns the accumulated completion,
// every chunk, and the stream's error.
func chatStream(ctx context.Context, c openai.Client, params openai.ChatCompletionNewParams) (openai.ChatCompletionAccumulator, []openai.ChatCompletionChunk, error) {
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	defer func() { _ = stream.Close() }()
	var acc openai.ChatCompletionAccumulator
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		chunks = append(chunks, chunk)
	}
	return acc, chunks, stream.Err()
}

// lastFinish returns the last finish_reason a stream carried.
func lastFinish(chunks []openai.ChatCompletionChunk) string {
	finish := ""
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	return finish
}

func TestChatAllowedTrafficIsTheProvidersBytes(t *testing.T) {
	hook, url := allowingWebhook(t)
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		webhookClassifier("judge", url, "", "harm"),
		guardrail("watch", "judge", phases(v1alpha1.PhaseInput, v1alpha1.PhaseStream, v1alpha1.PhaseOutput), streaming(0, 0)),
	), upstream(p.URL))

	for _, tc := range []struct {
		name, body string
	}{
		{"a streamed completion reaches the client event by event", `{"model":"gpt-e2e","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"a streamed completion with a usage chunk reaches the client event by event", `{"model":"gpt-e2e","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
		{"a streamed completion of two choices reaches the client event by event", `{"model":"gpt-e2e","stream":true,"n":2,"messages":[{"role":"user","content":"hi"}]}`},
		{"a completion reaches the client byte for byte", `{"model":"gpt-e2e","messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Enqueue(fakeprovider.Reply("The answer ", "is forty", "-two, as ", "always."))
			resp, got := rawPost(t, g.URL+"/v1/chat/completions", tc.body)
			sent := lastResponse(t, p)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			if sent.Stream {
				assertSameEvents(t, got, sent)
			} else if string(got) != string(sent.Body) {
				t.Errorf("body differs:\nreceived: %s\nsent:     %s", got, sent.Body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != sent.Header.Get("Content-Type") {
				t.Errorf("Content-Type %q, the provider sent %q", ct, sent.Header.Get("Content-Type"))
			}
		})
	}
	if hook.Count() == 0 {
		t.Error("the classifier was never called: the guardrail did not apply")
	}

	t.Run("the SDK reads the streamed answer", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The answer ", "is forty", "-two."))
		acc, _, err := chatStream(testContext(t), openaiClient(g), chatParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != "The answer is forty-two." {
			t.Errorf("content %q", got)
		}
	})
}

func TestChatInputBlockIsAnAPIError(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, bluebird(t, v1alpha1.PhaseInput), upstream(p.URL))
	c := openaiClient(g)

	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"a blocked completion request", func(ctx context.Context) error {
			_, err := c.Chat.Completions.New(ctx, chatParams("tell me about bluebird"))
			return err
		}},
		{"a blocked streamed completion request", func(ctx context.Context) error {
			_, _, err := chatStream(ctx, c, chatParams("tell me about bluebird"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(testContext(t))
			apiErr, ok := errAs[*openai.Error](err)
			if !ok {
				t.Fatalf("error %v (%T), want *openai.Error", err, err)
			}
			if apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "content_policy_violation" ||
				apiErr.Type != "invalid_request_error" || apiErr.Message != "Project Bluebird is not discussed here." {
				t.Errorf("error %d type %q code %q message %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
			}
			if !strings.Contains(apiErr.RawJSON(), `"guardrail":"default/no-bluebird"`) {
				t.Errorf("error body does not name the guardrail: %s", apiErr.RawJSON())
			}
		})
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("the provider received %d requests; blocked input must not be sent upstream", n)
	}
}

func TestChatStreamBlockEndsWithContentFilter(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, bluebird(t, v1alpha1.PhaseStream, v1alpha1.PhaseOutput), upstream(p.URL))
	c := openaiClient(g)

	t.Run("a streamed answer stops with finish_reason content_filter and the reason", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The code name ", "is blue", "bird and ", "it launches soon."))
		acc, chunks, err := chatStream(testContext(t), c, chatParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if f := lastFinish(chunks); f != "content_filter" {
			t.Errorf("last finish_reason %q, want content_filter", f)
		}
		got := acc.Choices[0].Message.Content
		if !strings.HasSuffix(got, "Project Bluebird is not discussed here.") || strings.Contains(got, "bluebird") || strings.Contains(got, "launches") {
			t.Errorf("content %q", got)
		}
	})
	t.Run("a whole answer is replaced by the reason with finish_reason content_filter", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The code name is bluebird."))
		res, err := c.Chat.Completions.New(testContext(t), chatParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if ch := res.Choices[0]; ch.FinishReason != "content_filter" || ch.Message.Content != "Project Bluebird is not discussed here." {
			t.Errorf("finish %q content %q", ch.FinishReason, ch.Message.Content)
		}
	})
}

func TestChatClassifierFailureMidStreamIsAStreamError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failure fakeclassifiers.Reply
	}{
		{"a classifier that starts answering 500", fakeclassifiers.Status(http.StatusInternalServerError)},
		{"a classifier that starts timing out", fakeclassifiers.Hang()},
		{"a classifier that starts answering invalid JSON", fakeclassifiers.Raw(`{"scores":{"harm":`)},
		{"a classifier that starts answering a score outside [0,1]", fakeclassifiers.WebhookScores(fakeclassifiers.Scores{"harm": 1.5})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook, url := webhookFailingWith(t, 2, tc.failure)
			p := newProvider(t)
			g := startGuard(t, policyFile(t,
				webhookClassifier("judge", url, "", "harm"),
				guardrail("watch", "judge", phases(v1alpha1.PhaseStream), streaming(0, 0), timeout(2*time.Second)),
			), upstream(p.URL))

			p.Enqueue(fakeprovider.Reply("one ", "two ", "three ", "four ", "five"))
			acc, _, err := chatStream(testContext(t), openaiClient(g), chatParams("hi"))
			streamErr, ok := errAs[*ssestream.StreamError](err)
			if !ok {
				t.Fatalf("error %v (%T), want *ssestream.StreamError", err, err)
			}
			if !strings.Contains(streamErr.Message, `"code":"policy_evaluation_failed"`) {
				t.Errorf("stream error %q does not carry policy_evaluation_failed", streamErr.Message)
			}
			if got := acc.Choices[0].Message.Content; got != "one two " {
				t.Errorf("content before the failure %q, want the two judged deltas", got)
			}
			if n := hook.Count(); n != 3 {
				t.Errorf("classifier called %d times, want 3 (the stream stops at the failure)", n)
			}
			if v := g.metric(`guard_streams_aborted_total{reason="failed"}`); v != 1 {
				t.Errorf("guard_streams_aborted_total{reason=\"failed\"} = %v, want 1", v)
			}
		})
	}
}

func TestChatRedactsACardSplitAcrossDeltas(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		piiClassifier("pii"),
		guardrail("redact-pii", "pii", phases(v1alpha1.PhaseStream, v1alpha1.PhaseOutput), action(v1alpha1.ActionRedact), reason("PII is removed.")),
	), upstream(p.URL))
	c := openaiClient(g)
	const want = "Charge it to [REDACTED:credit-card] today."

	t.Run("in a stream", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Charge it to 4111 1111", " 1111 11", "11 today."))
		acc, chunks, err := chatStream(testContext(t), c, chatParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != want {
			t.Errorf("content %q, want %q", got, want)
		}
		if f := lastFinish(chunks); f != "stop" {
			t.Errorf("finish_reason %q, want stop", f)
		}
	})
	t.Run("in a whole answer", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Charge it to 4111 1111", " 1111 11", "11 today."))
		res, err := c.Chat.Completions.New(testContext(t), chatParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Choices[0].Message.Content; got != want {
			t.Errorf("content %q, want %q", got, want)
		}
	})
}

func TestChatBlockedToolCallNeverReachesTheClient(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		keywordClassifier("commands", "destructive", "rm"),
		guardrail("no-rm", "commands", phases(v1alpha1.PhaseToolCalls), reason("Destructive commands are not allowed.")),
	), upstream(p.URL))
	c := openaiClient(g)
	call := func(args ...string) fakeprovider.Script { return shellCall("call_1", args...) }

	t.Run("a streamed blocked call is withheld and the stream ends with content_filter", func(t *testing.T) {
		p.Enqueue(call(`{"command":`, `"rm -rf /"}`))
		acc, chunks, err := chatStream(testContext(t), c, chatParams("clean up", shellTool))
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range chunks {
			for _, ch := range chunk.Choices {
				if len(ch.Delta.ToolCalls) > 0 {
					t.Errorf("the client received a tool call delta: %s", chunk.RawJSON())
				}
			}
		}
		if f := lastFinish(chunks); f != "content_filter" {
			t.Errorf("last finish_reason %q, want content_filter", f)
		}
		if got := acc.Choices[0].Message.Content; !strings.HasSuffix(got, "Destructive commands are not allowed.") {
			t.Errorf("content %q", got)
		}
	})
	t.Run("a blocked call in a whole answer is replaced by the reason, after the text before it", func(t *testing.T) {
		p.Enqueue(call(`{"command":"rm -rf /"}`))
		res, err := c.Chat.Completions.New(testContext(t), chatParams("clean up", shellTool))
		if err != nil {
			t.Fatal(err)
		}
		ch := res.Choices[0]
		if len(ch.Message.ToolCalls) != 0 || ch.FinishReason != "content_filter" || ch.Message.Content != "Running it.\n\nDestructive commands are not allowed." {
			t.Errorf("finish %q content %q tool calls %d", ch.FinishReason, ch.Message.Content, len(ch.Message.ToolCalls))
		}
	})
	t.Run("an allowed streamed call arrives whole", func(t *testing.T) {
		p.Enqueue(call(`{"command":`, `"ls -l"}`))
		acc, chunks, err := chatStream(testContext(t), c, chatParams("list", shellTool))
		if err != nil {
			t.Fatal(err)
		}
		calls := acc.Choices[0].Message.ToolCalls
		if len(calls) != 1 || calls[0].ID != "call_1" || calls[0].Function.Name != "shell" || calls[0].Function.Arguments != `{"command":"ls -l"}` {
			t.Errorf("tool calls %+v", calls)
		}
		if f := lastFinish(chunks); f != "tool_calls" {
			t.Errorf("finish_reason %q, want tool_calls", f)
		}
	})
	t.Run("an allowed call in a whole answer arrives", func(t *testing.T) {
		p.Enqueue(call(`{"command":"ls -l"}`))
		res, err := c.Chat.Completions.New(testContext(t), chatParams("list", shellTool))
		if err != nil {
			t.Fatal(err)
		}
		calls := res.Choices[0].Message.ToolCalls
		if len(calls) != 1 || calls[0].Function.Name != "shell" || calls[0].Function.Arguments != `{"command":"ls -l"}` {
			t.Errorf("tool calls %+v", calls)
		}
	})
}
