package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// Decision records, logs and metrics never contain prompt or completion
// text or credentials. Canaries are planted in prompts, completions, the client's API key
// and a classifier's token, the guard runs every kind of decision with debug logging, and
// none of the canaries may appear in the decision log, the guard's log or /metrics.

const (
	promptCanary     = "canaryprompt7f3a"
	completionCanary = "canarycompletion91bc"
	keyCanary        = "sk-canarykey5d2e"
	tokenCanary      = "canarytoken0c44"
	traceID          = "4bf92f3577b34da6a3ce929d0e0e4736"
)

func TestDecisionLogAndMetricsHoldNoContentOrCredentials(t *testing.T) {
	hook := fakeclassifiers.NewWebhook().Respond(func(r fakeclassifiers.Request) fakeclassifiers.Reply {
		if strings.Contains(r.Text(), "explode") {
			return fakeclassifiers.Status(500)
		}
		return fakeclassifiers.WebhookScores(fakeclassifiers.Scores{"harm": 0.0})
	})
	hookURL := hook.Start(t).URL
	p := newProvider(t)
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	g := startGuard(t, policyFile(t,
		keywordClassifier("words", "secret-project", "bluebird"),
		guardrail("no-bluebird", "words", phases(v1alpha1.PhaseInput, v1alpha1.PhaseStream, v1alpha1.PhaseOutput)),
		piiClassifier("pii"),
		guardrail("redact-pii", "pii", phases(v1alpha1.PhaseStream, v1alpha1.PhaseOutput), action(v1alpha1.ActionRedact)),
		webhookClassifier("judge", hookURL, "JUDGE_TOKEN", "harm"),
		guardrail("watch", "judge", phases(v1alpha1.PhaseInput, v1alpha1.PhaseStream), streaming(0, 0)),
	), upstream(p.URL), flags("--decision-log", logPath), env("JUDGE_TOKEN="+tokenCanary))

	oc := openai.NewClient(oaoption.WithBaseURL(g.URL+"/v1/"), oaoption.WithAPIKey(keyCanary),
		oaoption.WithHeader("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"))
	ac := anthropic.NewClient(antoption.WithBaseURL(g.URL), antoption.WithAPIKey(keyCanary), antoption.WithHeader("x-api-key", keyCanary))
	prompt := "please repeat " + promptCanary

	// Allowed, streamed and not; redacted; blocked on input, in a stream and at output;
	// failed in a stream; through both API families.
	p.Enqueue(fakeprovider.Reply("I repeat ", completionCanary, " as asked."))
	if _, _, err := chatStream(testContext(t), oc, chatParams(prompt)); err != nil {
		t.Fatal(err)
	}
	p.Enqueue(fakeprovider.Reply("Card 4111 1111 1111 1111 for ", completionCanary))
	if _, err := oc.Chat.Completions.New(testContext(t), chatParams(prompt)); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Chat.Completions.New(testContext(t), chatParams(prompt+" bluebird")); err == nil {
		t.Fatal("the input block did not happen")
	}
	p.Enqueue(fakeprovider.Reply(completionCanary, " and bluebird ", "too"))
	if _, _, err := chatStream(testContext(t), oc, chatParams(prompt)); err != nil {
		t.Fatal(err)
	}
	p.Enqueue(fakeprovider.Reply(completionCanary, " then explode"))
	if _, _, err := chatStream(testContext(t), oc, chatParams(prompt)); err == nil {
		t.Fatal("the classifier failure did not surface")
	}
	p.Enqueue(fakeprovider.Reply("Sure: ", completionCanary))
	if _, _, err := messageStream(testContext(t), ac, messageParams(prompt)); err != nil {
		t.Fatal(err)
	}
	p.Enqueue(fakeprovider.Reply("It is ", completionCanary, " bluebird"))
	if _, err := ac.Messages.New(testContext(t), messageParams(prompt)); err != nil {
		t.Fatal(err)
	}
	if tokens := hook.Requests(); len(tokens) == 0 || tokens[0].Header.Get("Authorization") != "Bearer "+tokenCanary {
		t.Fatal("the webhook did not receive its token: the canary would prove nothing")
	}

	logBytes, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	records := decisions(t, string(logBytes))
	outcomes := map[string]bool{}
	traced := false
	for _, r := range records {
		outcomes[r["outcome"].(string)] = true
		ids, _ := r["ids"].(map[string]any)
		traced = traced || ids["traceId"] == traceID
	}
	for _, want := range []string{"allowed", "blocked", "redacted", "failed"} {
		if !outcomes[want] {
			t.Errorf("no %s decision among %d records: the test did not exercise it", want, len(records))
		}
	}
	if !traced {
		t.Error("no decision record carries the traceparent's trace id")
	}

	for name, text := range map[string]string{
		"the decision log": string(logBytes),
		"the guard's log":  g.logs(),
		"/metrics":         g.metrics(),
	} {
		for _, canary := range []string{promptCanary, completionCanary, keyCanary, tokenCanary, "4111 1111"} {
			if strings.Contains(text, canary) {
				t.Errorf("%s contains %q", name, canary)
			}
		}
	}
}
