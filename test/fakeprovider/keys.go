package fakeprovider

import (
	"net/http"
	"strings"
)

// A provider that checks API keys, as the real ones do: keyless apps are
// shown to work by a provider that answers 401 to any key but the ModelProvider's, and to
// receive that key and never the app's placeholder by what it counts. (The long-running
// command checks keys with its own --keys-file.)

// WithKeys makes the provider answer 401, in the route's error shape, to a request that
// carries none of keys in Authorization (Bearer), x-api-key, api-key, x-goog-api-key or
// a key query parameter (Gemini's). SetKeys changes
// them (a rotation).
func WithKeys(keys ...string) Option {
	return func(p *Provider) { p.keys = func() []string { return keys } }
}

// SetKeys replaces the keys the provider accepts (it then checks keys, whatever its
// options).
func (p *Provider) SetKeys(keys ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = func() []string { return keys }
}

// KeysSeen returns, for each API key value the provider received (in any of the three
// headers), how many requests carried it; "" counts requests that carried none. A
// long-running provider (NewHandler) keeps no count.
func (p *Provider) KeysSeen() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.seen))
	for k, v := range p.seen {
		out[k] = v
	}
	return out
}

// requestKeys returns the API keys a request carries.
func requestKeys(h http.Header) []string {
	var keys []string
	for _, v := range h.Values("Authorization") {
		if k, ok := strings.CutPrefix(v, "Bearer "); ok {
			keys = append(keys, strings.TrimSpace(k))
		}
	}
	keys = append(keys, h.Values("X-Api-Key")...)
	keys = append(keys, h.Values("X-Goog-Api-Key")...)
	return append(keys, h.Values("Api-Key")...)
}

// checkKey counts a request's keys and reports whether it may be answered.
func (p *Provider) checkKey(h http.Header, params []string) bool {
	keys := append(requestKeys(h), params...)
	p.mu.Lock()
	accepted := p.keys
	if !p.forget {
		if p.seen == nil {
			p.seen = map[string]int{}
		}
		if len(keys) == 0 {
			p.seen[""]++
		}
		for _, k := range keys {
			p.seen[k]++
		}
	}
	p.mu.Unlock()
	if accepted == nil {
		return true
	}
	for _, want := range accepted() {
		for _, k := range keys {
			if k == want {
				return true
			}
		}
	}
	return false
}
