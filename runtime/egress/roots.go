package egress

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// SystemRoots returns the system's CA certificates, read once, from fixed locations only:
// the first CA bundle file of bundleFiles that exists, and every file of caDirs (the
// locations crypto/x509 reads on Linux when SSL_CERT_FILE and SSL_CERT_DIR are unset).
// The error says that no certificate was found there; the pool, empty then, trusts no
// server. Outside Linux the pool is nil and crypto/x509's own choice applies: the
// platform's verifier on macOS and Windows (which the environment does not configure); on
// other systems the guard's environment is cleared of SSL_CERT_FILE and SSL_CERT_DIR before
// it starts (cmd/guard). The pool is shared by every caller: add nothing to it.
func SystemRoots() (*x509.CertPool, error) { return systemRoots() }

var systemRoots = sync.OnceValues(func() (*x509.CertPool, error) {
	if bundleFiles == nil && caDirs == nil {
		return nil, nil
	}
	return loadRoots(bundleFiles, caDirs)
})

// SystemRootsPresent says whether SystemRoots would find a CA certificate file, without
// reading one: a guard warns at start when there is none, and reads the bundle only when
// it first verifies a server (Transport).
func SystemRootsPresent() error {
	if bundleFiles == nil && caDirs == nil {
		return nil
	}
	for _, f := range bundleFiles {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			return nil
		}
	}
	for _, d := range caDirs {
		if entries, err := os.ReadDir(d); err == nil && len(entries) > 0 {
			return nil
		}
	}
	return fmt.Errorf("no CA certificate in %s or %s", strings.Join(bundleFiles, ", "), strings.Join(caDirs, ", "))
}

// maxCAFileBytes bounds each file read as CA certificates: a system bundle is about
// 200 KiB.
const maxCAFileBytes = 8 << 20

// loadRoots reads the first of files that exists and every regular file (or link to one)
// of dirs into a pool; a certificate found twice is kept once.
func loadRoots(files, dirs []string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	found := false
	var errs []error
	for _, f := range files {
		b, err := readCAFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found = pool.AppendCertsFromPEM(b) || found
		break
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			// A link to a directory, or one that leads nowhere, reads as an error: skipped.
			if b, err := readCAFile(filepath.Join(d, e.Name())); err == nil {
				found = pool.AppendCertsFromPEM(b) || found
			}
		}
	}
	if found {
		return pool, nil
	}
	err := fmt.Errorf("no CA certificate in %s or %s", strings.Join(files, ", "), strings.Join(dirs, ", "))
	if len(errs) > 0 {
		err = fmt.Errorf("%w: %w", err, errors.Join(errs...))
	}
	return pool, err
}

func readCAFile(path string) ([]byte, error) {
	f, err := os.Open(path) //nolint:gosec // a fixed system location, or a file of one
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxCAFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxCAFileBytes)
	}
	return io.ReadAll(f)
}
