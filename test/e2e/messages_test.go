package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The Anthropic Messages API through the guard binary, with anthropic-sdk-go as the
// client. Anthropic has no content_filter stop reason: the guard ends a blocked message
// with stop_reason "refusal", Anthropic's native signal for content the model will not
// produce (runtime/wire documents the mapping).

func messageParams(prompt string, tools ...anthropic.ToolUnionParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: "claude-e2e", MaxTokens: 256, Tools: tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
}

var shellToolUse = anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
	Properties: map[string]any{"command": map[string]any{"type": "string"}}}, "shell")

// messageStream reads a whole stream with the SDK and returns the accumulated message,
// the events, and the stream's error.
func messageStream(ctx context.Context, c anthropic.Client, params anthropic.MessageNewParams) (anthropic.Message, []anthropic.MessageStreamEventUnion, error) {
	stream := c.Messages.NewStreaming(ctx, params)
	defer func() { _ = stream.Close() }()
	var msg anthropic.Message
	var events []anthropic.MessageStreamEventUnion
	for stream.Next() {
		ev := stream.Current()
		events = append(events, ev)
		if err := msg.Accumulate(ev); err != nil {
			return msg, events, err
		}
	}
	return msg, events, stream.Err()
}

// messageText joins a message's text blocks.
func messageText(m *anthropic.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func toolUses(m *anthropic.Message) []anthropic.ContentBlockUnion {
	var out []anthropic.ContentBlockUnion
	for _, c := range m.Content {
		if c.Type == "tool_use" {
			out = append(out, c)
		}
	}
	return out
}

var anthropicHeaders = []string{"anthropic-version", "2023-06-01", "x-api-key", apiKey}

func TestMessagesAllowedTrafficIsTheProvidersBytes(t *testing.T) {
	hook, url := allowingWebhook(t)
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		webhookClassifier("judge", url, "", "harm"),
		guardrail("watch", "judge", phases(v1alpha1.PhaseInput, v1alpha1.PhaseStream, v1alpha1.PhaseOutput), streaming(0, 0)),
	), upstream(p.URL))

	for _, tc := range []struct {
		name, body string
	}{
		{"a streamed message reaches the client event by event", `{"model":"claude-e2e","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"a message reaches the client byte for byte", `{"model":"claude-e2e","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Enqueue(fakeprovider.Reply("The answer ", "is forty", "-two, as ", "always."))
			resp, got := rawPost(t, g.URL+"/v1/messages", tc.body, anthropicHeaders...)
			sent := lastResponse(t, p)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			if sent.Stream {
				assertSameEvents(t, got, sent)
			} else if string(got) != string(sent.Body) {
				t.Errorf("body differs:\nreceived: %s\nsent:     %s", got, sent.Body)
			}
			if id := resp.Header.Get("request-id"); id == "" || id != sent.Header.Get("request-id") {
				t.Errorf("request-id %q, the provider sent %q", id, sent.Header.Get("request-id"))
			}
		})
	}
	if hook.Count() == 0 {
		t.Error("the classifier was never called: the guardrail did not apply")
	}

	t.Run("the SDK reads the streamed answer", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The answer ", "is forty", "-two."))
		msg, _, err := messageStream(testContext(t), anthropicClient(g), messageParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := messageText(&msg); got != "The answer is forty-two." || msg.StopReason != anthropic.StopReasonEndTurn {
			t.Errorf("text %q stop_reason %q", got, msg.StopReason)
		}
	})
}

func TestMessagesInputBlockIsAnAPIError(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, bluebird(t, v1alpha1.PhaseInput), upstream(p.URL))
	c := anthropicClient(g)

	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"a blocked message request", func(ctx context.Context) error {
			_, err := c.Messages.New(ctx, messageParams("tell me about bluebird"))
			return err
		}},
		{"a blocked streamed message request", func(ctx context.Context) error {
			_, _, err := messageStream(ctx, c, messageParams("tell me about bluebird"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(testContext(t))
			apiErr, ok := errAs[*anthropic.Error](err)
			if !ok {
				t.Fatalf("error %v (%T), want *anthropic.Error", err, err)
			}
			if apiErr.StatusCode != http.StatusBadRequest || apiErr.ErrorCode() != "content_policy_violation" ||
				apiErr.Type() != "invalid_request_error" || apiErr.Message != "Project Bluebird is not discussed here." {
				t.Errorf("error %d type %q code %q message %q", apiErr.StatusCode, apiErr.Type(), apiErr.ErrorCode(), apiErr.Message)
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

func TestMessagesStreamBlockEndsWithRefusal(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, bluebird(t, v1alpha1.PhaseStream, v1alpha1.PhaseOutput), upstream(p.URL))
	c := anthropicClient(g)

	t.Run("a streamed message stops with stop_reason refusal and the reason", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The code name ", "is blue", "bird and ", "it launches soon."))
		msg, events, err := messageStream(testContext(t), c, messageParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonRefusal {
			t.Errorf("stop_reason %q, want refusal", msg.StopReason)
		}
		if last := events[len(events)-1].Type; last != "message_stop" {
			t.Errorf("last event %q, want message_stop", last)
		}
		if got := messageText(&msg); !strings.HasSuffix(got, "Project Bluebird is not discussed here.") || strings.Contains(got, "bluebird") {
			t.Errorf("text %q", got)
		}
	})
	t.Run("a whole message is replaced by the reason with stop_reason refusal", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The code name is bluebird."))
		msg, err := c.Messages.New(testContext(t), messageParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonRefusal || messageText(msg) != "Project Bluebird is not discussed here." {
			t.Errorf("stop_reason %q text %q", msg.StopReason, messageText(msg))
		}
	})
}

func TestMessagesClassifierFailureMidStreamIsAStreamError(t *testing.T) {
	_, url := failingWebhook(t, 2)
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		webhookClassifier("judge", url, "", "harm"),
		guardrail("watch", "judge", phases(v1alpha1.PhaseStream), streaming(0, 0)),
	), upstream(p.URL))

	p.Enqueue(fakeprovider.Reply("one ", "two ", "three ", "four ", "five"))
	msg, _, err := messageStream(testContext(t), anthropicClient(g), messageParams("hi"))
	apiErr, ok := errAs[*anthropic.Error](err)
	if !ok {
		t.Fatalf("error %v (%T), want *anthropic.Error", err, err)
	}
	if apiErr.ErrorCode() != "policy_evaluation_failed" || apiErr.Message != "policy evaluation failed" || apiErr.Type() != "api_error" {
		t.Errorf("stream error type %q code %q message %q", apiErr.Type(), apiErr.ErrorCode(), apiErr.Message)
	}
	if got := messageText(&msg); got != "one two " {
		t.Errorf("text before the failure %q, want the two judged deltas", got)
	}
}

func TestMessagesRedactsACardSplitAcrossDeltas(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		piiClassifier("pii"),
		guardrail("redact-pii", "pii", phases(v1alpha1.PhaseStream, v1alpha1.PhaseOutput), action(v1alpha1.ActionRedact), reason("PII is removed.")),
	), upstream(p.URL))
	c := anthropicClient(g)
	const want = "Charge it to [REDACTED:credit-card] today."

	t.Run("in a stream", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Charge it to 4111 1111", " 1111 11", "11 today."))
		msg, _, err := messageStream(testContext(t), c, messageParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := messageText(&msg); got != want || msg.StopReason != anthropic.StopReasonEndTurn {
			t.Errorf("text %q (stop_reason %q), want %q", got, msg.StopReason, want)
		}
	})
	t.Run("in a whole message", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Charge it to 4111 1111", " 1111 11", "11 today."))
		msg, err := c.Messages.New(testContext(t), messageParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := messageText(msg); got != want {
			t.Errorf("text %q, want %q", got, want)
		}
	})
}

func TestMessagesBlockedToolUseNeverReachesTheClient(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		keywordClassifier("commands", "destructive", "rm"),
		guardrail("no-rm", "commands", phases(v1alpha1.PhaseToolCalls), reason("Destructive commands are not allowed.")),
	), upstream(p.URL))
	c := anthropicClient(g)
	call := func(args ...string) fakeprovider.Script { return shellCall("toolu_1", args...) }

	t.Run("a streamed blocked tool_use is withheld and the message ends with refusal", func(t *testing.T) {
		p.Enqueue(call(`{"command":`, `"rm -rf /"}`))
		msg, events, err := messageStream(testContext(t), c, messageParams("clean up", shellToolUse))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.ContentBlock.Type == "tool_use" || ev.Delta.Type == "input_json_delta" {
				t.Errorf("the client received a tool_use event: %s", ev.RawJSON())
			}
		}
		if len(toolUses(&msg)) != 0 || msg.StopReason != anthropic.StopReasonRefusal {
			t.Errorf("%d tool uses, stop_reason %q", len(toolUses(&msg)), msg.StopReason)
		}
		if got := messageText(&msg); !strings.HasSuffix(got, "Destructive commands are not allowed.") {
			t.Errorf("text %q", got)
		}
	})
	t.Run("a blocked tool_use in a whole message is replaced by the reason, after the text before it", func(t *testing.T) {
		p.Enqueue(call(`{"command":"rm -rf /"}`))
		msg, err := c.Messages.New(testContext(t), messageParams("clean up", shellToolUse))
		if err != nil {
			t.Fatal(err)
		}
		if len(toolUses(msg)) != 0 || msg.StopReason != anthropic.StopReasonRefusal || messageText(msg) != "Running it.\n\nDestructive commands are not allowed." {
			t.Errorf("%d tool uses, stop_reason %q, text %q", len(toolUses(msg)), msg.StopReason, messageText(msg))
		}
	})
	t.Run("an allowed streamed tool_use arrives whole", func(t *testing.T) {
		p.Enqueue(call(`{"command":`, `"ls -l"}`))
		msg, _, err := messageStream(testContext(t), c, messageParams("list", shellToolUse))
		if err != nil {
			t.Fatal(err)
		}
		uses := toolUses(&msg)
		if len(uses) != 1 || uses[0].ID != "toolu_1" || uses[0].Name != "shell" || string(uses[0].Input) != `{"command":"ls -l"}` ||
			msg.StopReason != anthropic.StopReasonToolUse {
			t.Errorf("tool uses %+v, stop_reason %q", uses, msg.StopReason)
		}
	})
	t.Run("an allowed tool_use in a whole message arrives", func(t *testing.T) {
		p.Enqueue(call(`{"command":"ls -l"}`))
		msg, err := c.Messages.New(testContext(t), messageParams("list", shellToolUse))
		if err != nil {
			t.Fatal(err)
		}
		uses := toolUses(msg)
		if len(uses) != 1 || uses[0].Name != "shell" || string(uses[0].Input) != `{"command":"ls -l"}` {
			t.Errorf("tool uses %+v", uses)
		}
	})
}
