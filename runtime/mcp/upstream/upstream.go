// Package upstream holds what the injector and the guard agree on about MCP upstreams
// beyond their names (the flag and the pod annotation are in api/guard/v1): the app's
// environment variable, and how a NAME=URL pair is read. It has no dependencies beyond the standard library, so that the
// operator links it without the guard's engine.
package upstream

import (
	"fmt"
	"net/url"
	"strings"
)

const (
	// PathPrefix is where the guard serves upstream NAME: PathPrefix + NAME.
	PathPrefix = "/mcp/"
	// MaxNameLength bounds a name, as a DNS label is bounded.
	MaxNameLength = 63
)

// Upstream is one MCP server the guard fronts.
type Upstream struct {
	// Name is a DNS label: lowercase letters, digits and '-', starting and ending with a
	// letter or digit.
	Name string
	// URL is the server's streamable HTTP endpoint (http or https).
	URL *url.URL
}

// String spells the upstream as the flag and the annotation take it.
func (u Upstream) String() string { return u.Name + "=" + u.URL.String() }

// EnvVar is the environment variable that gives app containers the guard's URL for
// upstream name: GUARDRAIL_MCP_<NAME>_URL, NAME upper-cased with '-' as '_'.
func EnvVar(name string) string {
	return "GUARDRAIL_MCP_" + strings.ReplaceAll(strings.ToUpper(name), "-", "_") + "_URL"
}

// GuardURL is where an app reaches upstream name through the guard listening on
// 127.0.0.1:port.
func GuardURL(port int, name string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s%s", port, PathPrefix, name)
}

// Parse reads one NAME=URL pair.
func Parse(spec string) (Upstream, error) {
	name, raw, ok := strings.Cut(strings.TrimSpace(spec), "=")
	if !ok {
		return Upstream{}, fmt.Errorf("an MCP upstream is not NAME=URL (%q)", truncate(spec))
	}
	if err := validName(name); err != nil {
		return Upstream{}, err
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return Upstream{}, fmt.Errorf("MCP upstream %s: the URL is not an absolute URL", name)
	case u.Scheme != "http" && u.Scheme != "https":
		return Upstream{}, fmt.Errorf("MCP upstream %s: the URL must be http or https, got %q", name, truncate(u.Scheme))
	case u.User != nil:
		return Upstream{}, fmt.Errorf("MCP upstream %s: the URL must not carry credentials (the app sends them in headers)", name)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return Upstream{}, fmt.Errorf("MCP upstream %s: the URL must not have a fragment", name)
	}
	return Upstream{Name: name, URL: u}, nil
}

// ParseList reads a comma-separated list of NAME=URL pairs (the annotation's value); a
// name given twice is refused.
func ParseList(list string) ([]Upstream, error) {
	var out []Upstream
	for _, spec := range strings.Split(list, ",") {
		if strings.TrimSpace(spec) == "" {
			continue
		}
		u, err := Parse(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, Unique(out)
}

// Unique refuses a name given twice.
func Unique(ups []Upstream) error {
	seen := map[string]bool{}
	for _, u := range ups {
		if seen[u.Name] {
			return fmt.Errorf("MCP upstream %s is named twice", u.Name)
		}
		seen[u.Name] = true
	}
	return nil
}

// truncate bounds a value quoted in a message.
func truncate(s string) string {
	if len(s) <= 32 {
		return s
	}
	return s[:32] + "…"
}

func validName(name string) error {
	ok := name != "" && len(name) <= MaxNameLength && name[0] != '-' && name[len(name)-1] != '-'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf("MCP upstream name %q must be a DNS label (lowercase letters, digits and '-', at most %d, starting and ending with a letter or digit)",
			truncate(name), MaxNameLength)
	}
	return nil
}
