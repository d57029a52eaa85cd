package main

import (
	"errors"
	"log/slog"
	"net"
	"net/http"

	"github.com/guardrail-dev/guardrail-operator/runtime/tlsreload"
)

// The proxy's TLS flags. The injector renders them only for a SharedGuard with spec.tls
// (controllers/injection), with the files of the Secret it mounts.
const (
	flagTLSCertFile = "tls-cert-file"
	flagTLSKeyFile  = "tls-key-file"
)

// serverCertificate is the proxy's certificate, read from --tls-cert-file and
// --tls-key-file and again when they change (runtime/tlsreload), or nil without them. It
// fails when only one is set or they are not a valid pair: a guard told to serve TLS
// never falls back to cleartext.
func serverCertificate(o options, log *slog.Logger) (*tlsreload.Certificate, error) {
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, errors.New("--" + flagTLSCertFile + " and --" + flagTLSKeyFile + " go together")
	}
	if o.tlsCert == "" {
		return nil, nil
	}
	return tlsreload.New(o.tlsCert, o.tlsKey, o.tlsReloadEvery, log, "HTTPS")
}

// serveProxy serves srv on ln: cleartext HTTP when certs is nil, else HTTPS with certs,
// where the client's ALPN chooses HTTP/2 or HTTP/1.1 as any Go server offers them
// (ServeTLS adds h2 and http/1.1 to NextProtos). A cleartext request on the TLS port is
// answered 400 by net/http and never reaches the proxy.
func serveProxy(srv *http.Server, ln net.Listener, certs *tlsreload.Certificate) error {
	if certs == nil {
		return srv.Serve(ln)
	}
	srv.TLSConfig = certs.Config()
	return srv.ServeTLS(ln, "", "")
}
