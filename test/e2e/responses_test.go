package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The OpenAI Responses API through the guard binary, with openai-go as the client.

func responsesParams(prompt string, tools ...responses.ToolUnionParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "gpt-e2e", Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
}

var shellFunction = responses.ToolParamOfFunction("shell",
	map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}, false)

// responsesRun is what a client saw of a streamed response.
type responsesRun struct {
	text   string // the output_text deltas
	final  responses.Response
	types  []string
	events []responses.ResponseStreamEventUnion
}

// responsesStream reads a whole Responses stream with the SDK.
func responsesStream(ctx context.Context, c openai.Client, params responses.ResponseNewParams) (responsesRun, error) {
	stream := c.Responses.NewStreaming(ctx, params)
	defer func() { _ = stream.Close() }()
	var run responsesRun
	for stream.Next() {
		ev := stream.Current()
		run.events = append(run.events, ev)
		run.types = append(run.types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			run.text += ev.Delta
		case "response.completed", "response.incomplete", "response.failed":
			run.final = ev.Response
		}
	}
	return run, stream.Err()
}

// functionCalls returns the function_call items of a response's output.
func functionCalls(r *responses.Response) []responses.ResponseOutputItemUnion {
	var calls []responses.ResponseOutputItemUnion
	for _, it := range r.Output {
		if it.Type == "function_call" {
			calls = append(calls, it)
		}
	}
	return calls
}

func TestResponsesAllowedTrafficIsTheProvidersBytes(t *testing.T) {
	hook, url := allowingWebhook(t)
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		webhookClassifier("judge", url, "", "harm"),
		guardrail("watch", "judge", phases(v1alpha1.PhaseInput, v1alpha1.PhaseStream, v1alpha1.PhaseOutput), streaming(0, 0)),
	), upstream(p.URL))

	for _, tc := range []struct {
		name, body string
	}{
		{"a streamed response reaches the client event by event", `{"model":"gpt-e2e","stream":true,"input":"hi"}`},
		{"a response reaches the client byte for byte", `{"model":"gpt-e2e","input":"hi"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Enqueue(fakeprovider.Reply("The answer ", "is forty", "-two, as ", "always."))
			resp, got := rawPost(t, g.URL+"/v1/responses", tc.body)
			sent := lastResponse(t, p)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			if sent.Stream {
				assertSameEvents(t, got, sent)
			} else if string(got) != string(sent.Body) {
				t.Errorf("body differs:\nreceived: %s\nsent:     %s", got, sent.Body)
			}
		})
	}
	if hook.Count() == 0 {
		t.Error("the classifier was never called: the guardrail did not apply")
	}

	t.Run("the SDK reads the streamed answer", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The answer ", "is forty", "-two."))
		run, err := responsesStream(testContext(t), openaiClient(g), responsesParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if run.text != "The answer is forty-two." || run.final.OutputText() != run.text || run.final.Status != "completed" {
			t.Errorf("deltas %q, final %q (%s)", run.text, run.final.OutputText(), run.final.Status)
		}
	})
}

func TestResponsesInputBlockIsAnAPIError(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, bluebird(t, v1alpha1.PhaseInput), upstream(p.URL))
	c := openaiClient(g)

	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"a blocked response request", func(ctx context.Context) error {
			_, err := c.Responses.New(ctx, responsesParams("tell me about bluebird"))
			return err
		}},
		{"a blocked streamed response request", func(ctx context.Context) error {
			_, err := responsesStream(ctx, c, responsesParams("tell me about bluebird"))
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
				apiErr.Message != "Project Bluebird is not discussed here." {
				t.Errorf("error %d code %q message %q", apiErr.StatusCode, apiErr.Code, apiErr.Message)
			}
		})
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("the provider received %d requests; blocked input must not be sent upstream", n)
	}
}

func TestResponsesStreamBlockEndsIncompleteWithContentFilter(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, bluebird(t, v1alpha1.PhaseStream, v1alpha1.PhaseOutput), upstream(p.URL))
	c := openaiClient(g)

	t.Run("a streamed response ends incomplete for content_filter with the reason", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The code name ", "is blue", "bird and ", "it launches soon."))
		run, err := responsesStream(testContext(t), c, responsesParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if last := run.types[len(run.types)-1]; last != "response.incomplete" {
			t.Errorf("last event %q, want response.incomplete", last)
		}
		if run.final.Status != "incomplete" || run.final.IncompleteDetails.Reason != "content_filter" {
			t.Errorf("status %q, incomplete_details.reason %q", run.final.Status, run.final.IncompleteDetails.Reason)
		}
		if !strings.HasSuffix(run.text, "Project Bluebird is not discussed here.") || strings.Contains(run.text, "bluebird") {
			t.Errorf("text %q", run.text)
		}
	})
	t.Run("a whole response is replaced by the reason", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("The code name is bluebird."))
		res, err := c.Responses.New(testContext(t), responsesParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "incomplete" || res.IncompleteDetails.Reason != "content_filter" || res.OutputText() != "Project Bluebird is not discussed here." {
			t.Errorf("status %q reason %q text %q", res.Status, res.IncompleteDetails.Reason, res.OutputText())
		}
	})
}

func TestResponsesClassifierFailureMidStreamIsAStreamError(t *testing.T) {
	_, url := failingWebhook(t, 2)
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		webhookClassifier("judge", url, "", "harm"),
		guardrail("watch", "judge", phases(v1alpha1.PhaseStream), streaming(0, 0)),
	), upstream(p.URL))

	p.Enqueue(fakeprovider.Reply("one ", "two ", "three ", "four ", "five"))
	run, err := responsesStream(testContext(t), openaiClient(g), responsesParams("hi"))
	streamErr, ok := errAs[*ssestream.StreamError](err)
	if !ok {
		t.Fatalf("error %v (%T), want *ssestream.StreamError", err, err)
	}
	if !strings.Contains(streamErr.Message, `"code":"policy_evaluation_failed"`) || streamErr.Event.Type != "error" {
		t.Errorf("stream error %q (event %q) does not carry policy_evaluation_failed", streamErr.Message, streamErr.Event.Type)
	}
	if run.text != "one two " {
		t.Errorf("text before the failure %q, want the two judged deltas", run.text)
	}
}

func TestResponsesRedactsACardSplitAcrossDeltas(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		piiClassifier("pii"),
		guardrail("redact-pii", "pii", phases(v1alpha1.PhaseStream, v1alpha1.PhaseOutput), action(v1alpha1.ActionRedact), reason("PII is removed.")),
	), upstream(p.URL))
	c := openaiClient(g)
	const want = "Charge it to [REDACTED:credit-card] today."

	t.Run("in a stream, deltas and the done events agree", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Charge it to 4111 1111", " 1111 11", "11 today."))
		run, err := responsesStream(testContext(t), c, responsesParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if run.text != want || run.final.OutputText() != want || run.final.Status != "completed" {
			t.Errorf("deltas %q, final %q (%s), want %q", run.text, run.final.OutputText(), run.final.Status, want)
		}
		for _, ev := range run.events {
			if ev.Type == "response.output_text.done" && ev.Text != want {
				t.Errorf("output_text.done text %q", ev.Text)
			}
		}
	})
	t.Run("in a whole response", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Charge it to 4111 1111", " 1111 11", "11 today."))
		res, err := c.Responses.New(testContext(t), responsesParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.OutputText(); got != want {
			t.Errorf("text %q, want %q", got, want)
		}
	})
}

func TestResponsesBlockedToolCallNeverReachesTheClient(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t,
		keywordClassifier("commands", "destructive", "rm"),
		guardrail("no-rm", "commands", phases(v1alpha1.PhaseToolCalls), reason("Destructive commands are not allowed.")),
	), upstream(p.URL))
	c := openaiClient(g)
	call := func(args ...string) fakeprovider.Script { return shellCall("call_1", args...) }

	t.Run("a streamed blocked call is withheld and the response ends incomplete", func(t *testing.T) {
		p.Enqueue(call(`{"command":`, `"rm -rf /"}`))
		run, err := responsesStream(testContext(t), c, responsesParams("clean up", shellFunction))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range run.events {
			if strings.HasPrefix(ev.Type, "response.function_call") || ev.Item.Type == "function_call" {
				t.Errorf("the client received a function call event: %s", ev.RawJSON())
			}
		}
		if len(functionCalls(&run.final)) != 0 || run.final.IncompleteDetails.Reason != "content_filter" {
			t.Errorf("final response: %d calls, incomplete_details.reason %q", len(functionCalls(&run.final)), run.final.IncompleteDetails.Reason)
		}
		if !strings.HasSuffix(run.final.OutputText(), "Destructive commands are not allowed.") {
			t.Errorf("text %q", run.final.OutputText())
		}
	})
	t.Run("a blocked call in a whole response is replaced by the reason, after the text before it", func(t *testing.T) {
		p.Enqueue(call(`{"command":"rm -rf /"}`))
		res, err := c.Responses.New(testContext(t), responsesParams("clean up", shellFunction))
		if err != nil {
			t.Fatal(err)
		}
		if len(functionCalls(res)) != 0 || res.IncompleteDetails.Reason != "content_filter" || res.OutputText() != "Running it.\n\nDestructive commands are not allowed." {
			t.Errorf("%d calls, reason %q, text %q", len(functionCalls(res)), res.IncompleteDetails.Reason, res.OutputText())
		}
	})
	t.Run("an allowed streamed call arrives whole", func(t *testing.T) {
		p.Enqueue(call(`{"command":`, `"ls -l"}`))
		run, err := responsesStream(testContext(t), c, responsesParams("list", shellFunction))
		if err != nil {
			t.Fatal(err)
		}
		calls := functionCalls(&run.final)
		if len(calls) != 1 || calls[0].Name != "shell" || calls[0].CallID != "call_1" || calls[0].Arguments.OfString != `{"command":"ls -l"}` {
			t.Errorf("calls %+v", calls)
		}
	})
}
