// Package serving runs the manager's controller-runtime HTTP servers — the webhook
// server, the metrics endpoint and the health probes — with read, write and idle
// timeouts of their own.
//
// controller-runtime (v0.25) serves each of them from an http.Server with a
// ReadHeaderTimeout of 32 s and an IdleTimeout of 90 s but no ReadTimeout and no
// WriteTimeout, and neither webhook.Options, metricsserver.Options nor manager.Options
// can set them: a client that sends a request body slowly, or not at all, holds a
// connection and a goroutine for as long as it likes (slowloris). This package serves the
// same handlers from servers with the Timeouts below:
//
//   - WebhookServer is webhook.DefaultServer (its Register, with controller-runtime's
//     webhook metrics, and its mux) with Start and StartedChecker of its own;
//   - Metrics replaces the manager's metrics server (Options.Metrics.BindAddress "0"),
//     serving what metricsserver.NewServer would for the same options;
//   - Probes replaces the manager's probe server (Options.HealthProbeBindAddress "0"): it
//     wraps the manager so that AddHealthzCheck and AddReadyzCheck add to its probes.
package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Timeouts bound how long a client may hold a connection of a server.
type Timeouts struct {
	// ReadHeader bounds reading a request's line and headers (and a TLS handshake).
	ReadHeader time.Duration
	// Read bounds reading the whole request, body included. On HTTP/1.1 a handler still
	// running when it passes sees its context cancelled, so it must also exceed the
	// handler's own time.
	Read time.Duration
	// Write bounds the time from the end of a request's headers to the end of its answer.
	Write time.Duration
	// Idle bounds how long a kept-alive connection waits for its next request.
	Idle time.Duration
}

// The timeouts of the manager's servers.
var (
	// WebhookTimeouts: the apiserver calls the webhook with a timeout of at most 30 s
	// (timeoutSeconds; 5 s as installed), sends the whole AdmissionReview at once and
	// gives up at its timeout, so nothing of a request is worth reading or answering after
	// 30 s. The apiserver keeps idle connections for 90 s; the server keeps them longer,
	// so that it is the apiserver that closes them, never while it reuses one.
	WebhookTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 2 * time.Minute}
	// MetricsTimeouts: a scrape is a GET without a body; it is authenticated and
	// authorized by the apiserver (a TokenReview and a SubjectAccessReview) before the
	// registry is gathered. Prometheus gives up after its scrape_timeout (10 s by
	// default), so 30 s covers any sensible one; idle connections outlive a scrape
	// interval of up to 2 minutes.
	MetricsTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 2 * time.Minute}
	// ProbeTimeouts: the kubelet probes with a GET and its timeoutSeconds (1 s by
	// default), without keep-alive; the slowest check dials the webhook server (at most
	// 10 s).
	ProbeTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 10 * time.Second, Idle: 30 * time.Second}
)

// Server returns an http.Server serving h with t.
func (t Timeouts) Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		MaxHeaderBytes:    1 << 20,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
	}
}

// shutdownTimeout is how long a stopping server waits for its requests, as
// controller-runtime's servers do.
const shutdownTimeout = time.Minute

// WebhookServer returns the webhook server of o, served with t. o.ClientCAName is not
// supported (Start fails).
func WebhookServer(o webhook.Options, t Timeouts) webhook.Server {
	// DefaultServer's defaults, set here: its Register would set them while Start reads
	// them.
	if o.WebhookMux == nil {
		o.WebhookMux = http.NewServeMux()
	}
	if o.Port == 0 {
		o.Port = webhook.DefaultPort
	}
	if o.CertDir == "" {
		o.CertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	o.CertName, o.KeyName = orDefault(o.CertName, "tls.crt"), orDefault(o.KeyName, "tls.key")
	def, ok := webhook.NewServer(o).(*webhook.DefaultServer)
	if !ok {
		panic("serving: webhook.NewServer no longer returns a *webhook.DefaultServer")
	}
	return &webhookServer{DefaultServer: def, opts: o, timeouts: t}
}

// webhookServer is webhook.DefaultServer, whose Register adds to opts.WebhookMux, served
// by a server with timeouts: Start is DefaultServer.Start's, with that server.
type webhookServer struct {
	*webhook.DefaultServer
	opts     webhook.Options
	timeouts Timeouts

	mu      sync.Mutex
	started bool
}

// address is where the server listens; a negative port disables it.
func (s *webhookServer) address() (string, bool) {
	return net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)), s.opts.Port > 0
}

// Start serves the webhooks over TLS until ctx ends.
func (s *webhookServer) Start(ctx context.Context) error {
	addr, enabled := s.address()
	if !enabled {
		return nil
	}
	o := s.opts
	if o.ClientCAName != "" {
		return errors.New("webhook server: client certificates (ClientCAName) are not supported")
	}
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, op := range o.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate == nil {
		w, err := certwatcher.New(filepath.Join(o.CertDir, o.CertName), filepath.Join(o.CertDir, o.KeyName))
		if err != nil {
			return err
		}
		cfg.GetCertificate = w.GetCertificate
		go func() {
			if err := w.Start(ctx); err != nil {
				logf.FromContext(ctx).Error(err, "Watching the webhook server's certificate")
			}
		}()
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	return serve(ctx, s.timeouts.Server(o.WebhookMux), tls.NewListener(ln, cfg))
}

// StartedChecker is healthy once the server accepts TLS connections, as DefaultServer's.
func (s *webhookServer) StartedChecker() healthz.Checker {
	return func(req *http.Request) error {
		addr, enabled := s.address()
		if !enabled {
			return nil
		}
		s.mu.Lock()
		started := s.started
		s.mu.Unlock()
		if !started {
			return errors.New("webhook server has not been started yet")
		}
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // only whether it answers
		ctx := context.Background()
		if req != nil {
			ctx = req.Context()
		}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("webhook server is not reachable: %w", err)
		}
		return conn.Close()
	}
}

// serve serves ln with srv until ctx ends, then shuts it down.
func serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		// ctx has ended: the shutdown gets a bound of its own.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped
	return nil
}

// Metrics adds to mgr the metrics endpoint metricsserver.NewServer would serve for o —
// /metrics from controller-runtime's registry and o.ExtraHandlers, each behind
// o.FilterProvider's filter, over TLS when o.SecureServing with the certificate in
// o.CertDir or else a self-signed one — served with t. The manager's own metrics server
// must be off (its Options.Metrics.BindAddress "0"). A BindAddress "0" serves nothing.
func Metrics(mgr manager.Manager, o metricsserver.Options, t Timeouts) error {
	if o.BindAddress == "0" {
		return nil
	}
	if o.BindAddress == "" {
		o.BindAddress = metricsserver.DefaultBindAddress
	}
	handlerOpts := promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}
	for _, op := range o.HandlerOpts {
		op(&handlerOpts)
	}
	if _, ok := o.ExtraHandlers["/metrics"]; ok {
		return errors.New("metrics server: an extra handler may not replace /metrics")
	}
	handlers := maps.Clone(o.ExtraHandlers)
	if handlers == nil {
		handlers = map[string]http.Handler{}
	}
	handlers["/metrics"] = promhttp.HandlerFor(ctrlmetrics.Registry, handlerOpts)
	var filter metricsserver.Filter
	if o.FilterProvider != nil {
		var err error
		if filter, err = o.FilterProvider(mgr.GetConfig(), mgr.GetHTTPClient()); err != nil {
			return fmt.Errorf("metrics server: filter: %w", err)
		}
	}
	log := mgr.GetLogger().WithName("metrics")
	mux := http.NewServeMux()
	for path, h := range handlers {
		if filter != nil {
			var err error
			if h, err = filter(log.WithValues("path", path), h); err != nil {
				return fmt.Errorf("metrics server: filter of %s: %w", path, err)
			}
		}
		mux.Handle(path, h)
	}

	ln, err := o.ListenConfig.Listen(context.Background(), "tcp", o.BindAddress)
	if err != nil {
		return fmt.Errorf("metrics server: %w", err)
	}
	if o.SecureServing {
		cfg, err := metricsTLS(mgr, o)
		if err != nil {
			_ = ln.Close()
			return err
		}
		ln = tls.NewListener(ln, cfg)
	}
	log.Info("Serving metrics", "address", ln.Addr().String(), "secure", o.SecureServing)
	timeout := shutdownTimeout
	return mgr.Add(&manager.Server{Name: "metrics", Server: t.Server(mux), Listener: ln, ShutdownTimeout: &timeout})
}

// metricsTLS is the TLS configuration of the metrics endpoint: o.TLSOpts over HTTP/2 and
// HTTP/1.1, with the certificate of o.CertDir (followed as it rotates) when it exists, else
// a self-signed one for localhost.
func metricsTLS(mgr manager.Manager, o metricsserver.Options) (*tls.Config, error) {
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, op := range o.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate != nil {
		return cfg, nil
	}
	certDir := o.CertDir
	if certDir == "" {
		certDir = filepath.Join(os.TempDir(), "k8s-metrics-server", "serving-certs")
	}
	certFile, keyFile := filepath.Join(certDir, orDefault(o.CertName, "tls.crt")), filepath.Join(certDir, orDefault(o.KeyName, "tls.key"))
	if exists(certFile) && exists(keyFile) {
		w, err := certwatcher.New(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("metrics server: %w", err)
		}
		cfg.GetCertificate = w.GetCertificate
		return cfg, mgr.Add(everyReplica(w.Start))
	}
	cert, key, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("metrics server: self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("metrics server: self-signed certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

// Probes serves mgr's health probes on addr with t — /healthz and /readyz, each check on
// its own subpath, as the manager serves them — and returns the manager to set the rest
// up with: its AddHealthzCheck and AddReadyzCheck add to these probes. The manager's own
// probe server must be off (its Options.HealthProbeBindAddress "0"). An empty or "0" addr
// serves none and returns mgr.
func Probes(mgr manager.Manager, addr string, t Timeouts) (manager.Manager, error) {
	if addr == "" || addr == "0" {
		return mgr, nil
	}
	p := &probes{Manager: mgr, healthz: map[string]healthz.Checker{}, readyz: map[string]healthz.Checker{}}
	mux := http.NewServeMux()
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": p.healthz, "/readyz": p.readyz} {
		h := http.StripPrefix(path, p.handler(checks))
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health probes: %w", err)
	}
	timeout := shutdownTimeout
	if err := mgr.Add(&manager.Server{Name: "health probe", Server: t.Server(mux), Listener: ln, ShutdownTimeout: &timeout}); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return p, nil
}

// probes is a manager whose health checks its own probe server serves.
type probes struct {
	manager.Manager
	mu              sync.Mutex
	healthz, readyz map[string]healthz.Checker
}

// AddHealthzCheck adds a liveness check.
func (p *probes) AddHealthzCheck(name string, check healthz.Checker) error {
	return p.add(p.healthz, name, check)
}

// AddReadyzCheck adds a readiness check.
func (p *probes) AddReadyzCheck(name string, check healthz.Checker) error {
	return p.add(p.readyz, name, check)
}

func (p *probes) add(checks map[string]healthz.Checker, name string, check healthz.Checker) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	checks[name] = check
	return nil
}

// handler serves checks with controller-runtime's healthz.Handler, over a copy taken per
// request (checks may be added while the server runs).
func (p *probes) handler(checks map[string]healthz.Checker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		h := &healthz.Handler{Checks: maps.Clone(checks)}
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// everyReplica is a runnable that runs on every replica, leader or not.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
