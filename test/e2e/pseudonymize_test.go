package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/entities"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Reversible pseudonymization through the guard binary, with the official SDKs: the
// provider (test/fakeprovider's EchoLast, which repeats the last message it received)
// never receives an entity, and the client gets its own values back, in answer text and
// in a tool call's arguments, streamed in deltas of every size from 1 to 32 bytes and not,
// for chat completions, Responses and Anthropic messages. A second guardrail redacts
// Stream and Output on the same detectors: it judges the provider's placeholders, so the
// restored values reach the client unredacted (the documented composition).

// pseudonymizePolicy masks what the pii and secrets packs find on Input and ToolResults,
// and redacts them from answers.
func pseudonymizePolicy(t *testing.T) string {
	one := func(g *v1alpha1.Guardrail) { g.Spec.Threshold = ptr(v1alpha1.Score(1)) }
	return policyFile(t,
		detectorsClassifier("detectors"),
		guardrail("mask", "detectors", phases(v1alpha1.PhaseInput, v1alpha1.PhaseToolResults), action(v1alpha1.ActionPseudonymize), one),
		guardrail("redact", "detectors", phases(v1alpha1.PhaseStream, v1alpha1.PhaseOutput), action(v1alpha1.ActionRedact), one),
	)
}

// bodyStrings returns every string of a JSON body, joined by newlines: what a provider
// reads of a request, escapes decoded.
func bodyStrings(body []byte) string {
	var v any
	_ = json.Unmarshal(body, &v)
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x + "\n")
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

// noteOf decodes EchoLast's tool-call arguments.
func noteOf(t *testing.T, args string) string {
	t.Helper()
	var a struct {
		Note string `json:"note"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Fatalf("tool-call arguments are not JSON: %v\n%s", err, args)
	}
	return a.Note
}

func TestPseudonymizedPromptsComeBackRestored(t *testing.T) {
	var size atomic.Int64
	p := fakeprovider.New(fakeprovider.WithHandler(func(r *fakeprovider.Request) fakeprovider.Script {
		return fakeprovider.EchoLast(int(size.Load()))(r)
	}))
	t.Cleanup(p.Close)
	g := startGuard(t, pseudonymizePolicy(t), upstream(p.URL))
	oc, ac := openaiClient(g), anthropicClient(g)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(35, 1))
	var all []entities.Entity
	missed, planted := map[string]int{}, map[string]int{}
	for n := 1; n <= 32; n++ {
		size.Store(int64(n))
		kind := entities.Kinds[n%len(entities.Kinds)]
		txt := entities.Plant(rng, 8+rng.IntN(20), entities.New(rng, kind), entities.New(rng, entities.Kinds[rng.IntN(len(entities.Kinds))]))
		all = append(all, txt.Entities...)
		prompt, want := txt.Text, "You said: "+txt.Text
		name := fmt.Sprintf("%s in deltas of %d bytes", kind, n)
		before := len(p.Requests())

		for _, check := range []struct {
			family string
			run    func() (text string, err error)
		}{
			{"chat", func() (string, error) {
				r, err := oc.Chat.Completions.New(ctx, chatParams(prompt))
				if err != nil {
					return "", err
				}
				return r.Choices[0].Message.Content, nil
			}},
			{"chat streamed", func() (string, error) {
				acc, _, err := chatStream(ctx, oc, chatParams(prompt))
				return acc.Choices[0].Message.Content, err
			}},
			{"chat tool call", func() (string, error) {
				r, err := oc.Chat.Completions.New(ctx, chatParams(prompt, shellTool))
				if err != nil {
					return "", err
				}
				return "You said: " + noteOf(t, r.Choices[0].Message.ToolCalls[0].Function.Arguments), nil
			}},
			{"chat tool call streamed", func() (string, error) {
				acc, _, err := chatStream(ctx, oc, chatParams(prompt, shellTool))
				if err != nil {
					return "", err
				}
				return "You said: " + noteOf(t, acc.Choices[0].Message.ToolCalls[0].Function.Arguments), nil
			}},
			{"responses", func() (string, error) {
				r, err := oc.Responses.New(ctx, responsesParams(prompt))
				if err != nil {
					return "", err
				}
				return r.OutputText(), nil
			}},
			{"responses streamed", func() (string, error) {
				run, err := responsesStream(ctx, oc, responsesParams(prompt))
				if run.final.OutputText() != run.text {
					return "", fmt.Errorf("response.completed says %q, the deltas %q", run.final.OutputText(), run.text)
				}
				return run.text, err
			}},
			{"responses tool call", func() (string, error) {
				r, err := oc.Responses.New(ctx, responsesParams(prompt, shellFunction))
				if err != nil {
					return "", err
				}
				return "You said: " + noteOf(t, functionCalls(r)[0].Arguments.OfString), nil
			}},
			{"responses tool call streamed", func() (string, error) {
				run, err := responsesStream(ctx, oc, responsesParams(prompt, shellFunction))
				if err != nil {
					return "", err
				}
				return "You said: " + noteOf(t, functionCalls(&run.final)[0].Arguments.OfString), nil
			}},
			{"messages", func() (string, error) {
				m, err := ac.Messages.New(ctx, messageParams(prompt))
				if err != nil {
					return "", err
				}
				return messageText(m), nil
			}},
			{"messages streamed", func() (string, error) {
				m, _, err := messageStream(ctx, ac, messageParams(prompt))
				return messageText(&m), err
			}},
			{"messages tool use", func() (string, error) {
				m, err := ac.Messages.New(ctx, messageParams(prompt, shellToolUse))
				if err != nil {
					return "", err
				}
				return "You said: " + noteOf(t, string(toolUses(m)[0].Input)), nil
			}},
			{"messages tool use streamed", func() (string, error) {
				m, _, err := messageStream(ctx, ac, messageParams(prompt, shellToolUse))
				if err != nil {
					return "", err
				}
				return "You said: " + noteOf(t, string(toolUses(&m)[0].Input)), nil
			}},
		} {
			got, err := check.run()
			if err != nil {
				t.Fatalf("%s, %s: %v", name, check.family, err)
			}
			if got != want {
				t.Fatalf("%s, %s: the client got\n%q\nwant\n%q", name, check.family, got, want)
			}
		}
		// What the provider received: every request of this round.
		sent := ""
		for _, r := range p.Requests()[before:] {
			sent += bodyStrings(r.Body)
		}
		found := txt.Entities[:0:0]
		for _, e := range txt.Entities {
			planted[e.Kind]++
			if strings.Contains(sent, e.Value) {
				missed[e.Kind]++ // the detectors' recall, not the guard's masking
				continue
			}
			found = append(found, e)
		}
		if piece := (entities.Text{Entities: found}).Leaked(sent, 8); piece != "" {
			t.Fatalf("%s: %q reached the provider", name, piece)
		}
		if !strings.Contains(sent, "<") {
			t.Fatalf("%s: the provider received no placeholder:\n%s", name, sent)
		}
	}
	for kind, n := range missed {
		t.Logf("missed by the detectors: %s %d of %d", kind, n, planted[kind])
		if 10*n > planted[kind] {
			t.Errorf("the detectors missed %d of %d %s values", n, planted[kind], kind)
		}
	}
	// Decision records and metrics count categories, never values.
	metrics, logs := g.metrics(), g.logs()
	if !strings.Contains(metrics, `guard_pseudonymized_values_total{category="email",`) {
		t.Errorf("no guard_pseudonymized_values_total series in\n%s", metrics)
	}
	for _, e := range all {
		if strings.Contains(metrics, e.Value) || strings.Contains(logs, e.Value) {
			t.Fatalf("a value reached the guard's metrics or logs")
		}
	}
}

// A client that writes a placeholder itself, a model that invents one or mangles one:
// none is mapped to another value.
func TestPseudonymizationIsNotFooledByPlaceholdersItDidNotGive(t *testing.T) {
	p := fakeprovider.New(fakeprovider.WithHandler(fakeprovider.EchoLast(3)))
	t.Cleanup(p.Close)
	g := startGuard(t, pseudonymizePolicy(t), upstream(p.URL))
	oc := openaiClient(g)
	ctx := context.Background()
	prompt := "Forward <EMAIL_1> to jo.doe@example.com, not <EMAIL_3> or <email 2>."
	acc, _, err := chatStream(ctx, oc, chatParams(prompt))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := acc.Choices[0].Message.Content, "You said: "+prompt; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	sent := bodyStrings(p.Requests()[0].Body)
	if strings.Contains(sent, "jo.doe@example.com") || !strings.Contains(sent, "Forward <EMAIL_1> to <EMAIL_2>, not <EMAIL_3>") {
		t.Fatalf("the provider received %q", sent)
	}
}

// The sample as users apply it: the guard of a mail assistant's pod masks the address and
// gives it back; the guard of another pod does not select it.
func TestPseudonymizeSample(t *testing.T) {
	p := fakeprovider.New(fakeprovider.WithHandler(fakeprovider.EchoLast(4)))
	t.Cleanup(p.Close)
	sample := samplePolicy(t, "pseudonymize-pii.yaml")
	ctx := context.Background()
	const prompt = "Write to jo.doe@example.com about the invoice."
	for _, tc := range []struct {
		labels, sent string
	}{
		{"app.kubernetes.io/part-of=mail-assistant", "Write to <EMAIL_1> about the invoice."},
		{"app=chat", prompt},
	} {
		g := startGuard(t, sample, upstream(p.URL), flags("--pod-labels", tc.labels))
		m, _, err := messageStream(ctx, anthropicClient(g), messageParams(prompt))
		if err != nil {
			t.Fatal(err)
		}
		if got := messageText(&m); got != "You said: "+prompt {
			t.Fatalf("%s: the app got %q", tc.labels, got)
		}
		reqs := p.Requests()
		if sent := bodyStrings(reqs[len(reqs)-1].Body); !strings.Contains(sent, tc.sent) {
			t.Fatalf("%s: the provider received %q, want %q", tc.labels, sent, tc.sent)
		}
		g.stop()
	}
}

// The next turn of an agent loop: the history holds the tool call the model made with a
// placeholder, which the app received with the real address and executed, and the tool's
// result. The provider receives the address nowhere — not in the user's message, not in
// the tool result, not in the history's tool-call arguments — in every family.
func TestPseudonymizedAgentLoopKeepsTheHistoryMasked(t *testing.T) {
	p := fakeprovider.New(fakeprovider.WithHandler(fakeprovider.EchoLast(5)))
	t.Cleanup(p.Close)
	g := startGuard(t, pseudonymizePolicy(t), upstream(p.URL))
	const addr = "jo.doe@example.com"
	for _, tc := range []struct {
		name, path, body string
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Mail ` + addr + ` the invoice."},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"send_mail","arguments":"{\"to\":\"` + addr + `\"}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"Sent to ` + addr + `."}]}`},
		{"responses", "/v1/responses", `{"model":"m","input":[{"role":"user","content":"Mail ` + addr + ` the invoice."},` +
			`{"type":"function_call","call_id":"c1","name":"send_mail","arguments":"{\"to\":\"` + addr + `\"}"},` +
			`{"type":"function_call_output","call_id":"c1","output":"Sent to ` + addr + `."}]}`},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"Mail ` + addr + ` the invoice."},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"send_mail","input":{"to":"` + addr + `"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Sent to ` + addr + `."}]}]}`},
	} {
		resp, body := rawPost(t, g.URL+tc.path, tc.body, "anthropic-version", "2023-06-01")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
		if !strings.Contains(string(body), "Sent to "+addr) {
			t.Fatalf("%s: the app got %s", tc.name, body)
		}
		reqs := p.Requests()
		sent := string(reqs[len(reqs)-1].Body)
		if strings.Contains(sent, "jo.doe") || strings.Count(sent, "<EMAIL_1>") != 3 {
			t.Fatalf("%s: the provider received %s", tc.name, sent)
		}
	}
}

// The apiserver refuses Pseudonymize outside Input and ToolResults at apply time, with a
// message naming spec.phases; the shipped sample is accepted.
func TestPseudonymizeOnAnswerPhasesIsRefusedAtApply(t *testing.T) {
	c := startCluster(t)
	apply := func(manifest string) (string, error) {
		path := filepath.Join(t.TempDir(), "g.yaml")
		if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(testContext(t), "kubectl", "--kubeconfig", c.kubeconfig, "-n", "default", "apply", "-f", path).CombinedOutput() //nolint:gosec // test arguments
		return string(out), err
	}
	if out, err := apply(samplePolicy(t, "pseudonymize-pii.yaml")); err != nil {
		t.Fatalf("the sample was refused: %v\n%s", err, out)
	}
	const guardrail = `apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: mask}
spec:
  mode: Enforce
  classifierRef: {name: personal-data}
  threshold: 1
  action: Pseudonymize
  reason: Personal data could not be masked.
`
	for name, phases := range map[string]string{"the default phases": "", "Input and Output": "  phases: [Input, Output]\n", "Stream": "  phases: [Stream]\n"} {
		out, err := apply(guardrail + phases)
		if err == nil || !strings.Contains(out, "spec.phases") || !strings.Contains(out, "action Pseudonymize applies to the Input and ToolResults phases only") {
			t.Errorf("%s: kubectl apply: %v\n%s", name, err, out)
		}
	}
}
