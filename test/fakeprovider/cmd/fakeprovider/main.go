// Command fakeprovider serves the fake OpenAI- and Anthropic-compatible model provider of
// the tests as a long-running server (the demo provider of make dev and the cluster suites):
// every chat request is answered by repeating its last message (fakeprovider.Echo), streamed
// in small deltas when asked to stream. It logs nothing about requests.
package main

import (
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

func main() {
	listen := flag.String("listen", ":8080", "address to serve on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("/", fakeprovider.NewHandler(fakeprovider.WithHandler(fakeprovider.Echo)))
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
