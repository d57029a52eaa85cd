package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// How a blocked answer ends, as the official SDKs accumulate it, on the three APIs.

const (
	bluebirdReason = "Project Bluebird is not discussed here."
	rmReason       = "Destructive commands are not allowed."
)

// streamedBluebird blocks "bluebird" in streamed answers, judging every delta and
// holding nothing back, so that what comes before the word reaches the client first.
func streamedBluebird(t *testing.T) string {
	return policyFile(t,
		keywordClassifier("words", "secret-project", "bluebird"),
		guardrail("no-bluebird", "words", phases(v1alpha1.PhaseStream, v1alpha1.PhaseOutput), streaming(0, 0), reason(bluebirdReason)),
	)
}

// noRm blocks tool calls whose arguments mention rm.
func noRm(t *testing.T) string {
	return policyFile(t,
		keywordClassifier("commands", "destructive", "rm"),
		guardrail("no-rm", "commands", phases(v1alpha1.PhaseToolCalls), reason(rmReason)),
	)
}

// answer is what a client holds at the end of a call: the answer text the SDK
// accumulated, how it says the answer ended, and whether it holds a tool call.
type answer struct {
	text, finish string
	calls        int
}

// apiCase runs one kind of call through one API's SDK.
type apiCase struct {
	name     string
	streamed func(ctx context.Context, g *guard, prompt string) (answer, error)
	whole    func(ctx context.Context, g *guard, prompt string) (answer, error)
	// blockFinish is how the API says an answer was blocked.
	blockFinish string
}

var apis = []apiCase{
	{
		name: "chat completions", blockFinish: "content_filter",
		streamed: func(ctx context.Context, g *guard, prompt string) (answer, error) {
			acc, chunks, err := chatStream(ctx, openaiClient(g), chatParams(prompt, shellTool))
			if len(acc.Choices) == 0 {
				return answer{}, err
			}
			m := acc.Choices[0].Message
			return answer{text: m.Content, finish: lastFinish(chunks), calls: len(m.ToolCalls)}, err
		},
		whole: func(ctx context.Context, g *guard, prompt string) (answer, error) {
			c := openaiClient(g)
			res, err := c.Chat.Completions.New(ctx, chatParams(prompt, shellTool))
			if err != nil {
				return answer{}, err
			}
			ch := res.Choices[0]
			return answer{text: ch.Message.Content, finish: ch.FinishReason, calls: len(ch.Message.ToolCalls)}, nil
		},
	},
	{
		name: "responses", blockFinish: "incomplete/content_filter",
		streamed: func(ctx context.Context, g *guard, prompt string) (answer, error) {
			run, err := responsesStream(ctx, openaiClient(g), responsesParams(prompt, shellFunction))
			if run.text != run.final.OutputText() {
				return answer{}, fmt.Errorf("output_text deltas %q differ from the final response's %q", run.text, run.final.OutputText())
			}
			return responsesAnswer(&run.final), err
		},
		whole: func(ctx context.Context, g *guard, prompt string) (answer, error) {
			c := openaiClient(g)
			res, err := c.Responses.New(ctx, responsesParams(prompt, shellFunction))
			if err != nil {
				return answer{}, err
			}
			return responsesAnswer(res), nil
		},
	},
	{
		name: "messages", blockFinish: "refusal",
		streamed: func(ctx context.Context, g *guard, prompt string) (answer, error) {
			msg, _, err := messageStream(ctx, anthropicClient(g), messageParams(prompt, shellToolUse))
			return answer{text: messageText(&msg), finish: string(msg.StopReason), calls: len(toolUses(&msg))}, err
		},
		whole: func(ctx context.Context, g *guard, prompt string) (answer, error) {
			c := anthropicClient(g)
			msg, err := c.Messages.New(ctx, messageParams(prompt, shellToolUse))
			if err != nil {
				return answer{}, err
			}
			return answer{text: messageText(msg), finish: string(msg.StopReason), calls: len(toolUses(msg))}, nil
		},
	},
}

func responsesAnswer(res *responses.Response) answer {
	finish := string(res.Status)
	if res.IncompleteDetails.Reason != "" {
		finish += "/" + string(res.IncompleteDetails.Reason)
	}
	return answer{text: res.OutputText(), finish: finish, calls: len(functionCalls(res))}
}

func TestStreamBlockSeparatesTheReasonFromTheReleasedText(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, streamedBluebird(t), upstream(p.URL))
	const upstreamText = "while the model keeps going: bluebird"

	for _, api := range apis {
		t.Run(api.name+": after released text, a blank line", func(t *testing.T) {
			p.Enqueue(fakeprovider.Reply("while the model keep", "s going: bluebird"))
			got, err := api.streamed(testContext(t), g, "hi")
			if err != nil {
				t.Fatal(err)
			}
			released, ok := strings.CutSuffix(got.text, "\n\n"+bluebirdReason)
			if !ok || released == "" || !strings.HasPrefix(upstreamText, released) || strings.Contains(released, "bluebird") {
				t.Errorf("text %q, want the released text, a blank line, then the reason", got.text)
			}
			if got.finish != api.blockFinish {
				t.Errorf("finish %q, want %q", got.finish, api.blockFinish)
			}
		})
		t.Run(api.name+": before any text, the reason alone", func(t *testing.T) {
			p.Enqueue(fakeprovider.Reply("bluebird, ", "said the model"))
			got, err := api.streamed(testContext(t), g, "hi")
			if err != nil {
				t.Fatal(err)
			}
			if got.text != bluebirdReason || got.finish != api.blockFinish {
				t.Errorf("text %q finish %q, want the reason alone", got.text, got.finish)
			}
		})
	}
}

// TestTextThenBlockedToolCallEndsAlike: an answer that says a few words, then calls a
// tool a guardrail blocks. Streamed, the words reach the client before the call is judged,
// and a block never takes them back; not streamed, they passed the Output phase, so the
// guard keeps them too: both answers are the words, a blank line and the reason, hold no
// tool call and end the same way.
func TestTextThenBlockedToolCallEndsAlike(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, noRm(t), upstream(p.URL))

	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			p.Enqueue(shellCall("call_1", `{"command":`, `"rm -rf /"}`))
			streamed, err := api.streamed(testContext(t), g, "clean up")
			if err != nil {
				t.Fatal(err)
			}
			p.Enqueue(shellCall("call_1", `{"command":"rm -rf /"}`))
			whole, err := api.whole(testContext(t), g, "clean up")
			if err != nil {
				t.Fatal(err)
			}
			// Streamed, the words went out before the call was judged; not streamed, they
			// passed the Output phase: both end with them, a blank line and the reason.
			want := "Running it.\n\n" + rmReason
			if streamed.text != want || whole.text != want {
				t.Errorf("streamed text %q, non-streamed %q, want both %q", streamed.text, whole.text, want)
			}
			if streamed.finish != api.blockFinish || whole.finish != api.blockFinish {
				t.Errorf("finish streamed %q, non-streamed %q, want %q", streamed.finish, whole.finish, api.blockFinish)
			}
			if streamed.calls != 0 || whole.calls != 0 {
				t.Errorf("tool calls streamed %d, non-streamed %d", streamed.calls, whole.calls)
			}
		})
	}
}

func TestBlockedStreamCarriesTheProvidersUsage(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, noRm(t), upstream(p.URL))
	usage := fakeprovider.Usage{InputTokens: 31, OutputTokens: 7}
	blockedCall := func() fakeprovider.Script {
		s := shellCall("call_1", `{"command":`, `"rm -rf /"}`)
		s.Usage = usage
		return s
	}

	t.Run("chat completions with include_usage: the usage chunk follows the block", func(t *testing.T) {
		p.Enqueue(blockedCall())
		params := chatParams("clean up", shellTool)
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		acc, chunks, err := chatStream(testContext(t), openaiClient(g), params)
		if err != nil {
			t.Fatal(err)
		}
		if lastFinish(chunks) != "content_filter" {
			t.Fatalf("finish %q", lastFinish(chunks))
		}
		last := chunks[len(chunks)-1]
		if len(last.Choices) != 0 || last.Usage.PromptTokens != 31 || last.Usage.CompletionTokens != 7 {
			t.Errorf("last chunk %s, want the provider's usage chunk", last.RawJSON())
		}
		if acc.Usage.PromptTokens != 31 || acc.Usage.CompletionTokens != 7 || acc.Usage.TotalTokens != 38 {
			t.Errorf("accumulated usage %+v", acc.Usage)
		}
	})
	t.Run("responses: response.incomplete carries the provider's usage", func(t *testing.T) {
		p.Enqueue(blockedCall())
		run, err := responsesStream(testContext(t), openaiClient(g), responsesParams("clean up", shellFunction))
		if err != nil {
			t.Fatal(err)
		}
		if run.final.Status != "incomplete" || run.final.Usage.InputTokens != 31 || run.final.Usage.OutputTokens != 7 {
			t.Errorf("status %q usage %+v", run.final.Status, run.final.Usage)
		}
	})
	t.Run("messages: message_delta carries the provider's usage", func(t *testing.T) {
		p.Enqueue(blockedCall())
		msg, _, err := messageStream(testContext(t), anthropicClient(g), messageParams("clean up", shellToolUse))
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonRefusal || msg.Usage.InputTokens != 31 || msg.Usage.OutputTokens != 7 {
			t.Errorf("stop_reason %q usage %+v", msg.StopReason, msg.Usage)
		}
	})
	t.Run("a block in the middle of a slow answer does not wait for the answer's end", func(t *testing.T) {
		g := startGuard(t, streamedBluebird(t), upstream(p.URL))
		// 40 events 150 ms apart: the provider's usage would come after 6 s.
		// The word is whole once the space after it arrives: "bluebird" alone could still
		// become "bluebirds", which the keyword does not match.
		s := fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts(append([]string{"Say ", "bluebird "},
			strings.SplitAfter(strings.Repeat("and more ", 36), " ")...)...)}}, Delay: 150 * time.Millisecond, Usage: usage}
		p.Enqueue(s)
		params := chatParams("hi")
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		start := time.Now()
		acc, chunks, err := chatStream(testContext(t), openaiClient(g), params)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("the blocked stream took %v to end: it waited for the provider", took)
		}
		if lastFinish(chunks) != "content_filter" || acc.Usage.TotalTokens != 0 {
			t.Errorf("finish %q usage %+v: an unknown usage is not made up", lastFinish(chunks), acc.Usage)
		}
	})
}

// TestBlockSignalsTheSDKsSurface pins the parts of a block that SDK helpers and agent
// frameworks read (config/samples/README.md, "What clients see").
func TestBlockSignalsTheSDKsSurface(t *testing.T) {
	p := newProvider(t)
	g := startGuard(t, streamedBluebird(t), upstream(p.URL))

	t.Run("chat: the reason arrives in a chunk before the finish, which has an empty delta", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Hello. ", "bluebird"))
		_, chunks, err := chatStream(testContext(t), openaiClient(g), chatParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		n := len(chunks)
		finish, before := chunks[n-1].Choices[0], chunks[n-2].Choices[0]
		if finish.FinishReason != "content_filter" || finish.Delta.Content != "" || before.FinishReason != "" ||
			!strings.HasSuffix(before.Delta.Content, bluebirdReason) {
			t.Errorf("last chunks:\n%s\n%s", chunks[n-2].RawJSON(), chunks[n-1].RawJSON())
		}
	})
	t.Run("messages: stop_details explains the refusal with the reason, streamed and not", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Hello. ", "bluebird"))
		msg, _, err := messageStream(testContext(t), anthropicClient(g), messageParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		p.Enqueue(fakeprovider.Reply("Hello. bluebird"))
		c := anthropicClient(g)
		whole, err := c.Messages.New(testContext(t), messageParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []*anthropic.Message{&msg, whole} {
			if d := m.StopDetails; d.Type != "refusal" || d.Explanation != bluebirdReason || d.Category != "" {
				t.Errorf("stop_details %s", d.RawJSON())
			}
		}
	})
	t.Run("responses: incomplete for content_filter, streamed and not", func(t *testing.T) {
		p.Enqueue(fakeprovider.Reply("Hello. ", "bluebird"))
		run, err := responsesStream(testContext(t), openaiClient(g), responsesParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		p.Enqueue(fakeprovider.Reply("Hello. bluebird"))
		c := openaiClient(g)
		whole, err := c.Responses.New(testContext(t), responsesParams("hi"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*responses.Response{&run.final, whole} {
			if r.Status != "incomplete" || r.IncompleteDetails.Reason != "content_filter" || !strings.HasSuffix(r.OutputText(), bluebirdReason) {
				t.Errorf("status %q reason %q text %q", r.Status, r.IncompleteDetails.Reason, r.OutputText())
			}
		}
	})
}
