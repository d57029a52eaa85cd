package policy

import (
	"net/url"
	"time"
)

// ProviderFamily is the API family whose calls a ModelProvider takes.
type ProviderFamily uint8

// The API families of a provider.
const (
	// ProviderOpenAI takes the OpenAI API's calls (chat, Responses, embeddings, their
	// retrievals and pass-through routes); the credential travels as
	// Authorization: Bearer.
	ProviderOpenAI ProviderFamily = iota + 1
	// ProviderAnthropic takes the Anthropic API's calls (Messages and its pass-through
	// routes); the credential travels as x-api-key.
	ProviderAnthropic
)

// String returns the family as the ModelProvider's spec.api spells it.
func (f ProviderFamily) String() string {
	switch f {
	case ProviderOpenAI:
		return "OpenAI"
	case ProviderAnthropic:
		return "Anthropic"
	}
	return "unknown"
}

// Provider is a ModelProvider a guard sends its pod's calls of one API family to, with
// the provider's credential in place of the app's (keyless apps). It comes
// from the control plane only: a policy file never holds one.
type Provider struct {
	// Name is the ModelProvider's name.
	Name   string
	Family ProviderFamily
	// URL is the provider's base URL (a trailing /v1 is accepted, as for the guard's
	// upstream flags).
	URL *url.URL
	// Headers are extra request headers, set after the client's.
	Headers map[string]string
	// Credential is the API key. Empty when the guard has not received it since it
	// started (a persisted snapshot never holds it): the provider is then unavailable.
	Credential Secret
	// Exhausted names the budget of the provider (guardv1.BudgetRequestsPerMinute, …) the
	// pod's namespace used up, until ExhaustedUntil: calls are refused with 429 until then.
	// Empty when no budget is used up.
	Exhausted      string
	ExhaustedUntil time.Time
}
