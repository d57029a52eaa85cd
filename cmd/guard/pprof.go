//go:build guardpprof

package main

import (
	"context"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// A guard built with -tags guardpprof serves net/http/pprof on GUARD_PPROF_ADDR (for
// example 127.0.0.1:6060) when that variable is set, so that the guard can be profiled
// under test/load's harnesses. Release builds carry no profiler and no listener of it.
func init() {
	addr := os.Getenv("GUARD_PPROF_ADDR")
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
}
