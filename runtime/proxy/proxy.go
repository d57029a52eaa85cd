package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/egress"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/labels"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// Config configures a Proxy.
type Config struct {
	// OpenAIUpstream and AnthropicUpstream are the providers' base URLs; the request path
	// (/v1/...) is appended, and a trailing /v1 of the base is ignored.
	OpenAIUpstream, AnthropicUpstream *url.URL
	// GeminiUpstream is the Gemini API's base URL (the request path, /v1beta/..., is
	// appended); nil means DefaultGeminiUpstream.
	GeminiUpstream *url.URL
	// Transport reaches the upstreams; nil means a tuned egress transport (no proxy, the
	// system's CA bundle: runtime/egress).
	Transport http.RoundTripper
	// PassThrough lists POST paths forwarded without guarding.
	PassThrough []string
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means 16 MiB.
	MaxBodyBytes int64
	// MaxResponseBytes bounds non-streamed response bodies the guard judges; 0 means 64 MiB.
	MaxResponseBytes int64
	// WriteIdleTimeout bounds each write to a client; a client that reads nothing for this
	// long (up to 9/8 of it) is dropped. 0 means 2 minutes.
	WriteIdleTimeout time.Duration
	// ReadIdleTimeout bounds each read of a request body: a client that sends nothing of
	// its body for this long (up to 9/8 of it) is dropped, however long a large body that
	// keeps coming takes. 0 means 30 seconds.
	ReadIdleTimeout time.Duration
	// Pod is the pod name copied into decision records.
	Pod string
	// Namespace, when set, keeps only the guardrails of that namespace.
	Namespace string
	// Providers are the ModelProviders the guard sends its pod's calls to (--provider,
	// keyless apps: see keyless.go); their URL and credential come from the snapshot.
	Providers []string
	// PodLabels, when set, keeps only the guardrails whose selector matches them.
	PodLabels labels.Set
	Telemetry *telemetry.Telemetry
	Log       *slog.Logger
	// Tracer, when not nil, makes a span of each guarded call and of its guardrail
	// evaluations (runtime/tracing); nil: no tracing, at no cost.
	Tracer *tracing.Tracer
}

// state is one applied policy: the snapshot, its backends and the engine.
type state struct {
	snap     *policy.Snapshot
	engine   *engine.Engine
	backends map[string]classify.Classifier
	// enforcesAnswers is set when a guardrail selecting this pod enforces a phase that
	// judges what the model answers (Stream, Output or ToolCalls): answers the guard
	// cannot judge (background responses) are then refused.
	enforcesAnswers bool
	// keyless holds the providers in force (Config.Providers).
	keyless keyless
}

// enforcesAnswers reports whether one of guardrails enforces a phase that judges what the
// model answers. A Report guardrail does not count: it never changes traffic, so it does not make the guard refuse what it cannot judge either.
func enforcesAnswers(guardrails []*policy.Guardrail) bool {
	for _, g := range guardrails {
		if g.Mode == policy.ModeEnforce &&
			(g.Phases.Has(policy.PhaseStream) || g.Phases.Has(policy.PhaseOutput) || g.Phases.Has(policy.PhaseToolCalls)) {
			return true
		}
	}
	return false
}

// Proxy is the guard's handler. Apply swaps policies atomically; requests in flight keep
// the policy they started with.
type Proxy struct {
	cfg         Config
	state       atomic.Pointer[state]
	passThrough map[string]bool
	openai      *httputil.ReverseProxy
	anthropic   *httputil.ReverseProxy
	gemini      *httputil.ReverseProxy
	client      *http.Client
}

// DefaultGeminiUpstream is the Gemini API's base URL, where Gemini calls go when
// Config.GeminiUpstream is not set.
const DefaultGeminiUpstream = "https://generativelanguage.googleapis.com"

// New returns a proxy with no policy: guarded routes answer 503 until Apply.
func New(cfg Config) *Proxy {
	if cfg.GeminiUpstream == nil {
		cfg.GeminiUpstream, _ = url.Parse(DefaultGeminiUpstream)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 64 << 20
	}
	if cfg.WriteIdleTimeout <= 0 {
		cfg.WriteIdleTimeout = 2 * time.Minute
	}
	if cfg.ReadIdleTimeout <= 0 {
		cfg.ReadIdleTimeout = 30 * time.Second
	}
	if cfg.Transport == nil {
		t := egress.Transport(nil)
		t.MaxIdleConnsPerHost = 256
		t.ResponseHeaderTimeout = 10 * time.Minute
		cfg.Transport = t
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = telemetry.New(nil)
	}
	p := &Proxy{cfg: cfg, passThrough: map[string]bool{}, client: &http.Client{
		Transport: cfg.Transport,
		// Never follow redirects: a redirect would carry the client's credentials elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	for _, path := range cfg.PassThrough {
		p.passThrough[path] = true
	}
	p.openai = p.reverseProxy(cfg.OpenAIUpstream, nil)
	p.anthropic = p.reverseProxy(cfg.AnthropicUpstream, nil)
	p.gemini = p.reverseProxy(cfg.GeminiUpstream, nil)
	return p
}

// reverseProxy forwards unguarded calls to base; keyless, when set, is the provider whose
// credential replaces the client's (keyless.go).
func (p *Proxy) reverseProxy(base *url.URL, keyless *providerRoute) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = upstreamURL(base, pr.In.URL)
			pr.Out.Host = ""
			pr.Out.Header.Del("X-Forwarded-For")
			if keyless != nil {
				keyless.authorize(pr.Out.Header)
			}
		},
		Transport:     p.cfg.Transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.Header.Get("X-Request-Id") == "" {
				resp.Header.Set("X-Request-Id", resp.Request.Header.Get("X-Request-Id"))
			}
			if keyless != nil && resp.StatusCode == http.StatusUnauthorized {
				p.credentialRefused(keyless, resp)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away; nobody reads an answer
			}
			p.cfg.Log.Warn("Upstream unreachable", "path", r.URL.Path, "error", err.Error())
			w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
			writeError(w, familyOfUnguarded(r), upstreamUnreachable("the guardrail sidecar could not reach the model provider"))
		},
	}
}

// upstreamURL joins the upstream base and the request path (/v1/...); a base ending in
// /v1 is accepted as the SDKs' base URLs are written that way.
func upstreamURL(base *url.URL, in *url.URL) *url.URL {
	u := *base
	u.Path = strings.TrimSuffix(strings.TrimSuffix(base.Path, "/"), "/v1") + in.Path
	u.RawPath = ""
	u.RawQuery = in.RawQuery
	return &u
}

// Apply builds backends and an engine for snap and puts them in force. On error the
// previous policy stays in force.
func (p *Proxy) Apply(snap *policy.Snapshot) error {
	backends := make(map[string]classify.Classifier, len(snap.Classifiers))
	for _, c := range snap.Classifiers {
		b, err := newBackend(c)
		if err != nil {
			return fmt.Errorf("classifier %s: %w", c.Key, err)
		}
		backends[c.Key] = b
	}
	var guardrails []*policy.Guardrail
	for _, g := range snap.Guardrails {
		if p.selects(g) {
			guardrails = append(guardrails, g)
		}
	}
	k, err := p.keylessFor(snap)
	if err != nil {
		closeIdle(backends)
		return err
	}
	next := &state{snap: snap, backends: backends, enforcesAnswers: enforcesAnswers(guardrails), keyless: k, engine: engine.New(engine.Config{
		Guardrails: guardrails, Classifiers: snap.Classifiers, Backends: engine.BackendMap(backends),
	})}
	prev := p.state.Swap(next)
	p.cfg.Telemetry.Policy(snap.Version)
	p.cfg.Log.Info("Policy applied", "version", snap.Version, "guardrails", len(guardrails), "classifiers", len(snap.Classifiers))
	if len(p.cfg.Providers) > 0 {
		p.logProviders(k)
	}
	if prev != nil {
		closeIdle(prev.backends)
	}
	return nil
}

// selects reports whether guardrail g applies to this guard's pod. A ClusterGuardrail has
// no namespace: the operator sent it because its namespaceSelector selects the pod's.
func (p *Proxy) selects(g *policy.Guardrail) bool {
	if p.cfg.Namespace != "" && !g.Cluster && g.Namespace != p.cfg.Namespace {
		return false
	}
	if p.cfg.PodLabels == nil || g.Selector == nil {
		return true
	}
	sel, err := labels.SelectorFrom(g.Selector)
	if err != nil {
		return true // Compile validated it; applying too much is the safe side
	}
	return sel.Matches(p.cfg.PodLabels)
}

// Ready reports whether a policy is in force.
func (p *Proxy) Ready() bool { return p.state.Load() != nil }

// Version returns the version of the policy in force, or "".
func (p *Proxy) Version() string {
	if s := p.state.Load(); s != nil {
		return s.snap.Version
	}
	return ""
}

// ServeHTTP routes a request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = newRequestID()
		r.Header.Set("X-Request-Id", id)
	}
	if why := unforwardablePath(r.URL); why != "" {
		p.refuse(w, r, id, familyOfUnguarded(r), why+"; the guardrail sidecar does not forward it")
		return
	}
	versioned(r.URL)
	f, guarded := wire.Route(r.Method, r.URL.Path)
	if guarded {
		// The limit gets the server's own writer, before it is wrapped: it tells the server
		// to close the connection after a 413 rather than read the rest of the body.
		r.Body = http.MaxBytesReader(w, r.Body, p.cfg.MaxBodyBytes)
	}
	rc := http.NewResponseController(w)
	if hasBody(r) {
		r.Body = &idleReader{ReadCloser: r.Body, rc: rc, timeout: p.cfg.ReadIdleTimeout}
	}
	w = &idleWriter{ResponseWriter: w, rc: rc, timeout: p.cfg.WriteIdleTimeout}
	// The request uses one policy, providers included, whatever Apply does meanwhile.
	st := p.state.Load()
	if guarded {
		w.Header().Set("X-Request-Id", id)
		p.serveGuarded(w, r, f, st)
		return
	}
	if f, ok := retrieval(r.Method, r.URL.Path); ok && !hasBody(r) {
		w.Header().Set("X-Request-Id", id)
		p.serveRetrieval(w, r, f, st)
		return
	}
	f = familyOfUnguarded(r)
	switch {
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && hasBody(r):
		// A GET or HEAD has no body a provider should read, and one that reads it anyway
		// would read a prompt nobody judged.
		p.refuse(w, r, id, f, "a "+r.Method+" request with a body is not forwarded by the guardrail sidecar")
	case r.Method == http.MethodGet || r.Method == http.MethodHead || p.passThrough[r.URL.Path]:
		up, refused := p.upstreamFor(w, r, st, f, "passthrough")
		if refused != "" {
			return
		}
		// The reverse proxy answers the request id (the upstream's, else ours): setting it
		// here too would answer two.
		p.cfg.Telemetry.Request("passthrough", "passthrough")
		switch {
		case up.provider != nil:
			p.cfg.Telemetry.ProviderRequest(up.provider.p.Name)
			up.provider.passThrough.ServeHTTP(w, r)
		case f.Anthropic():
			p.anthropic.ServeHTTP(w, r)
		case f.Gemini():
			p.gemini.ServeHTTP(w, r)
		default:
			p.openai.ServeHTTP(w, r)
		}
	default:
		p.cfg.Telemetry.Request("unguarded", "refused")
		w.Header().Set("X-Request-Id", id)
		writeError(w, f, wire.APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "route_not_guarded",
			Message: fmt.Sprintf("%s %s is not a route the guardrail sidecar guards; list it in --pass-through to forward it unguarded", r.Method, r.URL.Path)})
	}
}

// refuse answers 400 to a request the guard does not forward, whatever its route.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, id string, f wire.Family, msg string) {
	p.cfg.Telemetry.Request("unguarded", "refused")
	w.Header().Set("X-Request-Id", id)
	if hasBody(r) {
		// The body is not read: the connection is not kept for a next request behind it.
		w.Header().Set("Connection", "close")
	}
	writeError(w, f, wire.APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_request", Message: msg})
}

// familyOfUnguarded is the family whose error shape answers a request outside the
// guarded routes, and whose upstream a GET or pass-through route goes to: Anthropic's for
// Anthropic clients (an anthropic-version or x-api-key header), Gemini's for Gemini
// clients (an x-goog-api-key header, or a path under /v1beta or /v1alpha, which only the
// Gemini API has), else OpenAI's.
func familyOfUnguarded(r *http.Request) wire.Family {
	switch {
	case r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "":
		return wire.FamilyMessages
	case r.Header.Get("X-Goog-Api-Key") != "" || geminiVersioned(r.URL.Path):
		return wire.FamilyGemini
	}
	return wire.FamilyChat
}

// idleChunk is the most written to a client under one write deadline.
const idleChunk = 32 << 10

// idleWriter bounds every write to the client by the write idle timeout, whatever the
// path (stream, whole response, pass-through, error): a client that accepts nothing for
// that long is dropped, so it cannot hold a handler and the response it buffers forever,
// however long a response it reads slowly takes. Large writes are cut so that the
// deadline measures idleness, not the size of the body. Unwrap lets
// http.ResponseController (flushes, the reverse proxy) reach the server's writer.
type idleWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// armed is when the deadline was last set.
	armed time.Time
}

func (w *idleWriter) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		w.arm()
		n, err := w.ResponseWriter.Write(b[written:min(len(b), written+idleChunk)])
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// arm makes sure the write deadline is at least the idle timeout away. It sets it to
// 9/8 of the timeout from now, and leaves it while it was set less than an eighth of the
// timeout ago: a client that accepts nothing is dropped after between the timeout and
// 9/8 of it. Setting the deadline updates a timer of the runtime's poller; on every write
// (every streamed event) it was a tenth of what the guard adds to an event.
func (w *idleWriter) arm() {
	now := time.Now()
	if !w.armed.IsZero() && now.Sub(w.armed) < w.timeout/8 {
		return
	}
	w.armed = now
	_ = w.rc.SetWriteDeadline(now.Add(w.timeout + w.timeout/8))
}

// Unwrap returns the server's ResponseWriter.
func (w *idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// idleReader bounds every read of a request body by the read idle timeout, as idleWriter
// bounds writes: a client that stops sending its body is dropped after between the
// timeout and 9/8 of it, while a large body that keeps coming, however slowly, is read to
// its end. The server's own ReadTimeout cannot do this: it is one deadline for the whole
// request, and it stays set while the handler runs, so the server's read that watches for
// the client going away fails when it passes and cancels the request — it would cut every
// stream longer than the timeout. The deadline is therefore lifted when the body ends,
// before the answer is written; it is set at most once per read of the body, never per
// streamed event. After any other error it stays: a body that timed out is not read on
// (by the server discarding its rest) without one.
type idleReader struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	armed   time.Time
	// done is set when the body has ended or failed: the deadline is no longer armed.
	done bool
}

func (r *idleReader) Read(b []byte) (int, error) {
	if r.done {
		return r.ReadCloser.Read(b)
	}
	now := time.Now()
	if r.armed.IsZero() || now.Sub(r.armed) >= r.timeout/8 {
		r.armed = now
		_ = r.rc.SetReadDeadline(now.Add(r.timeout + r.timeout/8))
	}
	n, err := r.ReadCloser.Read(b)
	if err != nil {
		r.done = true
		if errors.Is(err, io.EOF) {
			_ = r.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func writeError(w http.ResponseWriter, f wire.Family, e wire.APIError) {
	_ = wire.WriteError(w, f, e)
}

// clientGone reports whether err is the client going away.
func clientGone(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled)
}
