package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/controllers/controlplane/intake"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// Options configure the control-plane server.
type Options struct {
	// BindAddress is where guards connect, e.g. ":9444"; empty or "0" disables the server.
	BindAddress string
	// CertDir holds tls.crt and tls.key (the operator's serving certificate, the same as
	// the webhook's); the server starts serving once they exist and follows rotations.
	CertDir string
	// Debounce is how long a change waits for the rest of its burst; 0 means 100ms.
	Debounce time.Duration
	// Wait is how long a poll with nothing new is held open; 0 means 30s.
	Wait time.Duration
	// ReadTimeout bounds reading a request, headers and body (bodies are small: a subscribe
	// request, a decisions batch); 0 means 15s. A long poll is bounded by Wait instead.
	ReadTimeout time.Duration
	// QPS and Burst of the server's own apiserver clients, one for TokenReviews and one
	// for the Lease writes that record acks, heartbeats and decisions claims (each its own
	// rate limit, so that a reconnect storm's reviews do not queue behind acks); 0 means
	// 200 and 400.
	QPS   float32
	Burst int
	// DecisionInterval is how often decisions counted by this replica are written into
	// Guardrail status (at most one write per Guardrail per interval); 0 means 10s.
	DecisionInterval time.Duration
	// LeaseNamespace holds the guards' Leases: the operator's own namespace, which the
	// manager's cache watches for Leases (controllers.Options.Cache). Required.
	LeaseNamespace string
	// LeaseDuration is how long a guard counts as answering after it last polled: a live
	// guard polls at least every Wait, so it must exceed Wait; 0 means 60s (two polls).
	// A guard that stops polling drops out of status.enforcement within LeaseDuration.
	LeaseDuration time.Duration
	// Guard is the guard as the injector renders it (injection.Config.Guard): only a pod
	// whose spec carries it, value for value, may subscribe or report
	// (injection.VerifyGuard). Its image is required.
	Guard injection.Guard
	// AllowLocalClassifierURLs sends guards Classifiers whose backend URL names the guard's
	// own host or link (policy.LocalBackendURLs): the manager's
	// --classifier-allow-local-urls. Without it such a Classifier, which its reconciler
	// reports Stalled, reaches no guard (a Guardrail using it keeps its last good form).
	AllowLocalClassifierURLs bool
	// AuditLog writes a JSON line per decision count taken from a guard to stdout
	// (intake.BatchLine): the manager's --decision-audit-log.
	AuditLog bool
	// TracingHeaders names the Secret of LeaseNamespace holding the headers of the guards'
	// OTLP exports, which every snapshot carries (tracing.go): the manager's
	// --guard-otel-headers-secret. The zero value is none.
	TracingHeaders injection.TracingHeaders
	// TracingClientCert names the kubernetes.io/tls Secret of LeaseNamespace holding the
	// client certificate of the guards' OTLP exports, which every snapshot carries
	// (tracing_cert.go): the manager's --guard-otel-client-cert-secret. The zero value is
	// none.
	TracingClientCert injection.TracingClientCert
}

// Server serves the policy subscription (runtime/controlplane's protocol). It runs on
// every replica, not only the leader: guards connect to any of them.
type Server struct {
	opts   Options
	log    logr.Logger
	hub    *hub
	auth   *authenticator
	pods   client.Reader  // injected pods, cached (metadata, phase and guard verification: controllers.Options.Cache)
	leases client.Reader  // guards' Leases, cached (the operator's namespace)
	api    client.Reader  // the apiserver, for pods and Leases not (yet) in the cache
	writer client.Client  // guards' Leases
	intake *intake.Intake // POST /v1/decisions, on the same listener
	ready  chan struct{}
	addr   net.Addr
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// The server reads pods and never writes them: a guard's state is its Lease (lease.go).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=guardrails/status,verbs=get;patch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterguardrails;clusterclassifiers,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=modelproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=guardrail.dev,resources=clusterguardrails/status;clusterclassifiers/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup adds the server to the manager, with the informer hooks that trigger pushes.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (*Server, error) {
	if opts.BindAddress == "" || opts.BindAddress == "0" {
		return nil, nil
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.Wait <= 0 {
		opts.Wait = 30 * time.Second
	}
	if opts.DecisionInterval <= 0 {
		opts.DecisionInterval = 10 * time.Second
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 15 * time.Second
	}
	if opts.QPS <= 0 {
		opts.QPS, opts.Burst = 200, 400
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = guards.DefaultLeaseDuration
	}
	switch {
	case opts.LeaseNamespace == "":
		return nil, errors.New("control plane: the namespace of the guards' Leases is not set")
	case opts.Guard.Image == "":
		return nil, errors.New("control plane: the guard's image is not set, so no pod could prove it carries the guard")
	case opts.LeaseDuration <= opts.Wait:
		return nil, fmt.Errorf("control plane: the guards' Lease duration %s must exceed the long-poll wait %s", opts.LeaseDuration, opts.Wait)
	}
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	writer, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	reviewer, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	log := mgr.GetLogger().WithName("controlplane")
	b := &builder{cache: mgr.GetClient(), secrets: mgr.GetAPIReader(), allowLocal: opts.AllowLocalClassifierURLs,
		operatorNamespace: opts.LeaseNamespace, tracingHeaders: opts.TracingHeaders, tracingClientCert: opts.TracingClientCert, log: log}
	timers := &windowTimers{}
	s := &Server{
		opts: opts, log: log,
		hub:  newHub(timers.wrap(b.build), opts.Debounce, log, serverMetrics),
		auth: newAuthenticator(reviewer, serverMetrics),
		pods: mgr.GetClient(), leases: mgr.GetClient(), api: mgr.GetAPIReader(), writer: writer,
		ready: make(chan struct{}),
	}
	s.intake = intake.New(intake.Options{Interval: opts.DecisionInterval, Cache: mgr.GetClient(), API: mgr.GetAPIReader(),
		Writer: writer, Recorder: mgr.GetEventRecorder("guardrail-decisions"), Log: log.WithName("decisions"),
		Lease: s.guardLeaseFor, HandlerSlack: handlerSlack, LeaseNamespace: opts.LeaseNamespace, Identity: os.Getenv("POD_NAME"),
		AuditLog: intake.AuditWriter(opts.AuditLog)})
	timers.touch = s.hub.touch
	if err := s.watch(ctx, mgr); err != nil {
		return nil, err
	}
	if err := s.watchBudgets(ctx, mgr); err != nil {
		return nil, err
	}
	// The Lease informer starts with the cache, not on the first poll.
	if _, err := mgr.GetCache().GetInformer(ctx, &coordinationv1.Lease{}); err != nil {
		return nil, err
	}
	// A replica is ready once guards can connect to it.
	if err := mgr.AddReadyzCheck("control-plane", s.readyCheck); err != nil {
		return nil, err
	}
	return s, mgr.Add(s)
}

func (s *Server) readyCheck(*http.Request) error {
	select {
	case <-s.ready:
		return nil
	default:
		return errors.New("the control plane is not serving yet: waiting for its serving certificate")
	}
}

// watch touches a namespace's snapshots on every change to what they are made of:
// Guardrails, Classifiers, Secrets (metadata) and the labels of injected pods; and every
// namespace's on a change to the cluster baselines (watchCluster).
func (s *Server) watch(ctx context.Context, mgr ctrl.Manager) error {
	touch := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(client.Object); ok {
			s.hub.touch(o.GetNamespace())
		}
	}
	// Status writes are most updates of Guardrails and Classifiers (acks change status);
	// only a new generation or a deletion changes what guards get.
	specChanged := func(old, cur any) bool {
		o, ok1 := old.(client.Object)
		c, ok2 := cur.(client.Object)
		return !ok1 || !ok2 || o.GetGeneration() != c.GetGeneration() ||
			o.GetDeletionTimestamp().IsZero() != c.GetDeletionTimestamp().IsZero()
	}
	handlers := map[client.Object]func(old, cur any) bool{
		&v1alpha1.Guardrail{}:  specChanged,
		&v1alpha1.Classifier{}: specChanged,
		// Any change to a Secret may be a rotation: its data is not in the cache to compare.
		secretMeta(): func(old, cur any) bool {
			o, ok1 := old.(client.Object)
			c, ok2 := cur.(client.Object)
			return !ok1 || !ok2 || o.GetResourceVersion() != c.GetResourceVersion()
		},
	}
	if err := s.watchCluster(ctx, mgr, specChanged); err != nil {
		return err
	}
	for obj, changed := range handlers {
		inf, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: touch,
			UpdateFunc: func(old, cur any) {
				if changed(old, cur) {
					touch(cur)
				}
			},
			DeleteFunc: touch,
		}); err != nil {
			return err
		}
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(client.Object)
			c, ok2 := cur.(client.Object)
			if ok1 && ok2 && !labels.Equals(o.GetLabels(), c.GetLabels()) {
				s.hub.touch(c.GetNamespace())
			}
		},
	})
	return err
}

func podMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return m
}

func secretMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

// Addr is the address the server listens on, once Ready is closed.
func (s *Server) Addr() net.Addr { <-s.ready; return s.addr }

// Start implements manager.Runnable: it waits for the serving certificate, then serves
// until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	certFile, keyFile := filepath.Join(s.opts.CertDir, "tls.crt"), filepath.Join(s.opts.CertDir, "tls.key")
	if err := waitForFiles(ctx, s.log, certFile, keyFile); err != nil {
		return nil //nolint:nilerr // ctx ended before the certificate appeared: a clean stop
	}
	watcher, err := certwatcher.New(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("control plane certificate: %w", err)
	}
	go func() {
		if err := watcher.Start(ctx); err != nil {
			s.log.Error(err, "Watching the control plane certificate")
		}
	}()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("control plane listener: %w", err)
	}
	s.addr = ln.Addr()
	close(s.ready)
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+cp.SubscribePath, s.subscribe)
	mux.HandleFunc("POST "+guardv1.DecisionsPath, s.intake.Handler(s.authorize))
	// A slow client cannot hold a connection: its request is read within ReadTimeout, and
	// an answer is written within WriteTimeout, which a long poll (Wait) stays under;
	// each handler re-arms the read deadline once it has the body (bodyRead).
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: min(10*time.Second, s.opts.ReadTimeout),
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.Wait + handlerSlack,
		IdleTimeout:       5 * time.Minute,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: watcher.GetCertificate,
			NextProtos:     []string{"h2", "http/1.1"},
		},
	}
	s.log.Info("Serving the policy subscription and decisions intake", "address", s.addr.String())
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	go s.intake.Run(ctx)
	select {
	case err := <-errc:
		s.intake.Shutdown()
		return err
	case <-ctx.Done():
	}
	s.hub.stop()
	// Long polls end at once: their guards reconnect to another replica.
	_ = srv.Close()
	s.intake.Shutdown()
	return nil
}

func waitForFiles(ctx context.Context, log logr.Logger, files ...string) error {
	logged := false
	for {
		missing := ""
		for _, f := range files {
			if _, err := os.Stat(f); err != nil {
				missing = f
				break
			}
		}
		if missing == "" {
			return nil
		}
		if !logged {
			log.Info("Waiting for the serving certificate", "file", missing)
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// subscribe is one long poll: authenticate, bind to the pod, record the ack, then answer
// with the pod's snapshot as soon as it differs from what the guard runs.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, pod, err := s.identify(r)
	if err != nil {
		s.refuse(w, err)
		return
	}
	var req cp.SubscribeRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		serverMetrics.refused.WithLabelValues("bad_request").Inc()
		http.Error(w, "the body is not a subscribe request", http.StatusBadRequest)
		return
	}
	if !validVersion(req.Running) || (req.Refused != nil && !validVersion(req.Refused.Version)) {
		serverMetrics.refused.WithLabelValues("bad_request").Inc()
		http.Error(w, "a policy version is a snapshot's version", http.StatusBadRequest)
		return
	}
	bodyRead(w, s.opts.Wait+handlerSlack)
	s.recordAck(ctx, pod, &req)

	sub := serverMetrics.subscribers.WithLabelValues(id.namespace)
	sub.Inc()
	defer sub.Dec()
	timer := time.NewTimer(s.opts.Wait)
	defer timer.Stop()
	for {
		snap, changed, err := s.hub.get(ctx, pod.Namespace, selection{labels: labels.Set(pod.Labels), providers: guards.GuardProviders(pod),
			tracing: guards.GuardTracing(pod)})
		if err != nil {
			s.log.Error(err, "Compiling a policy snapshot", "namespace", pod.Namespace)
			http.Error(w, "the policy of this pod cannot be compiled now; retry", http.StatusServiceUnavailable)
			return
		}
		refused := req.Refused != nil && req.Refused.Version == snap.version
		if snap.version != req.Running && !refused {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(snap.raw)
			serverMetrics.sent.Inc()
			return
		}
		select {
		case <-changed:
			if pod, err = s.pod(ctx, id); err != nil {
				s.refuse(w, err)
				return
			}
		case <-timer.C:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-ctx.Done():
			return
		}
	}
}

// identify authenticates the request's bearer token and returns the pod it is bound to
// (pod), which must carry the guard.
func (s *Server) identify(r *http.Request) (identity, *metav1.PartialObjectMetadata, error) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	id, err := s.auth.authenticate(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return id, nil, err
	}
	pod, err := s.pod(r.Context(), id)
	return id, pod, err
}

// authorize is identify for the decisions intake.
func (s *Server) authorize(r *http.Request) (*metav1.PartialObjectMetadata, error) {
	_, pod, err := s.identify(r)
	return pod, err
}

// pod returns the metadata of the pod the token is bound to; the pod must exist with the
// token's uid (a token of a deleted pod, or of an earlier pod of the same name, is
// refused), and its spec must carry the guard as the injector renders it: any container
// of the namespace may mount a token of the guard's audience, only the guard may report.
func (s *Server) pod(ctx context.Context, id identity) (*metav1.PartialObjectMetadata, error) {
	key := types.NamespacedName{Namespace: id.namespace, Name: id.pod}
	cached := &corev1.Pod{}
	err := s.pods.Get(ctx, key, cached)
	verified := guards.ErrNotVerified
	if err == nil && string(cached.UID) == id.podUID {
		verified = guards.GuardVerification(cached)
	}
	if errors.Is(verified, guards.ErrNotVerified) && (err == nil || apierrors.IsNotFound(err)) {
		// Not in the cache of injected pods (yet), or cached without its verification:
		// read the whole pod from the apiserver.
		cached = &corev1.Pod{}
		if err = s.api.Get(ctx, key, cached); err == nil {
			verified = injection.VerifyGuard(cached, s.opts.Guard)
		}
	}
	switch {
	case apierrors.IsNotFound(err) || (err == nil && string(cached.UID) != id.podUID):
		return nil, &refusal{403, "pod_not_found", "the pod this token is bound to does not exist"}
	case err != nil:
		return nil, fmt.Errorf("reading pod: %w", err)
	case verified != nil:
		return nil, &refusal{403, "not_a_guard", "the pod this token is bound to does not carry the guard as the " +
			"operator injects it, so it may not subscribe or report: " + verified.Error()}
	}
	pod := podMeta()
	pod.Namespace, pod.Name, pod.UID, pod.Labels = cached.Namespace, cached.Name, cached.UID, cached.Labels
	// The returned pod is verified: it says so, with the providers its guard uses and the
	// endpoint it traces to, in the cache-only annotations (read with guards.GuardProviders
	// and guards.GuardTracing), whichever way it was read.
	guards.SetGuardVerification(pod, nil)
	providers, tracing := guards.GuardProviders(cached), guards.GuardTracing(cached)
	if _, fromCache := cached.Annotations[guards.AnnotationGuardVerification]; !fromCache {
		providers, tracing = injection.GuardProviders(cached), injection.GuardTracingEndpoint(cached)
	}
	guards.SetGuardProviders(pod, providers)
	guards.SetGuardTracing(pod, tracing)
	return pod, nil
}

// handlerSlack is what a handler may take beyond its own bound (Wait for a long poll) to
// read the apiserver and write its answer.
const handlerSlack = 30 * time.Second

// bodyRead re-arms the read deadline of a request whose body has been read: the server's
// ReadTimeout covers the request, and on HTTP/1.1 a deadline that passes while the
// handler still runs cancels the handler's context.
func bodyRead(w http.ResponseWriter, bound time.Duration) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bound))
}

// validVersion reports whether v may be a snapshot's version (versionOf), or empty.
func validVersion(v string) bool { return v == "" || guardv1.ValidID(v) }

func (s *Server) refuse(w http.ResponseWriter, err error) {
	if r, ok := asRefusal(err); ok {
		serverMetrics.refused.WithLabelValues(r.reason).Inc()
		http.Error(w, r.msg, r.status)
		return
	}
	s.log.Error(err, "Serving a subscription")
	http.Error(w, "the control plane cannot serve this request now; retry", http.StatusServiceUnavailable)
}
