// Package tlsreload is a server's TLS certificate read from a certificate and a key file
// that are replaced in place while it runs, as the kubelet replaces a Secret's keys when
// cert-manager renews a certificate. The guard (cmd/guard, HTTPS) and the Envoy external
// processor (cmd/guard-extproc, gRPC over TLS) serve with it. It links only the standard
// library: the guard runs in every injected pod (runtime/linkcheck_test.go).
package tlsreload

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultEvery is how often, at most, a TLS handshake reads the files again: the kubelet
// takes up to a minute or so to project a renewed Secret, so a renewal reaches new
// connections within seconds of that.
const DefaultEvery = 10 * time.Second

// Certificate is a server's certificate: the pair in --tls-cert-file and
// --tls-key-file, read again at a TLS handshake once the last read is older than every
// (tlsReloadEvery), and replaced when their content changed and still makes a valid pair. In a pod
// the files are a Secret's keys, which the kubelet replaces in place (an atomic swap of
// the volume's ..data link) when cert-manager renews the certificate: new connections get
// the new certificate without a restart, open ones keep theirs. A pair that does not
// parse, or whose key is not the certificate's, is refused and the last good one kept;
// it is logged once, with the files' names and the parser's error, never their content.
type Certificate struct {
	certFile, keyFile string
	every             time.Duration
	log               *slog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	loaded  [sha256.Size]byte // the digest of the files' contents in use
	refused [sha256.Size]byte // of the last contents refused, logged once
	readErr string            // the last read error logged
	checked time.Time
}

// New reads the pair once; it fails when the pair is not valid, so that the server does
// not start without its certificate. every is the least time between two reads
// (DefaultEvery; 0 reads the files at every handshake). what names the server in the
// log ("gRPC", "HTTPS").
func New(certFile, keyFile string, every time.Duration, log *slog.Logger, what string) (*Certificate, error) {
	r := &Certificate{certFile: certFile, keyFile: keyFile, every: every, log: log, now: time.Now}
	sum, certPEM, keyPEM, err := r.read()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	clear(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file and --tls-key-file: %w", err)
	}
	r.cert, r.loaded, r.checked = &cert, sum, r.now()
	log.Info("Serving "+what+" over TLS", describe(&cert, certFile)...)
	return r, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= r.every {
		r.checked = now
		r.reload()
	}
	return r.cert, nil
}

// reload reads the files and takes their pair when it changed and is valid. Read between
// two writes (the kubelet swaps both files at once, but a copy by hand may not), a pair
// may not match: it is read once more before it is refused.
func (r *Certificate) reload() {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		sum, certPEM, keyPEM, rerr := r.read()
		if rerr != nil {
			if rerr.Error() != r.readErr {
				r.readErr = rerr.Error()
				r.log.Warn("Cannot read the TLS certificate or key; the previous pair is kept", "error", rerr.Error())
			}
			return
		}
		r.readErr = ""
		if sum == r.loaded || sum == r.refused {
			clear(keyPEM)
			return
		}
		var cert tls.Certificate
		cert, err = tls.X509KeyPair(certPEM, keyPEM)
		clear(keyPEM)
		if err == nil {
			r.cert, r.loaded = &cert, sum
			r.log.Info("Reloaded the TLS certificate", describe(&cert, r.certFile)...)
			return
		}
		if attempt == 1 {
			r.refused = sum
		}
	}
	r.log.Warn("The TLS certificate or key changed and is not a valid pair; the previous pair is kept until they do",
		"certFile", r.certFile, "keyFile", r.keyFile, "error", err.Error())
}

// read returns the files' contents and a digest of both.
func (r *Certificate) read() (sum [sha256.Size]byte, certPEM, keyPEM []byte, err error) {
	if certPEM, err = os.ReadFile(r.certFile); err != nil {
		return sum, nil, nil, fmt.Errorf("--tls-cert-file: %w", unwrapPath(err))
	}
	if keyPEM, err = os.ReadFile(r.keyFile); err != nil {
		return sum, nil, nil, fmt.Errorf("--tls-key-file: %w", unwrapPath(err))
	}
	h := sha256.New()
	h.Write(certPEM)
	h.Write([]byte{0})
	h.Write(keyPEM)
	copy(sum[:], h.Sum(nil))
	return sum, certPEM, keyPEM, nil
}

// unwrapPath keeps a file error's path and reason (os.ReadFile's errors quote no content).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// describe names a certificate in the log: its subject's names, serial number and
// validity; nothing of the key.
func describe(cert *tls.Certificate, file string) []any {
	leaf := cert.Leaf
	if leaf == nil && len(cert.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	if leaf == nil {
		return []any{"certFile", file}
	}
	return []any{"certFile", file, "subject", leaf.Subject.CommonName, "dnsNames", leaf.DNSNames,
		"serial", fmt.Sprintf("%x", leaf.SerialNumber), "notAfter", leaf.NotAfter.UTC().Format(time.RFC3339),
		"chain", len(cert.Certificate), "selfSigned", bytes.Equal(leaf.RawIssuer, leaf.RawSubject)}
}

// Config is a server's TLS configuration serving r's certificate, TLS 1.2 at least. The
// caller sets NextProtos: an http.Server adds h2 and http/1.1 itself, gRPC h2.
func (r *Certificate) Config() *tls.Config {
	return &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS12}
}
