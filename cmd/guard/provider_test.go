package main

import (
	"log/slog"
	"strings"
	"testing"
)

func TestProviderFlagsAreNamesGivenOncePerFamily(t *testing.T) {
	for _, c := range []struct {
		name, value string
		seen        []string
		ok          bool
	}{
		{"a ModelProvider name is accepted", "openai-prod", nil, true},
		{"a second provider is accepted", "claude.eu", []string{"openai-prod"}, true},
		{"an empty name is refused", "", nil, false},
		{"an upper-case name is refused", "OpenAI", nil, false},
		{"a URL is refused", "https://api.openai.com", nil, false},
		{"a name given twice is refused", "openai-prod", []string{"openai-prod"}, false},
		{"a third provider is refused", "third", []string{"a", "b"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := validProviderName(c.value, c.seen); (err == nil) != c.ok {
				t.Errorf("validProviderName(%q, %v) = %v", c.value, c.seen, err)
			}
		})
	}
}

func TestAProviderWithoutTheControlPlaneDoesNotStart(t *testing.T) {
	err := run(options{policyFile: "policy.yaml", providers: []string{"openai-prod"}}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--provider needs --control-plane") {
		t.Errorf("run = %v, want a refusal naming --control-plane", err)
	}
}
