package egress

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"time"
)

// Transport returns a new transport for calls leaving the guard: no proxy whatever the
// environment says, TLS 1.2 or later with servers verified against roots (nil: the
// system's CA bundle, SystemRoots), HTTP/2 attempted, and net/http's default timeouts.
func Transport(roots *x509.CertPool) *http.Transport {
	if roots == nil {
		roots, _ = SystemRoots()
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil, // never from the environment: see the package doc
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
