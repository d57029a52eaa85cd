package policy

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/field"
)

// LocalBackendURLs refuses the backend URL of a Classifier that names the host the guard
// calls it from, or a cloud's instance metadata service: a loopback address
// (127.0.0.0/8, ::1, localhost and *.localhost), a link-local one (169.254.0.0/16,
// fe80::/10, where 169.254.169.254 answers), an unspecified one (0.0.0.0/8, ::, which
// reach the local host), or a known metadata endpoint outside those ranges. The guard
// calls a backend from inside the application's pod, with the Classifier's credential as
// a bearer token: such a URL would hand the credential, and the classified text, to a
// port of that pod (the app's own, or the guard's, 15080 and 15090 by default) or to the
// node's metadata service.
//
// The rule is syntactic: a DNS name that resolves to such an address is not caught here.
// IPv4 addresses are read as the C resolver reads them (127.1, 0x7f000001, 017700000001),
// since a guard built with cgo would dial them so. The manager applies the rule unless it
// is started with --classifier-allow-local-urls (for development, where fake backends
// listen on 127.0.0.1); the guard does not, trusting what the manager distributed.
func LocalBackendURLs(s *spec.ClassifierSpec) field.ErrorList {
	sp := field.NewPath("spec")
	var raw string
	var p *field.Path
	switch {
	case s.Moderation != nil:
		raw, p = s.Moderation.URL, sp.Child("moderation", "url")
	case s.LLM != nil:
		raw, p = s.LLM.URL, sp.Child("llm", "url")
	case s.Webhook != nil:
		raw, p = s.Webhook.URL, sp.Child("webhook", "url")
	default:
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil // checkURL refuses it
	}
	if why := localHost(u.Hostname()); why != "" {
		return field.ErrorList{field.Invalid(p, raw, why+
			"; a guard would send the request and the Classifier's credential there, so the manager refuses it "+
			"unless started with --classifier-allow-local-urls (for development)")}
	}
	return nil
}

// metadataHosts are instance-metadata endpoints outside the link-local ranges.
var metadataHosts = map[string]bool{
	"metadata.google.internal": true, // GCP's name for 169.254.169.254
}

var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS IMDS over IPv6
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
}

// localHost says why host (a URL's hostname: without brackets or port) names the local
// host, its link or a metadata service, or returns "" when it does not.
func localHost(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return "localhost is a loopback address, the guard's own pod"
	case metadataHosts[h]:
		return h + " is a cloud instance-metadata endpoint"
	}
	addr, ok := parseHostAddr(h)
	if !ok {
		return ""
	}
	addr = addr.WithZone("").Unmap()
	switch {
	case addr.IsLoopback():
		return addr.String() + " is a loopback address, the guard's own pod"
	case addr.IsLinkLocalUnicast():
		return addr.String() + " is a link-local address, where cloud instance metadata answers"
	case addr.IsUnspecified() || (addr.Is4() && addr.As4()[0] == 0):
		return addr.String() + " is an unspecified address, which reaches the local host"
	case metadataAddrs[addr]:
		return addr.String() + " is a cloud instance-metadata endpoint"
	}
	return ""
}

// parseHostAddr reads host as an IP address: IPv6 (with an optional zone), or IPv4 in
// any form inet_aton accepts. A host whose last label is a number is an IPv4 address to
// a URL parser (WHATWG) and to the C resolver; no DNS name has a numeric top-level label.
func parseHostAddr(h string) (netip.Addr, bool) {
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		return a, err == nil
	}
	labels := strings.Split(h, ".")
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	parts := make([]uint64, len(labels))
	for i, l := range labels {
		n, ok := atonPart(l)
		if !ok {
			return netip.Addr{}, false
		}
		parts[i] = n
	}
	// a.b.c.d, a.b.c (c is 16 bits), a.b (b is 24 bits), a (32 bits).
	var v uint64
	for i, n := range parts[:len(parts)-1] {
		if n > 0xff {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := parts[len(parts)-1]
	if last >= 1<<(8*(5-len(parts))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// atonPart reads one part of an inet_aton address: hexadecimal after 0x, octal after a
// leading 0, decimal otherwise.
func atonPart(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 32)
	return n, err == nil
}
