package controlplane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// A provider's credential lives in the guard's memory only: the snapshot
// persisted to survive a restart holds every provider without its credential, so a guard
// restarted while the operator is unreachable enforces its persisted policy but sends no
// call to those providers (it answers provider_unavailable) until the control plane
// answers again.

// compileProviders checks the snapshot's providers and returns them compiled, sorted by
// name. A provider with an unknown API, a URL that is not absolute http(s), or a name
// given twice refuses the snapshot: the operator sent something this guard cannot use.
func compileProviders(s *Snapshot) ([]*policy.Provider, error) {
	out := make([]*policy.Provider, 0, len(s.Providers))
	seen := make(map[string]bool, len(s.Providers))
	for _, p := range s.Providers {
		if p.Name == "" || seen[p.Name] {
			return nil, fmt.Errorf("provider %q: empty or repeated name", p.Name)
		}
		seen[p.Name] = true
		var family policy.ProviderFamily
		switch p.API {
		case guardv1.ProviderAPIOpenAI:
			family = policy.ProviderOpenAI
		case guardv1.ProviderAPIAnthropic:
			family = policy.ProviderAnthropic
		default:
			return nil, fmt.Errorf("provider %s: unknown API %q", p.Name, p.API)
		}
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("provider %s: the URL is not an absolute http(s) URL", p.Name)
		}
		pp := &policy.Provider{Name: p.Name, Family: family, URL: u, Headers: p.Headers,
			Credential: policy.Secret(p.Credential)}
		if e := p.Exhausted; e != nil {
			if e.Budget == "" || e.Until.IsZero() {
				return nil, fmt.Errorf("provider %s: an exhausted budget without its name or end", p.Name)
			}
			pp.Exhausted, pp.ExhaustedUntil = e.Budget, e.Until
		}
		out = append(out, pp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// withoutCredentials returns the snapshot raw with every provider's credential and the
// tracing headers and client certificate (all of it: certificate, key and CA) removed and
// everything else as it was: raw itself when it holds none, otherwise raw with only its
// providers and tracing re-encoded. A snapshot whose tracing credentials were removed
// keeps its tracing object (the endpoint), which tells the guard that loads it to ask for
// them again (lacksCredentials).
func withoutCredentials(raw []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("decoding the snapshot: %w", err)
	}
	stripped := false
	if list, ok := top["providers"]; ok {
		var providers []map[string]json.RawMessage
		if err := json.Unmarshal(list, &providers); err != nil {
			return nil, fmt.Errorf("decoding the snapshot's providers: %w", err)
		}
		removed := false
		for _, p := range providers {
			if _, ok := p["credential"]; ok {
				delete(p, "credential")
				removed = true
			}
		}
		if removed {
			b, err := json.Marshal(providers)
			if err != nil {
				return nil, err
			}
			top["providers"], stripped = b, true
		}
	}
	if t, ok := top["tracing"]; ok {
		var tracing map[string]json.RawMessage
		if err := json.Unmarshal(t, &tracing); err != nil {
			return nil, fmt.Errorf("decoding the snapshot's tracing: %w", err)
		}
		_, headers := tracing["headers"]
		_, cert := tracing["clientCertificate"]
		if headers || cert {
			delete(tracing, "headers")
			delete(tracing, "clientCertificate")
			b, err := json.Marshal(tracing)
			if err != nil {
				return nil, err
			}
			top["tracing"], stripped = b, true
		}
	}
	if !stripped {
		return raw, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// lacksCredentials reports whether one of s's providers has no credential, or its tracing
// neither headers nor a client certificate: a snapshot loaded from disk. The guard then does not report its version as running, so that the
// operator pushes the snapshot, credentials included, as soon as it answers (it pushes
// only a version that differs from the one running).
func lacksCredentials(s *Snapshot) bool {
	for _, p := range s.Providers {
		if p.Credential == "" {
			return true
		}
	}
	return s.Tracing != nil && len(s.Tracing.Headers) == 0 && s.Tracing.ClientCertificate == nil
}
