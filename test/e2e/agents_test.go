package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Agent frameworks switch between streamed and non-streamed calls and keep conversations
// going after a block; these run openai-go against the guard binary as they do.

// TestToolArgumentsAreJudgedStreamedOrNot: a guardrail that redacts personal data on
// [Stream, Output] stops a send_mail call carrying an address whether the client streamed
// or not (the AI SDK's generateText and streamText).
func TestToolArgumentsAreJudgedStreamedOrNot(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t, piiClassifier("pii"),
		guardrail("redact-pii", "pii", phases(v1alpha1.PhaseStream, v1alpha1.PhaseOutput), action(v1alpha1.ActionRedact)),
	), upstream(p.URL))
	c := openaiClient(g)
	ctx := testContext(t)
	mail := openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "send_mail"})
	call := func() fakeprovider.Script {
		return fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: []fakeprovider.Delta{
			fakeprovider.ToolCall("call_1", "send_mail"), fakeprovider.ToolArgs(`{"to":"jane.doe@`), fakeprovider.ToolArgs(`example.com","body":"the invoice"}`)}}}}
	}

	p.Enqueue(call())
	resp, err := c.Chat.Completions.New(ctx, chatParams("mail jane", mail))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0]; len(got.Message.ToolCalls) != 0 || got.FinishReason != "content_filter" {
		t.Errorf("not streamed: finish %q, %d tool calls reached the client", got.FinishReason, len(got.Message.ToolCalls))
	}

	p.Enqueue(call())
	stream := c.Chat.Completions.NewStreaming(ctx, chatParams("mail jane", mail))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0]; len(got.Message.ToolCalls) != 0 || got.FinishReason != "content_filter" {
		t.Errorf("streamed: finish %q, %d tool calls reached the client", got.FinishReason, len(got.Message.ToolCalls))
	}
}

// TestAConversationGoesOnAfterABlock: openai-go keeps a blocked Responses answer's items
// and refers to them next turn (store on) or repeats them (store off); the provider, which
// never saw the guard's message, answers the next turn instead of 404.
func TestAConversationGoesOnAfterABlock(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, policyFile(t, keywordClassifier("words", "secret-project", "bluebird"),
		guardrail("no-bluebird", "words", phases(v1alpha1.PhaseInput, v1alpha1.PhaseOutput), action(v1alpha1.ActionBlock)),
	), upstream(p.URL))
	c := openaiClient(g)
	ctx := testContext(t)

	for _, store := range []bool{true, false} {
		p.Enqueue(fakeprovider.Reply("all about ", "bluebird"))
		first, err := c.Responses.New(ctx, responsesParams("tell me"))
		if err != nil {
			t.Fatal(err)
		}
		if first.Status != "incomplete" || len(first.Output) != 1 {
			t.Fatalf("the blocked answer: status %q, %d items", first.Status, len(first.Output))
		}
		blocked := first.Output[0]
		var prior responses.ResponseInputItemUnionParam
		if store {
			prior = responses.ResponseInputItemParamOfItemReference(blocked.ID)
		} else {
			prior = responses.ResponseInputItemUnionParam{OfOutputMessage: &responses.ResponseOutputMessageParam{
				ID: blocked.ID, Status: responses.ResponseOutputMessageStatusIncomplete,
				Content: []responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{
					Text: blocked.Content[0].Text, Annotations: []responses.ResponseOutputTextAnnotationUnionParam{}}}},
			}}
		}
		p.Enqueue(fakeprovider.Reply("fine"))
		next, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-e2e", Store: openai.Bool(store),
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("tell me", responses.EasyInputMessageRoleUser),
				prior,
				responses.ResponseInputItemParamOfMessage("something else then", responses.EasyInputMessageRoleUser),
			}}}, oaoption.WithMaxRetries(0))
		if err != nil {
			var apiErr *openai.Error
			if e, ok := errAs[*openai.Error](err); ok && e.StatusCode == http.StatusNotFound {
				apiErr = e
			}
			t.Fatalf("store %v: the next turn failed: %v (%v)", store, err, apiErr)
		}
		if next.OutputText() != "fine" {
			t.Errorf("store %v: next turn %q", store, next.OutputText())
		}
		sent, _ := p.LastRequest()
		if strings.Contains(string(sent.Body), "msg_guardrail") || !strings.Contains(string(sent.Body), `"text":"`+blocked.Content[0].Text+`"`) {
			t.Errorf("store %v: the provider got %s", store, sent.Body)
		}
	}
}
