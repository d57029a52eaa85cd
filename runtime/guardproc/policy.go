package guardproc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"
	"github.com/guardrail-dev/guardrail-operator/runtime/proxy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom"
)

// PolicySource is where a guard gets its policy: a policy file it watches, or the
// operator's control plane, which also takes back its decisions. Exactly one is set.
type PolicySource struct {
	// File is a YAML file of manifests, checked every Interval.
	File     string
	Interval time.Duration
	// ControlPlane is the control plane's base URL (https), with the token and CA files
	// the guard presents and trusts, and where the last good snapshot is persisted.
	ControlPlane, TokenFile, CAFile, SnapshotDir string
	// DecisionInterval is how often decision counts go to the control plane.
	DecisionInterval time.Duration
	// TracingHeaders, when set, receives the OTLP headers the control plane delivers
	// (controlplane.Client.TracingHeaders).
	TracingHeaders func(endpoint string, headers map[string]string)
	// TracingClientCertificate, when set, receives the client certificate for the
	// collector that the control plane delivers (controlplane.Client.TracingClientCertificate).
	TracingClientCertificate func(endpoint string, c *controlplane.ClientCertificate)
}

// RegisterFlags registers the flags that set s, as the guard spells them.
func (s *PolicySource) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.File, "policy-file", "", "YAML file of Classifier and Guardrail manifests to enforce; watched for changes.")
	fs.DurationVar(&s.Interval, "policy-interval", time.Second, "How often the policy file is checked for changes.")
	fs.StringVar(&s.ControlPlane, guardv1.FlagControlPlane, "", "Base URL (https) of the operator's control plane to "+
		"subscribe to for this pod's policy; exclusive with --policy-file.")
	fs.StringVar(&s.TokenFile, guardv1.FlagTokenFile, "/var/run/secrets/guardrail.dev/token/token",
		"Projected service-account token (audience "+guardv1.Audience+") presented to the control plane.")
	fs.StringVar(&s.CAFile, guardv1.FlagCAFile, "/var/run/secrets/guardrail.dev/ca/ca.crt",
		"PEM bundle the control plane's serving certificate must chain to.")
	fs.StringVar(&s.SnapshotDir, guardv1.FlagSnapshotDir, "", "Directory where the last good policy snapshot from the "+
		"control plane is persisted (mode 0600) and loaded at start when the control plane is unreachable; empty keeps none.")
	fs.DurationVar(&s.DecisionInterval, "decision-interval", 10*time.Second, "How often decision counts are sent to the "+
		"control plane (and once more at shutdown); with --control-plane only.")
}

// Validate checks that exactly one source is set, and the control plane's URL.
func (s PolicySource) Validate() error {
	if (s.File == "") == (s.ControlPlane == "") {
		return errors.New("exactly one policy source is needed: --policy-file, or --control-plane with --token-file and --ca-file")
	}
	if s.ControlPlane != "" {
		if u, err := url.Parse(s.ControlPlane); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("--%s must be an absolute https URL, got %q", guardv1.FlagControlPlane, s.ControlPlane)
		}
	}
	return nil
}

// Reporter starts sending the guard's decisions to the control plane until ctx ends, and
// exports what it could not deliver; nil without a control plane. Call it before traffic
// starts, and Flush it at shutdown.
func (s PolicySource) Reporter(ctx context.Context, tel *telemetry.Telemetry, log *slog.Logger) *controlplane.Reporter {
	if s.ControlPlane == "" {
		return nil
	}
	agg := controlplane.NewAggregator()
	tel.OnRequest(agg.Add)
	tel.OnEvaluation(agg.Evaluated)
	tel.OnProviderUsage(agg.ProviderUsed)
	reporter := &controlplane.Reporter{URL: s.ControlPlane, TokenFile: s.TokenFile, CAFile: s.CAFile,
		Interval: s.DecisionInterval, Agg: agg, Log: log}
	RegisterReporterMetrics(tel.Registry, agg, reporter)
	go reporter.Run(ctx)
	return reporter
}

// Run applies the source's policies with apply, in the background until ctx ends. A
// policy that cannot be applied is counted and logged; the last good one stays in force.
// A policy file is read and applied once before Run returns (policysource.File.Start),
// the control plane's snapshots only in the background.
func (s PolicySource) Run(ctx context.Context, tel *telemetry.Telemetry, apply func(*policy.Snapshot) error, log *slog.Logger) {
	report := func(err error) {
		tel.PolicyError()
		log.Error("Policy not applied; the last good policy stays in force", "error", err.Error())
	}
	if s.ControlPlane == "" {
		f := &policysource.File{Path: s.File, Interval: s.Interval}
		f.Start(ctx, apply, report)
		return
	}
	src := &controlplane.Client{URL: s.ControlPlane, TokenFile: s.TokenFile, CAFile: s.CAFile,
		SnapshotDir: s.SnapshotDir, Log: log, TracingHeaders: s.TracingHeaders,
		TracingClientCertificate: s.TracingClientCertificate}
	go src.Run(ctx, apply, report)
}

// OpenDecisionLog opens where decision records are written (--decision-log): nowhere
// for "", stdout for "-", else a file appended to (mode 0600). close closes it.
func OpenDecisionLog(path string) (w io.Writer, close func(), err error) {
	switch path {
	case "":
		return nil, func() {}, nil
	case "-":
		return os.Stdout, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("--decision-log: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}

// FlushDecisions sends the last decisions to the control plane, within 5 seconds, once
// every request has ended; reporter may be nil.
func FlushDecisions(reporter *controlplane.Reporter, log *slog.Logger) {
	if reporter == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := reporter.Flush(ctx); err == nil {
		log.Info("All decisions delivered to the control plane")
	}
}

// RegisterReporterMetrics exports what the decision reporter could not deliver in full.
func RegisterReporterMetrics(reg *prom.Registry, agg *controlplane.Aggregator, reporter *controlplane.Reporter) {
	reg.NewCounterFunc(prom.Opts{Name: "guard_decisions_merged_total",
		Help: "Decisions counted into their outcome's total only, the breakdown sent to the control plane being full."},
		func() float64 { return float64(agg.Merged()) })
	reg.NewCounterFunc(prom.Opts{Name: "guard_decision_batches_failed_total",
		Help: "Decision batches the control plane did not take; their counts go with the next batch."},
		func() float64 { return float64(reporter.Failures()) })
}

// AdminMux serves /healthz, /readyz (ready once px has a policy) and /metrics.
func AdminMux(px *proxy.Proxy, tel *telemetry.Telemetry) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !px.Ready() {
			http.Error(w, "no policy loaded", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok policy "+px.Version()+"\n")
	})
	mux.Handle("GET /metrics", tel.Registry)
	return mux
}
