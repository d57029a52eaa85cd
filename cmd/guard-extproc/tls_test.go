package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/guardrail-dev/guardrail-operator/runtime/tlsreload/tlstest"
)

// serviceNames are the names the processor's certificate carries: its Service's.
var serviceNames = []string{"llm-extproc.team-a.svc", "llm-extproc.team-a.svc.cluster.local"}

// syncBuffer is a log sink the server's goroutines write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The processor serves gRPC over TLS from a Secret's files: a client trusting the CA
// completes the handshake and is served, a cleartext client, a client trusting another
// CA and a client that does not offer h2 are not. When the files are replaced in place as
// the kubelet replaces a renewed Secret, new connections get the new certificate without
// a restart; a replacement that is not a valid pair is refused and the last good pair
// served. The log names certificates and files, never a key.
func TestTheProcessorServesTLSAndReloadsARenewedCertificate(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	vol := &tlstest.SecretVolume{T: t, Dir: t.TempDir()}
	cert1, key1 := ca.Issue(t, 101, serviceNames...)
	vol.Write(map[string][]byte{"tls.crt": cert1, "tls.key": key1})

	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	o, err := parseFlags([]string{"--tls-cert-file=" + filepath.Join(vol.Dir, "tls.crt"), "--tls-key-file=" + filepath.Join(vol.Dir, "tls.key")})
	if err != nil {
		t.Fatal(err)
	}
	o.tlsReloadEvery = 0 // every handshake reads the files
	g, err := grpcServer(o, log)
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	healthpb.RegisterHealthServer(g, hs)
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	addr := ln.Addr().String()

	// served calls the health service on a new connection and returns the serial number
	// of the certificate the server presented.
	served := func(creds credentials.TransportCredentials) (*big.Int, error) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return nil, err
		}
		defer func() { _ = conn.Close() }()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		var p peer.Peer
		if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
			return nil, err
		}
		info, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok {
			t.Fatalf("the call was not over TLS: %T", p.AuthInfo)
		}
		return info.State.PeerCertificates[0].SerialNumber, nil
	}
	trusting := func(pool *x509.CertPool) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "llm-extproc.team-a.svc", MinVersion: tls.VersionTLS12})
	}
	wantSerial := func(step string, want int64) {
		t.Helper()
		got, err := served(trusting(ca.Pool))
		if err != nil {
			t.Fatalf("%s: a client trusting the CA: %v", step, err)
		}
		if got.Int64() != want {
			t.Fatalf("%s: the server presented certificate %d, want %d", step, got, want)
		}
	}

	wantSerial("start", 101)
	if _, err := served(insecure.NewCredentials()); err == nil {
		t.Error("a cleartext client was served")
	}
	if _, err := served(trusting(tlstest.NewCA(t, "another CA").Pool)); err == nil {
		t.Error("a client trusting another CA completed the handshake")
	}
	// gRPC over TLS speaks HTTP/2: a client that offers h2 by ALPN gets the server's
	// HTTP/2 preface, and so does one that offers nothing (Envoy Gateway's upstream TLS by
	// default; crypto/tls also lets a client offering only http/1.1 in as one offering
	// nothing); one that offers only another protocol fails the handshake.
	for _, alpn := range [][]string{{"h2"}, nil, {"h2", "http/1.1"}} {
		raw, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool, ServerName: "llm-extproc.team-a.svc", NextProtos: alpn, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("ALPN %q: the handshake failed: %v", alpn, err)
		}
		_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := io.ReadFull(raw, make([]byte, 9))
		_ = raw.Close()
		if n != 9 {
			t.Errorf("ALPN %q: %d bytes of an HTTP/2 server preface, want a SETTINGS frame header", alpn, n)
		}
	}
	if raw, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool, ServerName: "llm-extproc.team-a.svc", NextProtos: []string{"acme-tls/1"}, MinVersion: tls.VersionTLS12}); err == nil {
		_ = raw.Close()
		t.Error("a client offering only another protocol than HTTP completed the handshake")
	}
	// A real gRPC client without ALPN (as a gateway without alpn_protocols) is served.
	noALPN := &tls.Config{RootCAs: ca.Pool, ServerName: "llm-extproc.team-a.svc", MinVersion: tls.VersionTLS12}
	if _, err := served(noALPNCreds{credentials.NewTLS(noALPN), noALPN}); err != nil {
		t.Errorf("a gRPC client negotiating no ALPN protocol: %v", err)
	}

	// cert-manager renews: the Secret's two keys change at once.
	cert2, key2 := ca.Issue(t, 102, serviceNames...)
	vol.Write(map[string][]byte{"tls.crt": cert2, "tls.key": key2})
	wantSerial("renewed", 102)

	// A pair that does not match (the new certificate with the old key), then garbage:
	// refused, the renewed pair still served, each logged once.
	cert3, _ := ca.Issue(t, 103, serviceNames...)
	vol.Write(map[string][]byte{"tls.crt": cert3, "tls.key": key1})
	wantSerial("mismatched pair", 102)
	wantSerial("mismatched pair, again", 102)
	vol.Write(map[string][]byte{"tls.crt": []byte("not a certificate"), "tls.key": key2})
	wantSerial("garbage", 102)

	// The next valid pair is taken.
	cert4, key4 := ca.Issue(t, 104, serviceNames...)
	vol.Write(map[string][]byte{"tls.crt": cert4, "tls.key": key4})
	wantSerial("renewed again", 104)

	out := logs.String()
	if n := strings.Count(out, "is not a valid pair"); n != 2 {
		t.Errorf("%d refusals logged, want 2 (one per bad pair):\n%s", n, out)
	}
	if n := strings.Count(out, "Reloaded the TLS certificate"); n != 2 {
		t.Errorf("%d reloads logged, want 2:\n%s", n, out)
	}
	for _, key := range [][]byte{key1, key2, key4} {
		body := strings.Join(strings.Split(string(key), "\n")[1:3], "")
		if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, body[:32]) {
			t.Fatalf("the log carries key material:\n%s", out)
		}
	}
	if !strings.Contains(out, `"serial":"68"`) || !strings.Contains(out, `"dnsNames":["llm-extproc.team-a.svc"`) {
		t.Errorf("the log does not name the certificates served:\n%s", out)
	}
}

// The processor does not start on a pair that is not valid, or on missing files.
func TestTheProcessorRefusesToStartWithoutAValidPair(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	dir := t.TempDir()
	cert1, _ := ca.Issue(t, 1, serviceNames...)
	_, key2 := ca.Issue(t, 2, serviceNames...)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	certFile, keyFile := write("tls.crt", cert1), write("tls.key", key2)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for name, o := range map[string]options{
		"mismatched": {tlsCert: certFile, tlsKey: keyFile},
		"missing":    {tlsCert: filepath.Join(dir, "absent.crt"), tlsKey: keyFile},
	} {
		if _, err := grpcServer(o, log); err == nil {
			t.Errorf("%s: the server started", name)
		} else if strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: the error quotes the key: %v", name, err)
		}
	}
}

// noALPNCreds is a gRPC client's TLS that offers no protocol by ALPN, as a gateway's
// upstream TLS without alpn_protocols does (gRPC's own client always offers h2, and
// refuses a server that negotiates none).
type noALPNCreds struct {
	credentials.TransportCredentials
	cfg *tls.Config
}

func (c noALPNCreds) ClientHandshake(ctx context.Context, _ string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn := tls.Client(raw, c.cfg.Clone())
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	st := conn.ConnectionState()
	if st.NegotiatedProtocol != "" {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("negotiated %q without offering it", st.NegotiatedProtocol)
	}
	return conn, credentials.TLSInfo{State: st, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}
