package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a CA of the test's own and a serving certificate it signed for localhost.
type testCA struct {
	pem  []byte // the CA's certificate
	pool *x509.CertPool
	leaf tls.Certificate
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testCA{
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool: pool,
		leaf: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
}

// server starts an HTTPS server presenting ca's certificate; it counts its requests.
func (ca testCA) server(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.leaf}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &n
}

// proxyListener is an HTTP proxy that answers nothing: it counts the connections it gets.
func proxyListener(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_ = c.Close()
		}
	}()
	return "http://" + ln.Addr().String(), &n
}

// hostURL is srv's URL with the host named "LOCALHOST" rather than 127.0.0.1: net/http's
// environment proxy never proxies a loopback address or "localhost", but it does proxy this
// spelling, which resolves to the same server (host names are case-insensitive).
func hostURL(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	return "https://LOCALHOST:" + port
}

func get(t *testing.T, rt http.RoundTripper, url string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func TestTransportNeverGoesThroughAProxyOfTheEnvironment(t *testing.T) {
	ca := newTestCA(t)
	for _, c := range []struct {
		name string
		vars []string
	}{
		{"upper-case", []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"}},
		{"lower-case", []string{"https_proxy", "http_proxy", "all_proxy"}},
		{"HTTPS_PROXY alone", []string{"HTTPS_PROXY"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxyURL, dialed := proxyListener(t)
			for _, v := range c.vars {
				t.Setenv(v, proxyURL)
			}
			t.Setenv("NO_PROXY", "")
			t.Setenv("no_proxy", "")
			srv, served := ca.server(t)
			for name, tr := range map[string]*http.Transport{"system roots": Transport(nil), "given roots": Transport(ca.pool)} {
				if tr.Proxy != nil {
					t.Errorf("%s: the transport has a Proxy function", name)
				}
			}
			// The premise: net/http's environment proxy (which reads the variables once per
			// process) sends this URL to a proxy.
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, hostURL(t, srv), nil)
			if err != nil {
				t.Fatal(err)
			}
			if u, err := http.ProxyFromEnvironment(req); err != nil || u == nil {
				t.Fatalf("http.ProxyFromEnvironment(%s) = %v, %v: want a proxy, or the test proves nothing", req.URL, u, err)
			}
			if err := get(t, Transport(ca.pool), hostURL(t, srv)); err != nil {
				t.Fatalf("GET through the transport: %v", err)
			}
			if served.Load() != 1 || dialed.Load() != 0 {
				t.Errorf("the server got %d requests and the proxy %d connections, want 1 and 0", served.Load(), dialed.Load())
			}
		})
	}
}

func TestTransportTrustsTheGivenRootsNotSSLCertFile(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "tenant-ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile)
	t.Setenv("SSL_CERT_DIR", dir)
	srv, served := ca.server(t)

	if err := get(t, Transport(ca.pool), srv.URL); err != nil {
		t.Fatalf("with the CA given: %v", err)
	}
	err := get(t, Transport(nil), srv.URL)
	if runtime.GOOS == "linux" {
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Errorf("with the system roots and SSL_CERT_FILE naming the CA: %v, want an unknown authority", err)
		}
		// Read again now, whatever was read earlier in this process.
		pool, _ := loadRoots(bundleFiles, caDirs)
		if _, err := ca.leafCert(t).Verify(x509.VerifyOptions{Roots: pool}); err == nil {
			t.Error("the system roots read with SSL_CERT_FILE and SSL_CERT_DIR set trust the CA they name")
		}
	} else if err == nil {
		t.Errorf("with the platform verifier and SSL_CERT_FILE naming the CA: trusted")
	}
	if served.Load() != 1 {
		t.Errorf("the server got %d requests, want the trusted one only", served.Load())
	}
}

func (ca testCA) leafCert(t *testing.T) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(ca.leaf.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadRootsReadsTheFirstBundleAndEveryFileOfTheDirectories(t *testing.T) {
	a, b, c, d := newTestCA(t), newTestCA(t), newTestCA(t), newTestCA(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("bundle-a.pem", a.pem)
	second := write("bundle-b.pem", b.pem)
	write("certs/c.pem", c.pem)
	write("certs/d.pem", d.pem)
	write("certs/not-a-cert", []byte("hello"))
	if err := os.Mkdir(filepath.Join(dir, "certs", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")

	for _, tc := range []struct {
		name        string
		files, dirs []string
		trusted     []testCA
		untrusted   []testCA
		wantErr     bool
	}{
		{"the first bundle that exists, only", []string{missing, first, second}, nil, []testCA{a}, []testCA{b, c, d}, false},
		{"every file of the directories", nil, []string{missing, filepath.Join(dir, "certs")}, []testCA{c, d}, []testCA{a, b}, false},
		{"bundle and directories", []string{second}, []string{filepath.Join(dir, "certs")}, []testCA{b, c, d}, []testCA{a}, false},
		{"nothing found: an empty pool and an error", []string{missing}, []string{missing}, nil, []testCA{a, b, c, d}, true},
		{"no certificate in the files: an error", []string{filepath.Join(dir, "certs", "not-a-cert")}, nil, nil, []testCA{a}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := loadRoots(tc.files, tc.dirs)
			if (err != nil) != tc.wantErr {
				t.Errorf("err %v, want an error: %v", err, tc.wantErr)
			}
			if pool == nil {
				t.Fatal("a nil pool (which would mean the default roots)")
			}
			for _, ca := range tc.trusted {
				if _, err := ca.leafCert(t).Verify(x509.VerifyOptions{Roots: pool}); err != nil {
					t.Errorf("a CA that should be read is not trusted: %v", err)
				}
			}
			for _, ca := range tc.untrusted {
				if _, err := ca.leafCert(t).Verify(x509.VerifyOptions{Roots: pool}); err == nil {
					t.Error("a CA that should not be read is trusted")
				}
			}
		})
	}
}

func TestSystemRootsAreReadFromTheFixedLocations(t *testing.T) {
	pool, err := SystemRoots()
	if runtime.GOOS != "linux" {
		if pool != nil || err != nil {
			t.Errorf("SystemRoots = %v, %v, want nil, nil (the platform verifier)", pool, err)
		}
		return
	}
	if pool == nil {
		t.Fatal("a nil pool on Linux: crypto/x509 would read SSL_CERT_FILE")
	}
	if err != nil {
		t.Skipf("this machine has no CA bundle at the standard locations: %v", err)
	}
	// With the environment naming no CA (the guard's), crypto/x509 reads the same fixed
	// locations, lazily: the transport leaves the pool to it.
	t.Setenv("SSL_CERT_FILE", "")
	t.Setenv("SSL_CERT_DIR", "")
	if tr := Transport(nil); tr.TLSClientConfig.RootCAs != nil {
		t.Error("Transport(nil) loaded the system roots at once although crypto/x509 would read the same ones lazily")
	}
	// With the environment naming a CA, the transport verifies against the fixed ones.
	t.Setenv("SSL_CERT_FILE", filepath.Join(t.TempDir(), "tenant-ca.pem"))
	if tr := Transport(nil); tr.TLSClientConfig.RootCAs != pool {
		t.Error("Transport(nil) with SSL_CERT_FILE set does not verify against SystemRoots")
	}
	if err := SystemRootsPresent(); err != nil {
		t.Errorf("SystemRootsPresent: %v, though SystemRoots read a bundle", err)
	}
}
