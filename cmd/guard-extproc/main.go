// Command guard-extproc enforces Guardrails inside a gateway: it is an Envoy external
// processor (the envoy.service.ext_proc.v3 gRPC service) that Envoy, Envoy AI Gateway,
// kgateway or Istio call for each request of the routes they send it. It judges requests
// and answers with the guard's engine (runtime/extproc), and gets its policy as the guard
// does: from a policy file,
//
//	guard-extproc --policy-file config/samples/pii-secrets-redaction.yaml --listen :15081
//
// or from the operator's control plane (--control-plane, --token-file, --ca-file,
// --snapshot-dir), which serves only pods the operator rendered: in a cluster, a SharedGuard
// with spec.mode ExtProc runs it so (docs/shared-guard.md), gRPC on its pod's address
// (--listen=:15081) behind the SharedGuard's Service, its admin port probed, with no
// provider key, since the gateway calls the provider. A guard-extproc pod that differs from
// that rendering in any argument, variable, volume or image is refused its policy
// (controllers/injection/extproc.go). How to configure Envoy's filter, and what is and is
// not supported: docs/extproc.md.
//
// It serves gRPC on --listen (plaintext, or TLS with --tls-cert-file and --tls-key-file,
// which are read again when they change: a certificate renewed in place is served to new
// connections without a restart, runtime/tlsreload) with the standard gRPC health service (SERVING once a policy is loaded), and /healthz,
// /readyz and /metrics on --admin-listen. Like the guard it takes no proxy, CA or debug
// setting from its environment (GRPC_* included) and makes its memory unreadable to other
// processes of its user (runtime/guardproc). It links no Kubernetes package
// (runtime/linkcheck_test.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/guardrail-dev/guardrail-operator/runtime/extproc"
	"github.com/guardrail-dev/guardrail-operator/runtime/guardproc"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/tlsreload"
)

type options struct {
	listen, admin             string
	tlsCert, tlsKey           string
	tlsReloadEvery            time.Duration
	policy                    guardproc.PolicySource
	decisionLog               string
	passThrough               string
	maxBody, maxResponse      int64
	grace                     time.Duration
	pod, namespace, podLabels string
	logLevel                  string
}

func main() {
	// First of all: started with variables it must not honour, it starts again without
	// them, before it reads anything or holds any credential.
	guardproc.ExitOnIgnoredEnv("guard-extproc")
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "guard-extproc:", err) //nolint:forbidigo // before the logger exists
		os.Exit(2)
	}
	log, err := guardproc.Start(o.logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "guard-extproc:", err) //nolint:forbidigo // before the logger exists
		os.Exit(2)
	}
	if err := run(o, log); err != nil {
		log.Error("guard-extproc stopped", "error", err.Error())
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	o := options{tlsReloadEvery: tlsreload.DefaultEvery}
	fs := flag.NewFlagSet("guard-extproc", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", ":15081", "Address the ext_proc gRPC server listens on (Envoy's ext_proc cluster points here).")
	fs.StringVar(&o.admin, "admin-listen", ":9090", "Address of /healthz, /readyz and /metrics.")
	fs.StringVar(&o.tlsCert, "tls-cert-file", "", "PEM certificate chain the gRPC server presents (with --tls-key-file); plaintext without.")
	fs.StringVar(&o.tlsKey, "tls-key-file", "", "PEM private key of --tls-cert-file.")
	o.policy.RegisterFlags(fs)
	fs.StringVar(&o.decisionLog, "decision-log", "", "Write one JSON line per decision to this file (- for stdout). Records hold no content.")
	fs.StringVar(&o.passThrough, "pass-through", "", "Comma-separated POST paths let through unjudged (every other unknown POST is refused).")
	fs.Int64Var(&o.maxBody, "max-body-bytes", 16<<20, "Largest request body judged (413 beyond).")
	fs.Int64Var(&o.maxResponse, "max-response-bytes", 64<<20, "Largest non-streamed answer judged (a failure beyond).")
	fs.DurationVar(&o.grace, "shutdown-grace", 30*time.Second, "Time in-flight requests and streams get to finish on shutdown.")
	fs.StringVar(&o.pod, "pod", os.Getenv("POD_NAME"), "Name recorded in decisions as the pod.")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "Enforce only the guardrails of this namespace (all when empty).")
	fs.StringVar(&o.podLabels, "pod-labels", os.Getenv("POD_LABELS"), "Labels (k=v,...): enforce only the guardrails selecting them (all when empty).")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return o, nil
}

func run(o options, log *slog.Logger) error {
	if err := o.policy.Validate(); err != nil {
		return err
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
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
	// The policy is held as the guard holds it; the proxy's HTTP side is never served.
	px := proxy.New(proxy.Config{Pod: o.pod, Namespace: o.namespace, PodLabels: podLabels, Telemetry: tel, Log: log})
	ep := extproc.New(extproc.Config{Policy: px, PassThrough: passThrough, MaxBodyBytes: o.maxBody,
		MaxResponseBytes: o.maxResponse, Pod: o.pod, Telemetry: tel, Log: log})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	g, err := grpcServer(o, log)
	if err != nil {
		return err
	}
	ep.Register(g)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(g, hs)

	reporter := o.policy.Reporter(ctx, tel, log)
	o.policy.Run(ctx, tel, func(snap *policy.Snapshot) error {
		if err := px.Apply(snap); err != nil {
			return err
		}
		hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		return nil
	}, log)

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
	log.Info("guard-extproc listening", "grpc", ln.Addr().String(), "tls", o.tlsCert != "", "admin", adminLn.Addr().String())
	errc := make(chan error, 2)
	go func() { errc <- g.Serve(ln) }()
	go func() { errc <- adminSrv.Serve(adminLn) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	log.Info("Shutting down; draining in-flight streams", "grace", o.grace.String())
	hs.Shutdown()
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(o.grace):
		log.Warn("Grace period over; closing the streams still open")
		g.Stop()
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = adminSrv.Shutdown(shutdownCtx)
	guardproc.FlushDecisions(reporter, log)
	return err
}

// grpcServer returns the gRPC server: messages as large as the largest body judged (a
// BUFFERED request body is one message), keepalive pings from Envoy accepted every 10s;
// over TLS with --tls-cert-file, whose pair is reloaded when the files change. A client
// that negotiates h2 by ALPN, or no protocol at all (a gateway whose upstream TLS offers
// none), is served gRPC over HTTP/2 (alpn.go).
func grpcServer(o options, log *slog.Logger) (*grpc.Server, error) {
	maxMsg := int(max(o.maxBody, o.maxResponse)) + 1<<20
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMsg),
		grpc.MaxSendMsgSize(maxMsg),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
	if o.tlsCert != "" {
		certs, err := tlsreload.New(o.tlsCert, o.tlsKey, o.tlsReloadEvery, log, "gRPC")
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(newGatewayTLS(certs.Config())))
	}
	return grpc.NewServer(opts...), nil
}
