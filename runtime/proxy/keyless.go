package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// Keyless apps. A guard started with --provider=NAME sends its pod's
// calls of that provider's API family (OpenAI: chat, Responses, embeddings, the retrieval
// of a stored response, GETs and --pass-through routes told apart as OpenAI's; Anthropic:
// Messages and the GETs and pass-through routes told apart as Anthropic's, see
// familyOfUnguarded) to the provider's URL from the policy snapshot — never to
// --openai-upstream or --anthropic-upstream, so that no flag can send the credential
// elsewhere — with the client's credential headers removed (Authorization, x-api-key,
// api-key, x-goog-api-key; and its OpenAI-Organization and OpenAI-Project: which account
// the provider's key bills is the provider's to say) and the provider's headers and
// credential set. The rules, in order, for a call of family F:
//
//  1. a named provider of family F is in the snapshot in force with its credential: the
//     call goes to it; a client that sends a key of its own (ownKey) is refused with 400
//     provider_key_not_accepted, and a placeholder or short dummy is replaced;
//  2. otherwise, when a named provider is unavailable (not in the snapshot, no policy yet,
//     or no credential since the guard started), the call is refused with 503
//     provider_unavailable: its family is unknown then, so it may be F, and the call is
//     never sent with the app's own key instead;
//  3. otherwise (every named provider is available and none is of family F, or the guard
//     names none) the call goes to the family's upstream flag with the client's headers,
//     as a guard without --provider sends every call.
//
// The snapshot's providers are part of the state Apply swaps: a request uses the
// credential of the policy it started with, and a rotated credential applies from the
// next request on.

// Error codes of keyless refusals.
const (
	codeProviderUnavailable = "provider_unavailable"
	codeProviderKey         = "provider_key_not_accepted"
	// codeProviderCredential replaces a provider's 401 to a ModelProvider's credential.
	codeProviderCredential = "provider_credential_refused"
)

// credentialHeaders are the request headers that carry an API key: OpenAI's and
// OpenAI-compatible servers' bearer token, Anthropic's x-api-key, Azure OpenAI's api-key,
// Google's x-goog-api-key (the ModelProvider's headers may set none of them).
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"}

// credentialParams are the query parameters some OpenAI-compatible servers take a key in.
var credentialParams = []string{"api-key", "key"}

// minKeyChars is the length from which a value is taken for a real key. Provider keys are
// far longer (OpenAI's and Anthropic's 50 and more; Azure's 32); the dummies apps and
// docs use instead of a key ("x", "dummy", "none", "not-needed", "EMPTY") are far shorter.
const minKeyChars = 20

// looksLikeKey reports whether v, a credential header's value or a key parameter, is an
// API key of the client's own: after an authorization scheme ("Bearer "), a value that
// starts with sk- (OpenAI's sk-, sk-proj-, Anthropic's sk-ant-, and most compatible
// servers') or has minKeyChars or more characters. An empty value, the injector's
// placeholder and shorter dummies are not: the guard replaces them.
func looksLikeKey(v string, header string) bool {
	v = strings.TrimSpace(v)
	if strings.EqualFold(header, "Authorization") {
		if _, token, ok := strings.Cut(v, " "); ok {
			v = strings.TrimSpace(token)
		}
	}
	switch {
	case v == "" || v == guardv1.PlaceholderAPIKey:
		return false
	case len(v) >= 3 && strings.EqualFold(v[:3], "sk-"):
		return true
	}
	return len(v) >= minKeyChars
}

// ownKey reports whether a request carries an API key of its own (looksLikeKey) in a
// credential header or parameter.
func ownKey(r *http.Request) bool {
	for _, h := range credentialHeaders {
		for _, v := range r.Header.Values(h) {
			if looksLikeKey(v, h) {
				return true
			}
		}
	}
	if r.URL.RawQuery == "" {
		return false
	}
	q := r.URL.Query()
	for _, k := range credentialParams {
		for _, v := range q[k] {
			if looksLikeKey(v, k) {
				return true
			}
		}
	}
	return false
}

// providerRoute is a provider in force: where its family's calls go and how.
type providerRoute struct {
	p *policy.Provider
	// passThrough forwards the family's unguarded calls (GETs, --pass-through) to it.
	passThrough *httputil.ReverseProxy
}

// accountHeaders choose which of a key's organizations or projects a call is billed to:
// with the provider's key, that is the provider's choice (its headers), not the app's.
var accountHeaders = []string{"OpenAI-Organization", "OpenAI-Project"}

// authorize replaces the client's credentials in h with the provider's, after the
// provider's extra headers (which cannot override the credential).
func (pr *providerRoute) authorize(h http.Header) {
	for _, k := range credentialHeaders {
		h.Del(k)
	}
	for _, k := range accountHeaders {
		h.Del(k)
	}
	for k, v := range pr.p.Headers {
		h.Set(k, v)
	}
	if pr.p.Family == policy.ProviderAnthropic {
		h.Del("Authorization")
		h.Set("X-Api-Key", string(pr.p.Credential))
		return
	}
	h.Del("X-Api-Key")
	h.Set("Authorization", "Bearer "+string(pr.p.Credential))
}

// keyless is the providers part of a state: the route of each family that has one, and
// why a named provider is unavailable ("" when none is).
type keyless struct {
	routes      [3]*providerRoute // by policy.ProviderFamily
	unavailable string
}

// keylessFor builds the keyless part of a state from snap's providers and the names the
// guard was started with. Two named providers of one family refuse the snapshot.
func (p *Proxy) keylessFor(snap *policy.Snapshot) (keyless, error) {
	var k keyless
	for _, name := range p.cfg.Providers {
		var prov *policy.Provider
		for _, sp := range snap.Providers {
			if sp.Name == name {
				prov = sp
			}
		}
		switch {
		case prov == nil:
			k.unavail(fmt.Sprintf("ModelProvider %s is not available to this pod: the control plane did not deliver it "+
				"(it does not exist, does not select %s, or its credential Secret cannot be read)", name, p.podNamespace()))
			continue
		case prov.Credential == "":
			k.unavail(fmt.Sprintf("the credential of ModelProvider %s has not reached the guardrail sidecar since it started "+
				"(it is kept in memory only); the control plane has not answered yet", name))
			continue
		case k.routes[prov.Family] != nil:
			return keyless{}, fmt.Errorf("ModelProviders %s and %s both take the %s API's calls; a guard uses one per API family",
				k.routes[prov.Family].p.Name, name, prov.Family)
		}
		pr := &providerRoute{p: prov}
		pr.passThrough = p.reverseProxy(prov.URL, pr)
		k.routes[prov.Family] = pr
	}
	return k, nil
}

func (k *keyless) unavail(why string) {
	if k.unavailable != "" {
		k.unavailable += "; "
	}
	k.unavailable += why
}

// podNamespace names the pod's namespace in a message.
func (p *Proxy) podNamespace() string {
	if p.cfg.Namespace != "" {
		return "namespace " + p.cfg.Namespace
	}
	return "this pod's namespace"
}

// upstream is where one call goes: the base URL and, for a keyless family, the provider
// whose credential replaces the client's.
type upstream struct {
	base     *url.URL
	provider *providerRoute
}

// upstreamFor applies the keyless rules (see above) to a call of family f under st, the
// state the request uses. When the call may not go out it answers the client and returns
// the refusal's code (provider_key_not_accepted, budget_exceeded, provider_unavailable),
// otherwise ""; family is the guard_requests_total label of the refusal.
func (p *Proxy) upstreamFor(w http.ResponseWriter, r *http.Request, st *state, f wire.Family, family string) (upstream, string) {
	up := upstream{base: p.cfg.OpenAIUpstream}
	fam := policy.ProviderOpenAI
	switch {
	case f.Anthropic():
		up.base, fam = p.cfg.AnthropicUpstream, policy.ProviderAnthropic
	case f.Gemini():
		// No ModelProvider takes the Gemini API's calls: they go to its upstream with the
		// client's own headers, whatever --provider names.
		return upstream{base: p.cfg.GeminiUpstream}, ""
	}
	if len(p.cfg.Providers) == 0 {
		return up, ""
	}
	var why string
	switch {
	case st == nil:
		why = "the guardrail sidecar has received no policy from the control plane yet, and with it the credentials of " +
			"ModelProvider " + strings.Join(p.cfg.Providers, " and ")
	case st.keyless.routes[fam] != nil:
		pr := st.keyless.routes[fam]
		if ownKey(r) {
			p.refuseCall(w, r, f, family, wire.APIError{Status: http.StatusBadRequest,
				Type: "invalid_request_error", Code: codeProviderKey, Message: fmt.Sprintf(
					"this pod's calls of the %s API go through ModelProvider %s, which holds the API key: the app must not send "+
						"a key of its own (the key was not forwarded). Remove it from the app's configuration; the injector gives "+
						"the app the placeholder %q, which the guardrail sidecar replaces", fam, pr.p.Name, guardv1.PlaceholderAPIKey)})
			return upstream{}, codeProviderKey
		}
		if pr.p.Exhausted != "" {
			if left := time.Until(pr.p.ExhaustedUntil); left > 0 {
				p.refuseOverBudget(w, r, f, family, pr.p, left)
				return upstream{}, guardv1.CodeBudgetExceeded
			}
		}
		return upstream{base: pr.p.URL, provider: pr}, ""
	default:
		why = st.keyless.unavailable
	}
	if why == "" {
		return up, "" // every named provider is in force, none of this family
	}
	p.refuseCall(w, r, f, family, wire.APIError{Status: http.StatusServiceUnavailable,
		Type: "server_error", Code: codeProviderUnavailable,
		Message: why + "; the call was not sent (never with the app's own key)"})
	return upstream{}, codeProviderUnavailable
}

// refuseOverBudget answers a call to a provider whose budget the pod's namespace used up
// (its ModelProvider's limits, in Enforce mode): 429 in the family's shape, which the
// official SDKs surface as a rate-limit error (OpenAI's type rate_limit_exceeded, code
// budget_exceeded; Anthropic's rate_limit_error), with Retry-After the seconds left in the
// window, which they wait before they retry. The call is not sent.
func (p *Proxy) refuseOverBudget(w http.ResponseWriter, r *http.Request, f wire.Family, family string, prov *policy.Provider, left time.Duration) {
	secs := int64((left + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	p.refuseCall(w, r, f, family, wire.APIError{Status: http.StatusTooManyRequests, Type: "rate_limit_exceeded",
		Code: guardv1.CodeBudgetExceeded, Message: fmt.Sprintf(
			"%s has used up its budget of %s (%s) of ModelProvider %s until %s; the call was not sent. "+
				"Retry after %d seconds, or ask the platform team to raise the ModelProvider's limits",
			p.budgetHolder(), guardv1.BudgetDescription(prov.Exhausted), prov.Exhausted, prov.Name,
			prov.ExhaustedUntil.UTC().Format(time.RFC3339), secs)})
}

// budgetHolder names whose budget a refusal is about.
func (p *Proxy) budgetHolder() string {
	if p.cfg.Namespace != "" {
		return "Namespace " + p.cfg.Namespace
	}
	return "This pod's namespace"
}

// refuseCall answers a call the keyless rules do not let out.
func (p *Proxy) refuseCall(w http.ResponseWriter, r *http.Request, f wire.Family, family string, e wire.APIError) {
	p.cfg.Telemetry.Request(family, "refused")
	w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
	if hasBody(r) {
		// The body is not read: the connection is not kept for a next request behind it.
		w.Header().Set("Connection", "close")
	}
	writeError(w, f, e)
}

// logProviders says which named providers are in force and why the others are not: names
// and families only, never a credential.
func (p *Proxy) logProviders(k keyless) {
	var inForce []string
	for _, pr := range k.routes {
		if pr != nil {
			inForce = append(inForce, pr.p.Name+" ("+pr.p.Family.String()+")")
			if pr.p.Exhausted != "" && time.Now().Before(pr.p.ExhaustedUntil) {
				p.cfg.Log.Warn("Calls to a model provider are refused with 429: the namespace used up a budget",
					"provider", pr.p.Name, "budget", pr.p.Exhausted, "until", pr.p.ExhaustedUntil.UTC().Format(time.RFC3339))
			}
		}
	}
	if k.unavailable == "" {
		p.cfg.Log.Info("Model providers in force", "providers", strings.Join(inForce, ", "))
		return
	}
	p.cfg.Log.Warn("Model calls refused until a model provider is available", "inForce", strings.Join(inForce, ", "),
		"unavailable", k.unavailable)
}

// usage counts a provider's tokens from a decoded answer's usage fields.
func (x *exchange) usage(u wire.Usage) {
	x.call.Usage(u.InputTokens, u.OutputTokens)
	if pr := x.up.provider; pr != nil && (u.InputTokens > 0 || u.OutputTokens > 0) {
		x.p.cfg.Telemetry.ProviderTokens(pr.p.Name, u.InputTokens, u.OutputTokens)
	}
}

// providerCredentialRefused is what the client receives instead of a provider's 401 to a
// ModelProvider's credential: the provider's own body may quote part of the key (OpenAI's
// does), and the app cannot mend it, its key playing no part in the call.
func providerCredentialRefused(name string) wire.APIError {
	return wire.APIError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: codeProviderCredential,
		Message: "the model provider refused the credential of ModelProvider " + name + " (HTTP 401); the app's own key " +
			"plays no part in this call: the ModelProvider's credential Secret must be corrected"}
}

// credentialRefused replaces a pass-through answer's 401 from a keyless provider (see
// providerCredentialRefused) and says so in the log.
func (p *Proxy) credentialRefused(pr *providerRoute, resp *http.Response) {
	p.cfg.Log.Warn("A model provider refused its ModelProvider's credential", "provider", pr.p.Name,
		"requestId", resp.Request.Header.Get("X-Request-Id"))
	_ = resp.Body.Close()
	body := wire.AppendErrorBody(nil, familyOfUnguarded(resp.Request), providerCredentialRefused(pr.p.Name))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	for _, h := range []string{"Content-Encoding", "Transfer-Encoding"} {
		resp.Header.Del(h)
	}
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
}
