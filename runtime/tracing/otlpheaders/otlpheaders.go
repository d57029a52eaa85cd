// Package otlpheaders reads and checks the headers of OTLP exports: the value of
// OTEL_EXPORTER_OTLP_HEADERS, a list key=value,... with URL-encoded values. The guard reads
// it from its environment (runtime/tracing) and the manager from the Secret it delivers to
// the guards (controllers/controlplane, docs/tracing.md).
//
// The headers are usually a credential of the collector (a bearer token, an API key), so
// no error of this package holds a key or a value: errors name the position of the
// offending entry only. It imports nothing but the standard library, for the manager's
// sake as much as the guard's.
package otlpheaders

import (
	"errors"
	"fmt"
	"net/textproto"
	"net/url"
	"strings"
)

// Limits of a header list: an export carries them in every request.
const (
	// MaxBytes bounds the encoded list (the Secret's value, the variable).
	MaxBytes = 16 << 10
	// MaxHeaders bounds how many headers it names.
	MaxHeaders = 32
)

// reserved are the header names a list may not set: hop-by-hop headers (RFC 9110 7.6.1,
// and those HTTP/2 forbids), the proxy's, and the ones the exporter sets itself (framing,
// encoding, gRPC's own). Lower case.
var reserved = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true,
	"upgrade": true, "te": true, "trailer": true, "proxy-authorization": true, "proxy-authenticate": true,
	"host": true, "content-length": true, "content-type": true, "content-encoding": true,
	"user-agent": true, "expect": true,
}

// Parse reads a list key=value,... (values URL-encoded; surrounding spaces and empty entries
// ignored) and checks it (Check). The empty string is no header and no error.
func Parse(s string) (map[string]string, error) {
	if len(s) > MaxBytes {
		return nil, fmt.Errorf("longer than %d bytes", MaxBytes)
	}
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	h := map[string]string{}
	n := 0
	for kv := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		n++
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("entry %d: not key=value", n)
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("entry %d: the value is not URL-encoded", n)
		}
		if err := checkOne(k, val); err != nil {
			return nil, fmt.Errorf("entry %d: %w", n, err)
		}
		canonical := textproto.CanonicalMIMEHeaderKey(k)
		if _, dup := h[canonical]; dup {
			return nil, fmt.Errorf("entry %d: a header named twice", n)
		}
		h[canonical] = val
	}
	if len(h) > MaxHeaders {
		return nil, fmt.Errorf("more than %d headers", MaxHeaders)
	}
	return h, nil
}

// Check checks headers given as a map (a snapshot's): every name an HTTP token that is not
// reserved, every value free of control characters, at most MaxHeaders of them.
func Check(h map[string]string) error {
	if len(h) > MaxHeaders {
		return fmt.Errorf("more than %d headers", MaxHeaders)
	}
	size := 0
	for k, v := range h {
		if err := checkOne(k, v); err != nil {
			return err
		}
		size += len(k) + len(v)
	}
	if size > MaxBytes {
		return fmt.Errorf("longer than %d bytes", MaxBytes)
	}
	return nil
}

func checkOne(name, value string) error {
	if !token(name) {
		return errors.New("the name is not an HTTP header name")
	}
	lower := strings.ToLower(name)
	if reserved[lower] || strings.HasPrefix(lower, "grpc-") {
		return errors.New("the name is a hop-by-hop or protocol header the exporter does not take")
	}
	if strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errors.New("the value holds a control character")
	}
	return nil
}

// token reports whether s is an RFC 9110 token: what a header name is made of.
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
