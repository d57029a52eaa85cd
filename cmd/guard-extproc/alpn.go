package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"

	"google.golang.org/grpc/credentials"
)

// gatewayTLS is gRPC's server-side TLS without its ALPN requirement. gRPC refuses a TLS
// client that negotiates no protocol by ALPN, but a gateway's upstream TLS often offers
// none: Envoy sets alpn_protocols only when its cluster says so, and Envoy Gateway leaves
// upstream ALPN unset unless EnvoyProxy's backendTLS.alpnProtocols is given, so such a
// gateway could not call the processor at all. The processor serves nothing but gRPC on
// this port, so a client that negotiates no protocol is spoken to in HTTP/2, as
// h2-without-ALPN clients expect; one that negotiates h2 is served as before; one that
// offers only protocols other than h2 and http/1.1 fails the handshake (crypto/tls lets a
// client offering http/1.1 to an h2 server in as one offering nothing, and it then gets an
// HTTP/2 preface it cannot read).
type gatewayTLS struct {
	credentials.TransportCredentials // the client side and Info, as credentials.NewTLS has them
	cfg                              *tls.Config
}

// newGatewayTLS returns the credentials of cfg, which offers h2 by ALPN.
func newGatewayTLS(cfg *tls.Config) credentials.TransportCredentials {
	cfg = cfg.Clone()
	if !slices.Contains(cfg.NextProtos, "h2") {
		cfg.NextProtos = append(cfg.NextProtos, "h2")
	}
	return gatewayTLS{TransportCredentials: credentials.NewTLS(cfg), cfg: cfg}
}

// ServerHandshake runs the TLS handshake within the deadline gRPC set on raw.
func (g gatewayTLS) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn := tls.Server(raw, g.cfg)
	if err := conn.HandshakeContext(context.Background()); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	st := conn.ConnectionState()
	if p := st.NegotiatedProtocol; p != "" && p != "h2" {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("the client negotiated %q, not h2", p)
	}
	return conn, credentials.TLSInfo{State: st, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}

// Clone returns a copy of g.
func (g gatewayTLS) Clone() credentials.TransportCredentials {
	return gatewayTLS{TransportCredentials: g.TransportCredentials.Clone(), cfg: g.cfg.Clone()}
}
