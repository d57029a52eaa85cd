package otlptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// PKI is a certificate authority of a test's own, for collectors that require client
// certificates (NewMTLS): it issues the collector's serving certificate and the clients'.
type PKI struct {
	// CAPEM is the CA's certificate, PEM; Pool holds it.
	CAPEM []byte
	Pool  *x509.CertPool

	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
	serial atomic.Int64
}

// NewPKI makes a CA valid for an hour around now.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "otlptest-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Pool: x509.NewCertPool(), ca: ca, key: key}
	p.Pool.AddCert(ca)
	p.serial.Store(1)
	return p
}

// issue signs a certificate for cn with usage, and returns it and its key as PEM.
func (p *PKI) issue(t testing.TB, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames, tmpl.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
}

// Client issues a client certificate (extended key usage clientAuth) for cn, as PEM.
func (p *PKI) Client(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return p.issue(t, cn, x509.ExtKeyUsageClientAuth)
}

// ServerOnly issues a certificate for cn whose extended key usage is serverAuth alone: one
// a collector refuses as a client's.
func (p *PKI) ServerOnly(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return p.issue(t, cn, x509.ExtKeyUsageServerAuth)
}

// Server issues the collector's serving certificate for 127.0.0.1, ::1 and localhost.
func (p *PKI) Server(t testing.TB) tls.Certificate {
	t.Helper()
	c, k := p.issue(t, "otlptest-collector", x509.ExtKeyUsageServerAuth)
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}
