package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/remote"
)

// secretToken is the bearer token of test classifiers; no error may contain it.
const secretToken = "sk-test-0123456789abcdef"

// spec is a functional option on a test classifier.
type spec func(*remote.Config)

func categories(ids ...string) spec {
	return func(c *remote.Config) {
		c.Categories = nil
		for _, id := range ids {
			c.Categories = append(c.Categories, remote.Category{ID: id, Description: "about " + id})
		}
		if c.Kind == remote.KindModeration {
			c.CategoryNames = ids
		}
	}
}

func questions(qs ...remote.Question) spec {
	return func(c *remote.Config) { c.Categories, c.Questions = nil, qs }
}

func timeout(d time.Duration) spec { return func(c *remote.Config) { c.Timeout = d } }
func retries(n int) spec           { return func(c *remote.Config) { c.Retries = n } }
func token(s string) spec          { return func(c *remote.Config) { c.Token = remote.Secret(s) } }
func maxChars(n int) spec          { return func(c *remote.Config) { c.MaxInputChars = n } }
func concurrency(n int) spec       { return func(c *remote.Config) { c.MaxConcurrency = n } }

func cached(ttl time.Duration, entries int) spec {
	return func(c *remote.Config) { c.Cache = remote.Cache{TTL: ttl, MaxEntries: entries} }
}

func modalities(ms ...classify.Modality) spec {
	return func(c *remote.Config) {
		c.Modalities = 0
		for _, m := range ms {
			c.Modalities = c.Modalities.With(m)
		}
	}
}

func build(c remote.Config, specs []spec) remote.Config {
	c.Modalities = classify.ModalitySet(0).With(classify.Text)
	for _, s := range specs {
		s(&c)
	}
	return c
}

func moderationSpec(url string, specs ...spec) remote.Config {
	c := remote.Config{Kind: remote.KindModeration, URL: url, Model: "omni-moderation-latest"}
	return build(c, append([]spec{categories("violence", "hate")}, specs...))
}

func judgeSpec(url string, format remote.JudgeFormat, specs ...spec) remote.Config {
	c := remote.Config{Kind: remote.KindLLM, URL: url, Model: "judge-1", Format: format, Instructions: "Be strict."}
	return build(c, append([]spec{categories("violence", "hate", "self-harm")}, specs...))
}

func webhookSpec(url string, specs ...spec) remote.Config {
	c := remote.Config{Kind: remote.KindWebhook, URL: url}
	return build(c, append([]spec{categories("violence", "hate")}, specs...))
}

// newClassifier builds the backend of c, with a negligible backoff unless opts set one.
func newClassifier(t *testing.T, c remote.Config, opts ...remote.Option) classify.Classifier {
	t.Helper()
	k, err := remote.New(c, append([]remote.Option{remote.WithBackoff(time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return k
}

func classifyText(k classify.Classifier, text string) (classify.Result, error) {
	return k.Classify(context.Background(), classify.Input{Text: text})
}

// wantCode fails unless err is a *classify.Error with code want whose message holds no
// secret (the token, or any of the texts given).
func wantCode(t *testing.T, err error, want classify.Code, secrets ...string) {
	t.Helper()
	var ce *classify.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want a *classify.Error with code %s", err, want)
	}
	if ce.Code != want {
		t.Fatalf("code = %s (%v), want %s", ce.Code, err, want)
	}
	for _, s := range append(secrets, secretToken) {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("error %q contains %q", err, s)
		}
	}
}

// boolean, choice and score are the questions of question tests.
var (
	boolean = remote.Question{ID: "onTopic", Type: remote.QuestionBoolean, Instructions: "Is it about cooking?",
		Criteria: []remote.Criterion{{Value: "true", Description: "about cooking"}, {Value: "false", Description: "anything else"}}}
	choice = remote.Question{ID: "tone", Type: remote.QuestionChoice,
		Criteria: []remote.Criterion{{Value: "friendly", Description: "warm"}, {Value: "neutral", Description: "flat"}, {Value: "hostile", Description: "aggressive"}}}
	score = remote.Question{ID: "severity", Type: remote.QuestionScore,
		Criteria: []remote.Criterion{{Value: "low", Description: "mild"}, {Value: "high", Description: "severe"}}}
)

// eventually polls cond for up to two seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 2s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startServer serves h on loopback until the test ends and returns its URL.
func startServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
