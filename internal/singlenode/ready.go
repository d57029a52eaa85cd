package singlenode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// poll calls f every 100 ms until it succeeds or ctx ends; the error is f's last.
func poll(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func httpReady(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		return poll(ctx, func() error { return get(ctx, http.DefaultClient, url) })
	}
}

func socketReady(path string) func(context.Context) error {
	return func(ctx context.Context) error {
		return poll(ctx, func() error {
			d := net.Dialer{Timeout: time.Second}
			c, err := d.DialContext(ctx, "unix", path)
			if err == nil {
				_ = c.Close()
			}
			return err
		})
	}
}

// apiReady waits for the apiserver's /readyz, asked as the cluster admin.
func (s *supervisor) apiReady(ctx context.Context) error {
	c, err := s.l.adminHTTPClient()
	if err != nil {
		return err
	}
	return poll(ctx, func() error {
		return get(ctx, c, fmt.Sprintf("https://%s:%d/readyz", NodeIP, apiserverPort))
	})
}

func (l Layout) adminHTTPClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(l.pki("admin.crt"), l.pki("admin.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(l.pki("ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}, nil
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
