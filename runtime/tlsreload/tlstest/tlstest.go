// Package tlstest issues test certificates and lays them out as the kubelet projects a
// kubernetes.io/tls Secret, for the tests of the servers that take their certificate from
// runtime/tlsreload. Tests only: no server links it.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA issues serving certificates, as cert-manager's CA issuer would.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// Pool holds Cert alone: a client's RootCAs.
	Pool *x509.CertPool
}

// NewCA returns a self-signed CA valid for an hour around now.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, Key: key, Pool: pool}
}

// Issue returns a serving certificate for dnsNames (the first is its subject; no IP
// address), and its key, in PEM.
func (ca *CA) Issue(t testing.TB, serial int64, dnsNames ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cn := ""
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		DNSNames:  dnsNames,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// SecretVolume lays files out in Dir as the kubelet projects a Secret: each key a link
// through ..data to a timestamped directory, and an update an atomic rename of ..data.
type SecretVolume struct {
	T   testing.TB
	Dir string
	n   int
}

// Write projects files (name to content) as the volume's new contents.
func (v *SecretVolume) Write(files map[string][]byte) {
	v.T.Helper()
	v.n++
	ts := filepath.Join(v.Dir, fmt.Sprintf("..2026_01_01_00_00_%02d", v.n))
	if err := os.Mkdir(ts, 0o750); err != nil {
		v.T.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o444); err != nil { //nolint:gosec // a test's files
			v.T.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(v.Dir, name)); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(v.Dir, name)); err != nil {
				v.T.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(v.Dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		v.T.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.Dir, "..data")); err != nil {
		v.T.Fatal(err)
	}
}
