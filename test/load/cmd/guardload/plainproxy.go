package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// runPlainProxy is the floor: a plain httputil.ReverseProxy to the provider, configured
// as the guard configures its own upstream transport and server (idle connections per
// host, no response buffering, the same server timeouts), so that the difference between
// it and the guard is the guard's own work.
func runPlainProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guardload plainproxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "Address to listen on.")
	upstream := fs.String("upstream", "", "Base URL of the provider.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*upstream)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("--upstream must be an http URL, got %q", *upstream)
	}
	return serve(ctx, *listen, plainProxy(u))
}

// plainProxy is the floor's handler.
func plainProxy(u *url.URL) http.Handler {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	t.ResponseHeaderTimeout = 10 * time.Minute
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = ""
		},
		Transport:     t,
		FlushInterval: -1,
	}
	// The request body is read whole before the upstream call, as the guard reads it.
	// Handing the server's body to the transport instead races in net/http: the server
	// closes the request body when the response headers are written, and a transport
	// that has not yet read the body's EOF takes the read error as a failed write, closes
	// the upstream connection and cuts the stream being copied ("use of closed network
	// connection" in ReverseProxy's log, "unexpected EOF" at the client).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
		if err != nil {
			http.Error(w, "reading the request failed", http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		rp.ServeHTTP(w, r)
	})
}

// serve listens on addr, prints "ADDR host:port" as the first line of stdout (the parent
// waits for it), and serves h until ctx ends.
func serve(ctx context.Context, addr string, h http.Handler) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if _, err := fmt.Fprintf(os.Stdout, "ADDR %s\n", ln.Addr()); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
