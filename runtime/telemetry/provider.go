package telemetry

import (
	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom"
)

// providerMetrics are a keyless guard's usage of its ModelProviders,
// labelled by the provider's name: a guard calls only the providers its --provider flags
// name (at most one per API family), so the label is bounded. Counts and token figures
// only, from the providers' own usage fields: never text, never a credential.
type providerMetrics struct {
	requests *prom.CounterVec
	tokens   *prom.CounterVec
	// sink receives every count (OnProviderUsage); nil when nobody listens.
	sink func(ProviderUsage)
}

// ProviderUsage is one increment of a provider's usage, in the contract's shape.
type ProviderUsage = guardv1.ProviderUsage

func newProviderMetrics(reg *prom.Registry) *providerMetrics {
	return &providerMetrics{
		requests: reg.NewCounterVec(prom.Opts{
			Name: "guard_provider_requests_total",
			Help: "Calls sent to a ModelProvider with its credential (keyless apps), by provider.",
		}, "provider"),
		tokens: reg.NewCounterVec(prom.Opts{
			Name: "guard_provider_tokens_total",
			Help: "Tokens a ModelProvider reported in its usage fields (streamed answers included; chat streams only when the " +
				"client asked for stream_options.include_usage; embeddings not), by provider and direction (input, output).",
		}, "provider", "direction"),
	}
}

// OnProviderUsage installs the sink of every provider usage count; it is called
// synchronously. Install it before traffic starts.
func (t *Telemetry) OnProviderUsage(sink func(ProviderUsage)) { t.providers.sink = sink }

// ProviderRequest counts a call sent to provider.
func (t *Telemetry) ProviderRequest(provider string) {
	t.providers.requests.WithLabelValues(provider).Inc()
	if t.providers.sink != nil {
		t.providers.sink(ProviderUsage{Provider: provider, Requests: 1})
	}
}

// ProviderTokens counts the tokens of one answer of provider.
func (t *Telemetry) ProviderTokens(provider string, input, output int64) {
	if input > 0 {
		t.providers.tokens.WithLabelValues(provider, "input").Add(uint64(input))
	}
	if output > 0 {
		t.providers.tokens.WithLabelValues(provider, "output").Add(uint64(output))
	}
	if t.providers.sink != nil {
		t.providers.sink(ProviderUsage{Provider: provider, InputTokens: max(input, 0), OutputTokens: max(output, 0)})
	}
}
