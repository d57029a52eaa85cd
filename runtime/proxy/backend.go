package proxy

import (
	"fmt"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/builtin"
	"github.com/guardrail-dev/guardrail-operator/runtime/classify/remote"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// newBackend builds the backend of compiled classifier c, once per policy applied. The
// backends know nothing of the policy: each gets its own configuration, built here.
func newBackend(c *policy.Classifier) (classify.Classifier, error) {
	if c.Backend != policy.BackendBuiltin {
		cfg, err := remoteConfig(c)
		if err != nil {
			return nil, err
		}
		return remote.New(cfg)
	}
	cfg := builtin.Config{Detectors: c.Builtin.Detectors}
	for _, pat := range c.Builtin.Patterns {
		cfg.Patterns = append(cfg.Patterns, builtin.Pattern(pat))
	}
	for _, kw := range c.Builtin.Keywords {
		cfg.Keywords = append(cfg.Keywords, builtin.KeywordSet(kw))
	}
	return builtin.New(cfg)
}

// remoteConfig is the configuration of the remote backend of c: its endpoint, categories
// or questions, and call budget.
func remoteConfig(c *policy.Classifier) (remote.Config, error) {
	cfg := remote.Config{
		Token:          remote.Secret(c.Token),
		Timeout:        c.Timeout,
		Retries:        c.Retries,
		MaxInputChars:  c.MaxInputChars,
		MaxConcurrency: c.MaxConcurrency,
		Modalities:     c.Modalities,
	}
	switch {
	case c.Backend == policy.BackendModeration && c.Moderation != nil:
		cfg.Kind, cfg.URL, cfg.Model = remote.KindModeration, c.Moderation.URL, c.Moderation.Model
		cfg.CategoryNames = c.Moderation.CategoryNames
	case c.Backend == policy.BackendLLM && c.LLM != nil:
		cfg.Kind, cfg.URL, cfg.Model = remote.KindLLM, c.LLM.URL, c.LLM.Model
		// The API spells the formats alike in both packages; remote.New rejects any other.
		cfg.Format, cfg.Instructions = remote.JudgeFormat(c.LLM.Format), c.LLM.Instructions
	case c.Backend == policy.BackendWebhook && c.Webhook != nil:
		cfg.Kind, cfg.URL, cfg.CABundle = remote.KindWebhook, c.Webhook.URL, c.Webhook.CABundle
	default:
		return remote.Config{}, fmt.Errorf("remote backend %q without its configuration", c.Backend)
	}
	cfg.Categories = append(cfg.Categories, c.Categories...)
	for _, q := range c.Questions {
		rq := remote.Question{ID: q.ID, Type: q.Type, Instructions: q.Instructions}
		rq.Criteria = append(rq.Criteria, q.Criteria...)
		cfg.Questions = append(cfg.Questions, rq)
	}
	if c.Cache != nil {
		cfg.Cache = remote.Cache{TTL: c.Cache.TTL, MaxEntries: c.Cache.MaxEntries}
	}
	return cfg, nil
}

// closeIdle closes the idle connections of the backends that keep some (the remote ones).
func closeIdle(backends map[string]classify.Classifier) {
	for _, b := range backends {
		if c, ok := b.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}
