package main

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
)

// startTracing sets up the guard's OpenTelemetry tracing from the standard OTEL_*
// variables (runtime/tracing, docs/tracing.md). It returns nil, off, when no OTLP endpoint
// is set. A setting it cannot use is logged and tracing stays off: the guard is on the
// path of the app's traffic, which a tracing mistake must not stop. The log names the
// collector's host, never its headers.
func startTracing(o options, log *slog.Logger) *tracing.Tracer {
	cfg, err := tracing.FromEnv(os.Getenv)
	if err != nil {
		log.Error("Tracing is off: its settings are invalid", "error", err.Error())
		return nil
	}
	for _, w := range cfg.Warnings {
		log.Warn("Tracing: " + w)
	}
	if !cfg.Enabled() {
		return nil
	}
	tr, err := tracing.Setup(context.Background(), cfg, tracing.Options{Pod: o.pod, Namespace: o.namespace,
		OnError: exportErrors(log, time.Minute)})
	if err != nil {
		log.Error("Tracing is off: it could not be set up", "error", err.Error())
		return nil
	}
	host := ""
	if u, err := url.Parse(cfg.Endpoint); err == nil {
		host = u.Host
	}
	log.Info("Tracing on", "collector", host, "protocol", cfg.Protocol, "sampler", cfg.Sampler, "samplerArg", cfg.SamplerArg)
	return tr
}

// tracingHeaders returns how the guard takes the OTLP headers the control plane delivers
// with its snapshot (runtime/controlplane Tracing): into tr's exporter, in memory only,
// when they are for the endpoint the guard exports to. A change of state is logged once,
// with the number of headers, never their names or values. A guard without tracing
// ignores them.
func tracingHeaders(tr *tracing.Tracer, log *slog.Logger) func(endpoint string, h map[string]string) {
	var mu sync.Mutex
	logged := "none"
	return func(endpoint string, h map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		if tr == nil {
			return
		}
		var state string
		err := tr.SetHeaders(endpoint, h)
		switch {
		case err != nil:
			state = err.Error()
		case len(h) == 0:
			state = "none"
		default:
			state = "set " + strconv.Itoa(len(h))
		}
		if state == logged {
			return
		}
		logged = state
		switch {
		case err != nil:
			log.Warn("Tracing: exports go without the control plane's OTLP headers", "error", err.Error())
		case len(h) == 0:
			log.Info("Tracing: no OTLP headers from the control plane")
		default:
			log.Info("Tracing: the control plane's OTLP headers go with every export", "headers", len(h))
		}
	}
}

// tracingClientCertificate returns how the guard takes the client certificate the control
// plane delivers with its snapshot (runtime/controlplane ClientCertificate): into tr's
// exporter, in memory only, when it is for the endpoint the guard exports to
// (tracing.Tracer.SetClientTLS); KeepLast keeps the one it has. A change of state is
// logged once, without the certificate, its key or its CA. A guard without tracing
// ignores it.
func tracingClientCertificate(tr *tracing.Tracer, log *slog.Logger) func(endpoint string, c *controlplane.ClientCertificate) {
	var mu sync.Mutex
	logged := "none"
	return func(endpoint string, c *controlplane.ClientCertificate) {
		mu.Lock()
		defer mu.Unlock()
		if tr == nil {
			return
		}
		var ct *tracing.ClientTLS
		if c != nil {
			ct = &tracing.ClientTLS{Certificate: []byte(c.Certificate), Key: []byte(c.Key), CA: []byte(c.CA), KeepLast: c.KeepLast}
		}
		err := tr.SetClientTLS(endpoint, ct)
		var state string
		switch {
		case err != nil && tr.KeepsClientTLS(endpoint):
			state = "kept: " + err.Error()
		case err != nil:
			state = err.Error()
		case c == nil:
			state = "none"
		case c.KeepLast && tr.KeepsClientTLS(endpoint):
			state = "kept"
		case c.KeepLast:
			state = "unusable"
		default:
			state = "set " + strconv.FormatBool(c.CA != "")
		}
		if state == logged {
			return
		}
		logged = state
		switch {
		case err != nil && tr.KeepsClientTLS(endpoint):
			log.Warn("Tracing: the control plane's client certificate cannot be used; exports keep the last one", "error", err.Error())
		case err != nil:
			log.Warn("Tracing: exports go without the control plane's client certificate", "error", err.Error())
		case c == nil:
			log.Info("Tracing: no client certificate from the control plane")
		case c.KeepLast && tr.KeepsClientTLS(endpoint):
			log.Warn("Tracing: the platform's client certificate cannot be used now; exports keep the last one")
		case c.KeepLast:
			log.Warn("Tracing: the platform's client certificate cannot be used now; exports go without one")
		default:
			log.Info("Tracing: exports present the control plane's client certificate", "collectorCA", c.CA != "")
		}
	}
}

// stopTracing exports the spans still buffered, for at most five seconds.
func stopTracing(tr *tracing.Tracer, log *slog.Logger) {
	if tr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		log.Warn("Tracing: the last spans were not all exported", "error", err.Error())
	}
}

// exportErrors logs export failures at most once per interval, with how many were not
// logged: a collector that is down fails every batch.
func exportErrors(log *slog.Logger, interval time.Duration) func(error) {
	var mu sync.Mutex
	var last time.Time
	suppressed := 0
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Sub(last) >= interval {
			log.Warn("Tracing: spans not exported", "error", err.Error(), "failuresNotLogged", suppressed)
			last, suppressed = now, 0
			return
		}
		suppressed++
	}
}
