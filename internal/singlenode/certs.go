package singlenode

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// identity is a client certificate the cluster's components authenticate with.
type identity struct {
	file string // pki/<file>.crt and .key
	cn   string
	orgs []string
}

// The identities: the apiserver authorizes each by the name and groups the Node and RBAC
// authorizers expect, so the controllers run with the rights they have in a real cluster.
var identities = []identity{
	{"admin", "guardrail-cluster-admin", []string{"system:masters"}},
	{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}},
	{"controller-manager", "system:kube-controller-manager", nil},
	{"scheduler", "system:kube-scheduler", nil},
	{"kubelet", "system:node:" + NodeName, []string{"system:nodes"}},
	{"kube-proxy", "system:kube-proxy", nil},
	{"coredns", "system:coredns", nil},
}

// writePKI creates, once per state directory, the cluster CA, the apiserver's serving
// certificate (valid for the host's loopback forward, the node address and the kubernetes
// Service), the service-account signing key and one client certificate per identity.
func (l Layout) writePKI() error {
	if _, err := os.Stat(l.pki("ca.crt")); err == nil {
		return nil
	}
	if err := os.MkdirAll(l.path("pki"), 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "guardrail-cluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(file string, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl.SerialNumber = serial()
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().AddDate(10, 0, 0)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(l.pki(file+".crt"), "CERTIFICATE", der); err != nil {
			return err
		}
		return writeKey(l.pki(file+".key"), key)
	}
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc." + ClusterDomain, NodeName},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(NodeIP), net.ParseIP(kubernetesSvc)},
	}
	if err := issue("apiserver", server); err != nil {
		return err
	}
	for _, id := range identities {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: id.cn, Organization: id.orgs},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := issue(id.file, tmpl); err != nil {
			return err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(l.pki("sa.key"), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(l.pki("sa.pub"), "PUBLIC KEY", pub); err != nil {
		return err
	}
	// The controller-manager signs CertificateSigningRequests with the CA.
	if err := writeKey(l.pki("ca.key"), caKey); err != nil {
		return err
	}
	// The CA certificate goes last: its presence says the directory is complete.
	return writePEM(l.pki("ca.crt"), "CERTIFICATE", caDER)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:8]
}
