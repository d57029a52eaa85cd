// Command guard is the guardrail sidecar: a streaming proxy for the OpenAI and Anthropic
// APIs that enforces Guardrails on every call. It runs beside an app
// in its pod, or standalone with a policy file:
//
//	guard --policy-file config/samples/pii-secrets-redaction.yaml \
//	      --openai-upstream https://api.openai.com --listen 127.0.0.1:8000
//
// or, in a pod the operator injected it into, subscribed to the operator's control plane:
//
//	guard --control-plane https://guardrail-control-plane.guardrail-system.svc:9444 \
//	      --token-file /var/run/secrets/guardrail.dev/token/token \
//	      --ca-file /var/run/secrets/guardrail.dev/ca/ca.crt --snapshot-dir /var/run/guardrail/snapshot
//
// and the app points its base URL at it (OPENAI_BASE_URL=http://127.0.0.1:8000/v1,
// ANTHROPIC_BASE_URL=http://127.0.0.1:8000). With --mcp-upstream NAME=URL (repeatable) it
// also fronts MCP servers at /mcp/NAME on the same listener (runtime/mcp). With
// --provider=NAME (keyless apps, README.md) it sends a family's calls to that ModelProvider
// with the credential the control plane delivered. An admin listener serves /healthz, /readyz
// (ready once a policy is loaded) and Prometheus /metrics. With --tls-cert-file and
// --tls-key-file the proxy serves HTTPS (HTTP/1.1, and HTTP/2 by ALPN) instead of
// cleartext HTTP: a SharedGuard with spec.tls renders them (docs/shared-guard.md), and
// the pair is read again when its files change (runtime/tlsreload), so a renewed
// certificate reaches new connections without a restart; a sidecar, on loopback, never
// takes them. The admin listener serves cleartext HTTP either way. It takes no proxy, CA or debug
// setting from its environment (runtime/guardproc; README.md says which variables it drops).
//
// Both servers bound what a client can hold. The proxy: request headers within
// --read-header-timeout, each read of a request body within --read-idle-timeout (a body
// that keeps coming is read to its end, however large and slow), each write within
// --write-idle-timeout, and keep-alive connections closed after --idle-timeout. It has no
// whole-request read or write timeout, which would cut streams that last as long as the
// model writes. The admin listener, reachable from the cluster, has short fixed timeouts
// and serves at most 64 connections at once (runtime/guardproc.AdminLimits).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/guardproc"
	"github.com/guardrail-dev/guardrail-operator/runtime/mcp"
	mcpupstream "github.com/guardrail-dev/guardrail-operator/runtime/mcp/upstream"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/tlsreload"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
)

type options struct {
	listen, admin                string
	tlsCert, tlsKey              string
	tlsReloadEvery               time.Duration
	openaiUpstream, anthropicURL string
	geminiURL                    string
	policyFile                   string
	controlPlane, tokenFile      string
	caFile, snapshotDir          string
	policyInterval               time.Duration
	decisionInterval             time.Duration
	decisionLog                  string
	passThrough                  string
	maxBody                      int64
	readHeaderTimeout, idle      time.Duration
	readIdle, writeIdle, grace   time.Duration
	pod, namespace, podLabels    string
	logLevel                     string
	mcpUpstreams                 []mcpupstream.Upstream
	providers                    []string
	audit                        auditFlags
}

func main() {
	// First of all: a guard started with variables it must not honour (runtime/guardproc)
	// starts again without them, before it reads anything or holds any credential.
	guardproc.ExitOnIgnoredEnv("Guard")
	o := options{tlsReloadEvery: tlsreload.DefaultEvery}
	fs := flag.NewFlagSet("guard", flag.ExitOnError)
	fs.StringVar(&o.listen, guardv1.FlagListen, "127.0.0.1:8000", "Address the proxy listens on (the app's base URL points here).")
	fs.StringVar(&o.admin, guardv1.FlagAdminListen, ":9090", "Address of /healthz, /readyz and /metrics.")
	fs.StringVar(&o.tlsCert, flagTLSCertFile, "", "PEM certificate chain (leaf first) the proxy presents: it serves HTTPS on --listen "+
		"(with --"+flagTLSKeyFile+"; read again when the files change). Cleartext HTTP without.")
	fs.StringVar(&o.tlsKey, flagTLSKeyFile, "", "PEM private key of --"+flagTLSCertFile+".")
	fs.StringVar(&o.openaiUpstream, guardv1.FlagOpenAIUpstream, "https://api.openai.com", "Base URL of the OpenAI-compatible provider.")
	fs.StringVar(&o.anthropicURL, guardv1.FlagAnthropicUpstream, "https://api.anthropic.com", "Base URL of the Anthropic provider.")
	fs.StringVar(&o.geminiURL, guardv1.FlagGeminiUpstream, proxy.DefaultGeminiUpstream, "Base URL of the Gemini API.")
	fs.StringVar(&o.policyFile, "policy-file", "", "YAML file of Classifier and Guardrail manifests to enforce; watched for changes.")
	fs.StringVar(&o.controlPlane, guardv1.FlagControlPlane, "", "Base URL (https) of the operator's control plane to "+
		"subscribe to for this pod's policy; exclusive with --policy-file.")
	fs.StringVar(&o.tokenFile, guardv1.FlagTokenFile, "/var/run/secrets/guardrail.dev/token/token",
		"Projected service-account token (audience "+guardv1.Audience+") presented to the control plane.")
	fs.StringVar(&o.caFile, guardv1.FlagCAFile, "/var/run/secrets/guardrail.dev/ca/ca.crt",
		"PEM bundle the control plane's serving certificate must chain to.")
	fs.StringVar(&o.snapshotDir, guardv1.FlagSnapshotDir, "", "Directory where the last good policy snapshot from the "+
		"control plane is persisted (mode 0600) and loaded at start when the control plane is unreachable; empty keeps none.")
	fs.DurationVar(&o.policyInterval, "policy-interval", time.Second, "How often the policy file is checked for changes.")
	fs.DurationVar(&o.decisionInterval, "decision-interval", 10*time.Second, "How often decision counts are sent to the "+
		"control plane (and once more at shutdown); with --control-plane only.")
	fs.StringVar(&o.decisionLog, "decision-log", "", "Write one JSON line per decision to this file (- for stdout). Records hold no content.")
	o.audit.register(fs)
	fs.StringVar(&o.passThrough, "pass-through", "", "Comma-separated POST paths forwarded unguarded (every other unknown POST is refused).")
	fs.Int64Var(&o.maxBody, "max-body-bytes", 16<<20, "Largest request body accepted (413 beyond).")
	fs.DurationVar(&o.readHeaderTimeout, "read-header-timeout", 10*time.Second, "Time allowed to read a request's headers.")
	fs.DurationVar(&o.idle, "idle-timeout", 2*time.Minute, "Keep-alive idle timeout of client connections.")
	fs.DurationVar(&o.readIdle, "read-idle-timeout", 30*time.Second, "A client that sends nothing of its request body for this long (up to 9/8 of it) is dropped.")
	fs.DurationVar(&o.writeIdle, "write-idle-timeout", 2*time.Minute, "A client that accepts no bytes for this long (up to 9/8 of it) is dropped.")
	fs.DurationVar(&o.grace, "shutdown-grace", 30*time.Second, "Time in-flight requests and streams get to finish on shutdown.")
	fs.StringVar(&o.pod, "pod", os.Getenv("POD_NAME"), "Pod name recorded in decisions.")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "Enforce only the guardrails of this namespace (all when empty).")
	fs.StringVar(&o.podLabels, "pod-labels", os.Getenv("POD_LABELS"), "The pod's labels (k=v,...): enforce only the guardrails selecting them (all when empty).")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error.")
	fs.Func(guardv1.FlagMCPUpstream, "An MCP server to front, NAME=URL (repeatable): served on the proxy listener at /mcp/NAME with the "+
		"streamable HTTP transport, its tool calls, results and tool lists judged by the same guardrails.", func(v string) error {
		u, err := mcpupstream.Parse(v)
		if err == nil {
			o.mcpUpstreams = append(o.mcpUpstreams, u)
		}
		return err
	})
	fs.Func(guardv1.FlagProvider, "A ModelProvider NAME this pod's calls of its API family go to, with its credential "+
		"(repeatable, one per API family; keyless apps): its URL and credential come from the control plane's snapshot. "+
		"A client's own API key is then refused, and calls are refused (503 provider_unavailable) while a named "+
		"provider is not in the snapshot. Needs --"+guardv1.FlagControlPlane+".", func(v string) error {
		if err := validProviderName(v, o.providers); err != nil {
			return err
		}
		o.providers = append(o.providers, v)
		return nil
	})
	_ = fs.Parse(os.Args[1:])

	log, err := guardproc.Start(o.logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "guard:", err) //nolint:forbidigo // before the logger exists
		os.Exit(2)
	}
	if err := run(o, log); err != nil {
		log.Error("Guard stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(o options, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, o, log)
}

// runContext runs the guard until ctx is done (a signal) or a listener fails.
func runContext(ctx context.Context, o options, log *slog.Logger) error {
	certs, err := serverCertificate(o, log) // tls.go: nil without --tls-cert-file
	if err != nil {
		return err
	}
	policySrc := guardproc.PolicySource{File: o.policyFile, Interval: o.policyInterval, ControlPlane: o.controlPlane,
		TokenFile: o.tokenFile, CAFile: o.caFile, SnapshotDir: o.snapshotDir, DecisionInterval: o.decisionInterval}
	if err := policySrc.Validate(); err != nil {
		return err
	}
	if len(o.providers) > 0 && o.controlPlane == "" {
		return fmt.Errorf("--%s needs --%s: a model provider's credential comes only from the control plane",
			guardv1.FlagProvider, guardv1.FlagControlPlane)
	}
	if err := mcpupstream.Unique(o.mcpUpstreams); err != nil {
		return fmt.Errorf("--%s: %w", guardv1.FlagMCPUpstream, err)
	}
	openaiURL, err := parseUpstream("--openai-upstream", o.openaiUpstream)
	if err != nil {
		return err
	}
	anthropicURL, err := parseUpstream("--anthropic-upstream", o.anthropicURL)
	if err != nil {
		return err
	}
	geminiURL, err := parseUpstream("--gemini-upstream", o.geminiURL)
	if err != nil {
		return err
	}
	podLabels, err := guardproc.PodLabels(o.podLabels)
	if err != nil {
		return err
	}
	decisions, closeDecisions, err := guardproc.OpenDecisionLog(o.decisionLog)
	if err != nil {
		return err
	}
	defer closeDecisions()
	tel := telemetry.New(decisions)
	passThrough := guardproc.PassThrough(o.passThrough)
	tracer := startTracing(o, log) // tracing.go: nil unless OTEL_EXPORTER_OTLP_ENDPOINT is set
	defer stopTracing(tracer, log)
	policySrc.TracingHeaders = tracingHeaders(tracer, log)                     // the collector's headers, from the control plane
	policySrc.TracingClientCertificate = tracingClientCertificate(tracer, log) // and its client certificate
	px := proxy.New(proxy.Config{
		OpenAIUpstream: openaiURL, AnthropicUpstream: anthropicURL, GeminiUpstream: geminiURL, PassThrough: passThrough,
		MaxBodyBytes: o.maxBody, ReadIdleTimeout: o.readIdle, WriteIdleTimeout: o.writeIdle, Pod: o.pod, Namespace: o.namespace,
		PodLabels: podLabels, Providers: o.providers, Telemetry: tel, Log: log, Tracer: tracer,
	})

	// With the control plane, decisions go back over the same channel.
	reporter := policySrc.Reporter(ctx, tel, log)
	if err := startAudit(o, tel, reporter, log); err != nil {
		return err
	}
	policySrc.Run(ctx, tel, px.Apply, log)

	// An idle guard returns the memory its last requests used (guardproc.IdleRelease).
	idle := &guardproc.IdleRelease{}
	idle.RegisterMetrics(tel.Registry)
	go idle.Run(ctx)
	srv := &http.Server{
		Handler:           idle.Wrap(routes(px, mcpHandler(o, px, tel, tracer, log))),
		ReadHeaderTimeout: o.readHeaderTimeout,
		IdleTimeout:       o.idle,
		// No ReadTimeout or WriteTimeout: streams last as long as the model writes. The
		// proxy bounds each read of a body and each write instead (--read-idle-timeout,
		// --write-idle-timeout); a ReadTimeout would also stay set while the handler runs
		// and cancel the request when it passed.
	}
	var adminRefused atomic.Int64
	guardproc.RegisterAdminMetrics(tel.Registry, &adminRefused)
	adminSrv := guardproc.NewAdminServer(guardproc.AdminMux(px, tel), guardproc.DefaultAdminLimits)

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.listen)
	if err != nil {
		return err
	}
	adminLn, err := lc.Listen(ctx, "tcp", o.admin)
	if err != nil {
		return err
	}
	adminLn = guardproc.CapConns(adminLn, guardproc.DefaultAdminLimits.MaxConns, &adminRefused)
	log.Info("Guard listening", "proxy", ln.Addr().String(), "tls", certs != nil, "admin", adminLn.Addr().String(),
		"openaiUpstream", openaiURL.Redacted(), "anthropicUpstream", anthropicURL.Redacted(), "geminiUpstream", geminiURL.Redacted())
	errc := make(chan error, 2)
	go func() { errc <- serveProxy(srv, ln, certs) }()
	go func() { errc <- adminSrv.Serve(adminLn) }()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("Shutting down; draining in-flight requests", "grace", o.grace.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("Grace period over; closing the streams still open")
		err = srv.Close()
	}
	_ = adminSrv.Shutdown(shutdownCtx)
	// Every request has ended: the last decisions go out before the guard does.
	guardproc.FlushDecisions(reporter, log)
	return err
}

// routes serves the MCP front under /mcp/ and the model proxy everywhere else. /mcp/ is
// the guard's own whatever the flags: a name no --mcp-upstream configures is answered 404
// there, never passed to a model provider.
func routes(px *proxy.Proxy, mcpH *mcp.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, mcpupstream.PathPrefix) {
			mcpH.ServeHTTP(w, r)
			return
		}
		px.ServeHTTP(w, r)
	})
}

// mcpHandler fronts the --mcp-upstream servers, judging with the proxy's policy; tr (nil:
// off) traces what it judges.
func mcpHandler(o options, px *proxy.Proxy, tel *telemetry.Telemetry, tr *tracing.Tracer, log *slog.Logger) *mcp.Handler {
	upstreams := make(map[string]*url.URL, len(o.mcpUpstreams))
	for _, u := range o.mcpUpstreams {
		upstreams[u.Name] = u.URL
		log.Info("Fronting MCP server", "name", u.Name, "url", u.URL.Redacted(), "path", mcpupstream.PathPrefix+u.Name)
	}
	return mcp.New(mcp.Config{
		Upstreams:    upstreams,
		Judges:       &mcp.EngineJudges{Engine: px.Engine, Pod: o.pod, Telemetry: tel},
		MaxBodyBytes: o.maxBody, ReadIdleTimeout: o.readIdle, WriteIdleTimeout: o.writeIdle,
		Telemetry: tel, Tracer: tr, Log: log,
	})
}

// validProviderName checks a --provider value: a ModelProvider's name (a DNS subdomain:
// lowercase letters, digits, '-' and '.') given once.
func validProviderName(name string, seen []string) error {
	if name == "" || len(name) > 253 {
		return errors.New("a ModelProvider name of 1 to 253 characters")
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			return fmt.Errorf("%q is not a ModelProvider name (lowercase letters, digits, '-' and '.')", name)
		}
	}
	for _, s := range seen {
		if s == name {
			return fmt.Errorf("ModelProvider %s named twice", name)
		}
	}
	if len(seen) >= 2 {
		return errors.New("at most one ModelProvider per API family (two)")
	}
	return nil
}

func parseUpstream(flagName, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s must be an absolute http(s) URL, got %q", flagName, raw)
	}
	return u, nil
}
