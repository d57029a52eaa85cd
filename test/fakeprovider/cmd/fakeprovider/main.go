// Command fakeprovider serves the fake OpenAI- and Anthropic-compatible model provider of
// the tests as a long-running server (the demo provider of make dev and the cluster suites):
// every chat request is answered by repeating its last message (fakeprovider.Echo), streamed
// in small deltas when asked to stream. It logs nothing about requests.
//
// With --keys-file it plays a provider that checks API keys: a request whose
// Authorization: Bearer or x-api-key is not one of the file's lines (read again on every
// request, so a test can rotate them) is answered 401 in the provider's error shape, and
// GET /last-key answers a fingerprint (the first 12 hex digits of its SHA-256) of the last
// key it accepted, never the key.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

func main() {
	listen := flag.String("listen", ":8080", "address to serve on")
	keysFile := flag.String("keys-file", "", "file of the API keys accepted, one per line; empty accepts any request")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	var provider http.Handler = fakeprovider.NewHandler(fakeprovider.WithHandler(fakeprovider.Echo))
	if *keysFile != "" {
		k := &keyCheck{file: *keysFile, next: provider}
		mux.HandleFunc("GET /last-key", k.serveLast)
		provider = k
	}
	mux.Handle("/", provider)
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
		<-sigs
		_ = srv.Close()
	}()
	log.Printf("fake provider serving on %s", *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// keyCheck answers 401 to a request without an accepted key and remembers the
// fingerprint of the last key it accepted.
type keyCheck struct {
	file string
	next http.Handler

	mu   sync.Mutex
	last string
}

func (k *keyCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, anthropic := r.Header.Get("X-Api-Key"), true
	if key == "" {
		key, anthropic = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), false
	}
	raw, err := os.ReadFile(k.file)
	if err != nil || key == "" || !slices.Contains(strings.Fields(string(raw)), key) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		if anthropic {
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
		} else {
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
		}
		return
	}
	sum := sha256.Sum256([]byte(key))
	k.mu.Lock()
	k.last = hex.EncodeToString(sum[:6])
	k.mu.Unlock()
	k.next.ServeHTTP(w, r)
}

func (k *keyCheck) serveLast(w http.ResponseWriter, _ *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, _ = w.Write([]byte(k.last))
}
