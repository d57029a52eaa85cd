package proxy

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/remote"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	fake "github.com/guardrail-dev/guardrail-operator/test/fakeclassifiers"
)

func TestRemoteConfig(t *testing.T) {
	text := classify.ModalitySet(0).With(classify.Text)
	budget := func(c *policy.Classifier) *policy.Classifier {
		c.Token, c.Timeout, c.Retries, c.MaxInputChars, c.MaxConcurrency = "sk-test", 2*time.Second, 2, 500, 4
		c.Modalities, c.Cache = text.With(classify.Image), &policy.Cache{TTL: time.Minute, MaxEntries: 10}
		return c
	}
	remoteBudget := func(c remote.Config) remote.Config {
		c.Token, c.Timeout, c.Retries, c.MaxInputChars, c.MaxConcurrency = "sk-test", 2*time.Second, 2, 500, 4
		c.Modalities, c.Cache = text.With(classify.Image), remote.Cache{TTL: time.Minute, MaxEntries: 10}
		return c
	}
	onTopic := policy.Question{ID: "onTopic", Type: policy.QuestionBoolean, Instructions: "Cooking?",
		Criteria: []policy.Criterion{{Value: "true", Description: "about cooking"}, {Value: "false", Description: "not"}}}
	remoteOnTopic := remote.Question{ID: "onTopic", Type: remote.QuestionBoolean, Instructions: "Cooking?",
		Criteria: []remote.Criterion{{Value: "true", Description: "about cooking"}, {Value: "false", Description: "not"}}}
	cases := []struct {
		name string
		c    *policy.Classifier
		want remote.Config
	}{
		{"a moderation classifier keeps its endpoint's category names and its call budget",
			budget(&policy.Classifier{Backend: policy.BackendModeration,
				Moderation: &policy.ModerationConfig{URL: "https://mod.example/v1/moderations", Model: "omni", CategoryNames: []string{"violence"}},
				Categories: []policy.Category{{ID: "violence", Description: "harm"}}}),
			remoteBudget(remote.Config{Kind: remote.KindModeration, URL: "https://mod.example/v1/moderations", Model: "omni",
				CategoryNames: []string{"violence"}, Categories: []remote.Category{{ID: "violence", Description: "harm"}}})},
		{"a judge keeps its format, instructions and questions",
			&policy.Classifier{Backend: policy.BackendLLM, Modalities: text,
				LLM:       &policy.LLMConfig{URL: "https://judge.example", Model: "judge-1", Format: policy.JudgeScores, Instructions: "Be strict."},
				Questions: []policy.Question{onTopic}},
			remote.Config{Kind: remote.KindLLM, URL: "https://judge.example", Model: "judge-1", Modalities: text,
				Format: remote.JudgeScores, Instructions: "Be strict.", Questions: []remote.Question{remoteOnTopic}}},
		{"a llamaGuard judge keeps its format",
			&policy.Classifier{Backend: policy.BackendLLM, Modalities: text,
				LLM:        &policy.LLMConfig{URL: "https://judge.example", Model: "llama-guard", Format: policy.JudgeLlamaGuard},
				Categories: []policy.Category{{ID: "violence"}}},
			remote.Config{Kind: remote.KindLLM, URL: "https://judge.example", Model: "llama-guard", Modalities: text,
				Format: remote.JudgeLlamaGuard, Categories: []remote.Category{{ID: "violence"}}}},
		{"a webhook keeps its CA bundle",
			&policy.Classifier{Backend: policy.BackendWebhook, Modalities: text,
				Webhook:    &policy.WebhookConfig{URL: "https://hook.example/judge", CABundle: []byte("pem")},
				Categories: []policy.Category{{ID: "violence"}}},
			remote.Config{Kind: remote.KindWebhook, URL: "https://hook.example/judge", CABundle: []byte("pem"), Modalities: text,
				Categories: []remote.Category{{ID: "violence"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := remoteConfig(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("remoteConfig =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}

	t.Run("a remote backend without its configuration is refused", func(t *testing.T) {
		for _, b := range []policy.Backend{policy.BackendModeration, policy.BackendLLM, policy.BackendWebhook} {
			if _, err := newBackend(&policy.Classifier{Backend: b}); err == nil {
				t.Errorf("%s without configuration: no error", b)
			}
		}
	})
}

func TestNewBackendCallsAWebhookWithItsPolicy(t *testing.T) {
	f := fake.NewWebhook().Enqueue(fake.WebhookScores(fake.Scores{"violence": 0.75}))
	srv := f.Start(t)
	b, err := newBackend(&policy.Classifier{Backend: policy.BackendWebhook, Token: "sk-hook",
		Webhook:       &policy.WebhookConfig{URL: srv.URL},
		Categories:    []policy.Category{{ID: "violence", Description: "harm"}},
		MaxInputChars: 5, Modalities: classify.ModalitySet(0).With(classify.Text)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Classify(context.Background(), classify.Input{Text: "a long text"})
	if err != nil || len(res.Scores) != 1 || res.Scores[0] != 0.75 {
		t.Fatalf("Classify = %+v, %v; want the webhook's score", res, err)
	}
	req := f.Requests()[0]
	if got := req.Header.Get("Authorization"); got != "Bearer sk-hook" {
		t.Errorf("Authorization = %q, want the classifier's token", got)
	}
	if req.Text() != "a lon" || !strings.Contains(string(req.Body), `"categories":[{"id":"violence","description":"harm"}]`) {
		t.Errorf("request body %s, want the text cut to maxInputChars and the authored categories", req.Body)
	}
}
