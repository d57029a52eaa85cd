// Package tracing is the guard's OpenTelemetry tracing: a span per guarded model call,
// with the GenAI semantic conventions' attributes, and per judged MCP exchange (StartMCP,
// with the MCP conventions'), and under each a span per guardrail evaluation, exported over OTLP (http/protobuf or grpc) to the collector the standard
// OTEL_* variables name (FromEnv). It is off unless an endpoint is set, and then costs
// nothing: the proxy's tracer is nil and no span is made.
//
// A call that carries a W3C traceparent header is a child of the app's span (the
// tracecontext propagator; baggage is not read). Spans carry names, ids, numbers and
// outcomes, never prompt or completion text, request bodies, headers or credentials:
// the model the request names, the upstream's host, the guardrail's name, classifier,
// phase, mode, outcome, matched categories and rules and their highest score.
//
// The guardrail attributes are under guardrail.*: the GenAI conventions have no
// guardrail attributes yet (a draft of the GenAI SIG proposes gen_ai.security.*); they
// will be mapped when the names are settled (docs/tracing.md).
//
// The spans are made by the OpenTelemetry SDK, but exported by the guard's own code: the
// exporter encodes OTLP's request by hand with protowire (otlpwire.go) and the client sends
// it over HTTP or gRPC's framing (client.go). The SDK's exporters would link gRPC's
// library, or OTLP's generated messages and protobuf's reflection-based marshaller; the
// guard runs in every injected pod, where each linked package costs memory
// (runtime/linkcheck_test.go keeps them out).
package tracing

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/tracing/otlpheaders"
)

// scope is the instrumentation scope of the guard's spans.
const scope = "github.com/guardrail-dev/guardrail-operator/runtime/tracing"

// Tracer makes the spans of guarded calls. A nil *Tracer is off: StartCall returns nil.
type Tracer struct {
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider
	prop     propagation.TraceContext
	// client is Setup's exporter (nil for a test's recorder), endpoint the endpoint
	// variable's value (Config.ConfiguredEndpoint).
	client   *client
	endpoint string
}

// Options are what the guard knows of itself, for the spans' resource.
type Options struct {
	// Pod and Namespace are the guard's pod (k8s.pod.name, k8s.namespace.name).
	Pod, Namespace string
	// Version is the guard's version (service.version), when known.
	Version string
	// OnError, when not nil, receives the errors of exports (a collector that cannot be
	// reached or refuses spans): OpenTelemetry's error handler, which is global. The errors
	// name no endpoint, header or span content.
	OnError func(error)
}

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// say otherwise.
const DefaultServiceName = "guardrail-guard"

// Setup starts exporting spans as cfg says; it returns nil, and no error, when cfg is off.
// Shutdown flushes and stops it. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read
// here, and the batch processor's OTEL_BSP_* variables by the SDK.
func Setup(ctx context.Context, cfg Config, o Options) (*Tracer, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	if o.OnError != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(o.OnError))
	}
	t, err := newTracer(ctx, cfg, o, sdktrace.WithBatcher(&exporter{client: c}))
	if err != nil {
		return nil, err
	}
	t.client, t.endpoint = c, cfg.ConfiguredEndpoint
	return t, nil
}

// Errors of SetHeaders. Neither names a header or a value.
var (
	// ErrOtherEndpoint: the headers were given for an endpoint this guard does not export
	// to (a guard injected with an earlier tracing setting): they are not sent.
	ErrOtherEndpoint = errors.New("the control plane's OTLP headers are for another endpoint than this guard's: not sent")
	// ErrNoExporter: t exports nothing (off, or a test's recorder).
	ErrNoExporter = errors.New("tracing is off: no OTLP headers to set")
)

// SetHeaders sets the headers the control plane delivered for the collector at endpoint
// (runtime/controlplane Snapshot.Tracing): every export from then on carries them, after
// (and over) those of OTEL_EXPORTER_OTLP_HEADERS. They replace the ones set before; empty h
// removes them. They are taken only when endpoint is the OTEL_EXPORTER_OTLP_ENDPOINT (or
// _TRACES_ENDPOINT) this tracer was set up with, so that a collector's credential never
// goes to another one; otherwise, or when they do not pass otlpheaders.Check, the
// delivered headers are removed and the error says why, without naming any.
func (t *Tracer) SetHeaders(endpoint string, h map[string]string) error {
	if t == nil || t.client == nil {
		return ErrNoExporter
	}
	if len(h) == 0 {
		t.client.delivered.Store(nil)
		return nil
	}
	if endpoint != t.endpoint {
		t.client.delivered.Store(nil)
		return ErrOtherEndpoint
	}
	if err := otlpheaders.Check(h); err != nil {
		t.client.delivered.Store(nil)
		return fmt.Errorf("the control plane's OTLP headers are refused: %w", err)
	}
	hh := make(http.Header, len(h))
	for k, v := range h {
		hh.Set(k, v)
	}
	t.client.delivered.Store(&hh)
	return nil
}

// ErrNoClientCertificate is SetClientTLS's error for a pair that does not parse, a key
// that is not the certificate's, or a CA that holds no certificate. It names neither.
var ErrNoClientCertificate = errors.New("the control plane's client certificate for the collector cannot be used")

// SetClientTLS sets the client certificate the control plane delivered for the collector
// at endpoint (runtime/controlplane Snapshot.Tracing.ClientCertificate): every TLS
// handshake with the collector from then on presents it, instead of the pair of
// OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY, and a CA bundle, when given,
// replaces OTEL_EXPORTER_OTLP_CERTIFICATE (or the system's roots) to verify the collector.
// The exporter is not rebuilt: the transport reads the latest pair at each handshake
// (tls.Config.GetClientCertificate), and idle connections are closed so that the next
// export shakes hands again; a new CA takes a new transport, swapped in for the next
// export. nil c removes the delivered certificate and CA. Like SetHeaders, it is taken
// only for this tracer's endpoint; for another, the delivered certificate is removed and
// ErrOtherEndpoint returned. A pair that does not parse, or whose key is not the
// certificate's, or a CA without a certificate, changes nothing (the last good pair stays)
// and ErrNoClientCertificate is returned; so does c.KeepLast (the platform's Secret cannot
// be used now), without an error.
func (t *Tracer) SetClientTLS(endpoint string, c *ClientTLS) error {
	if t == nil || t.client == nil {
		return ErrNoExporter
	}
	if c == nil {
		t.client.setTLS(nil, "", "", nil)
		return nil
	}
	if endpoint != t.endpoint {
		t.client.setTLS(nil, "", "", nil)
		return ErrOtherEndpoint
	}
	if c.KeepLast {
		return nil
	}
	pair, err := tls.X509KeyPair(c.Certificate, c.Key)
	if err != nil {
		return ErrNoClientCertificate
	}
	var roots *x509.CertPool
	if len(c.CA) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(c.CA) {
			return ErrNoClientCertificate
		}
	}
	id := sha256.New()
	id.Write(c.Certificate)
	id.Write([]byte{0})
	id.Write(c.Key)
	t.client.setTLS(&pair, hex.EncodeToString(id.Sum(nil)), string(c.CA), roots)
	return nil
}

// KeepsClientTLS reports whether t presents a certificate the control plane delivered
// for endpoint (SetClientTLS): what a guard keeps while the platform's Secret cannot be
// used.
func (t *Tracer) KeepsClientTLS(endpoint string) bool {
	return t != nil && t.client != nil && endpoint == t.endpoint && t.client.pair.Load() != nil
}

// newTracer builds the tracer over a span processor (Setup's batcher, a test's recorder).
func newTracer(ctx context.Context, cfg Config, o Options, opts ...sdktrace.TracerProviderOption) (*Tracer, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	if o.Pod != "" {
		attrs = append(attrs, attribute.String("k8s.pod.name", o.Pod))
	}
	if o.Namespace != "" {
		attrs = append(attrs, attribute.String("k8s.namespace.name", o.Namespace))
	}
	// Later sources win: the variables over the guard's own defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	opts = append(opts, sdktrace.WithResource(res), sdktrace.WithSampler(newSampler(cfg)))
	tp := sdktrace.NewTracerProvider(opts...)
	return &Tracer{tracer: tp.Tracer(scope), provider: tp}, nil
}

func newSampler(cfg Config) sdktrace.Sampler {
	switch cfg.Sampler {
	case SamplerAlwaysOn:
		return sdktrace.AlwaysSample()
	case SamplerAlwaysOff:
		return sdktrace.NeverSample()
	case SamplerTraceIDRatio:
		return sdktrace.TraceIDRatioBased(cfg.SamplerArg)
	case SamplerParentBasedAlwaysOn:
		return sdktrace.ParentBased(sdktrace.AlwaysSample())
	case SamplerParentBasedAlwaysOff:
		return sdktrace.ParentBased(sdktrace.NeverSample())
	}
	ratio := cfg.SamplerArg
	if cfg.Sampler == "" {
		ratio = 1
	}
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
}

// Shutdown exports the spans still buffered and stops; nil-safe.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// CallInfo describes a guarded call for its span: names, never content.
type CallInfo struct {
	// Operation is gen_ai.operation.name: chat, embeddings, generate_content.
	Operation string
	// Provider is gen_ai.provider.name: openai, anthropic, gcp.gemini.
	Provider string
	// Model is the model the request names (gen_ai.request.model).
	Model string
	// Server is the upstream's host and Port its port (server.address, server.port).
	Server string
	Port   int
}

// Call is the span of one guarded call. A nil *Call is a call that is not traced (tracing
// off, or not sampled): every method does nothing.
type Call struct {
	span trace.Span
	ctx  context.Context
	t    *Tracer

	// mu guards pending and held: the spans of the call's first evaluations, made when the
	// call ends (see Evaluation).
	mu      sync.Mutex
	pending [heldEvaluations]heldEvaluation
	held    int
}

// heldEvaluations is how many evaluation spans a call holds until it ends: a call's
// Input and Output evaluations, and a stream's first ones. Evaluations past them get
// their spans at once, so that a long stream's are not all held.
const heldEvaluations = 4

// heldEvaluation is an evaluation whose span is made when its call ends.
type heldEvaluation struct {
	rec   engine.Record
	start time.Time
}

// StartCall starts the span of a guarded call, a child of the span h's traceparent names
// when there is one. It returns nil when t is nil or the call is not sampled.
func (t *Tracer) StartCall(ctx context.Context, h http.Header, c CallInfo) *Call {
	if t == nil {
		return nil
	}
	ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(h))
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs,
		attribute.String("gen_ai.operation.name", c.Operation),
		attribute.String("gen_ai.provider.name", c.Provider),
		attribute.String("gen_ai.system", system(c.Provider)))
	if c.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", c.Model))
	}
	attrs = serverAttrs(attrs, c.Server, c.Port)
	name := c.Operation
	if c.Model != "" {
		name += " " + c.Model
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if !span.IsRecording() {
		return nil
	}
	return &Call{span: span, ctx: ctx, t: t}
}

// system is the older gen_ai.system's value of a provider: its name, but gemini for
// gcp.gemini.
func system(provider string) string {
	if p, ok := strings.CutPrefix(provider, "gcp."); ok {
		return p
	}
	return provider
}

// Context returns the context carrying the call's span (ctx when c is nil), for spans of
// the call's own work.
func (c *Call) Context(ctx context.Context) context.Context {
	if c == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, c.span)
}

// Usage records the tokens the provider reported (gen_ai.usage.*); zero counts are left out.
func (c *Call) Usage(input, output int64) {
	if c == nil {
		return
	}
	if input > 0 {
		c.span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", input))
	}
	if output > 0 {
		c.span.SetAttributes(attribute.Int64("gen_ai.usage.output_tokens", output))
	}
}

// ResponseModel records the model that answered (gen_ai.response.model).
func (c *Call) ResponseModel(model string) {
	if c == nil || model == "" {
		return
	}
	c.span.SetAttributes(attribute.String("gen_ai.response.model", model))
}

// Refused records the code of the error a call refused before it was judged was answered
// with (guardrail.refusal.code: request_too_large, policy_not_loaded, budget_exceeded, ...).
func (c *Call) Refused(code string) {
	if c == nil || code == "" {
		return
	}
	c.span.SetAttributes(attribute.String("guardrail.refusal.code", code))
}

// End ends the call's span with the guard's outcome (guardrail.request.outcome, as
// guard_requests_total counts it: allowed, blocked, failed, refused, upstream_error,
// client_gone). failed and upstream_error are errors (error.type is the outcome);
// blocked is the guard doing its work, not an error.
func (c *Call) End(outcome string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	held := c.pending[:c.held]
	c.held = len(c.pending) // an evaluation after End, if any, gets its span at once
	c.mu.Unlock()
	for i := range held {
		c.evaluation(&held[i].rec, held[i].start)
	}
	if outcome != "" {
		c.span.SetAttributes(attribute.String("guardrail.request.outcome", outcome))
	}
	switch outcome {
	case "failed", "upstream_error":
		c.span.SetAttributes(attribute.String("error.type", outcome))
		c.span.SetStatus(codes.Error, outcome)
	}
	c.span.End()
}

// Evaluation makes the span of one guardrail evaluation from its decision record: it
// started at start (the record's end less its duration when zero) and lasted
// rec.Duration. It implements engine.Tracer.
//
// The spans of a call's first evaluations are made when the call ends (End), with the
// same times, attributes and parent: the evaluations run on the request's path (the
// Input phase before the provider is called, Output before the answer is written), and
// making their spans then would delay the answer by what the span costs. The engine does
// not change a record's findings once it has emitted it.
func (c *Call) Evaluation(rec engine.Record, start time.Time) {
	if c == nil {
		return
	}
	if start.IsZero() {
		start = time.Now().Add(-rec.Duration)
	}
	c.mu.Lock()
	if c.held < len(c.pending) {
		c.pending[c.held] = heldEvaluation{rec: rec, start: start}
		c.held++
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.evaluation(&rec, start)
}

// evaluation makes the span of one evaluation (see Evaluation).
func (c *Call) evaluation(rec *engine.Record, start time.Time) {
	namespace, name := splitKey(rec.Guardrail)
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs,
		attribute.String("guardrail.name", name),
		attribute.String("guardrail.namespace", namespace),
		attribute.String("guardrail.classifier", rec.Classifier),
		attribute.String("guardrail.phase", rec.Phase.String()),
		attribute.String("guardrail.outcome", string(rec.Outcome)),
		attribute.String("guardrail.mode", rec.Mode.String()),
		attribute.String("guardrail.location", rec.Where.String()))
	var categories, rules []string
	score, scored := 0.0, false
	for _, f := range rec.Findings {
		switch f.Kind {
		case engine.FindingCategory:
			categories = append(categories, f.Name)
			if !scored || f.Score > score {
				score, scored = f.Score, true
			}
		case engine.FindingRule:
			rules = append(rules, f.Name)
		case engine.FindingNotInspected:
			attrs = append(attrs, attribute.String("guardrail.not_inspected", f.Name))
		}
	}
	if len(categories) > 0 {
		attrs = append(attrs, attribute.StringSlice("guardrail.category", categories))
	}
	if scored {
		attrs = append(attrs, attribute.Float64("guardrail.score", score))
	}
	if len(rules) > 0 {
		attrs = append(attrs, attribute.StringSlice("guardrail.rule", rules))
	}
	if rec.Code != "" {
		attrs = append(attrs, attribute.String("guardrail.code", string(rec.Code)))
	}
	if rec.Partial {
		attrs = append(attrs, attribute.Bool("guardrail.partial", true))
	}
	if rec.Escalated {
		attrs = append(attrs, attribute.Bool("guardrail.escalated", true))
	}
	_, span := c.t.tracer.Start(c.ctx, "guardrail "+rec.Guardrail, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if rec.Outcome == guardv1.OutcomeFailed {
		span.SetAttributes(attribute.String("error.type", string(rec.Code)))
		span.SetStatus(codes.Error, string(rec.Code))
	}
	span.End(trace.WithTimestamp(start.Add(rec.Duration)))
}

// splitKey returns the namespace and name of a guardrail's key (namespace/name; a
// ClusterGuardrail's is /name).
func splitKey(key string) (namespace, name string) {
	if ns, n, ok := strings.Cut(key, "/"); ok {
		return ns, n
	}
	return "", key
}

// MCPInfo describes a POST of MCP messages for its span: names and ids, never content.
type MCPInfo struct {
	// Method is the message's mcp.method.name (tools/call, tools/list, initialize, ...);
	// empty for a batch of several messages.
	Method string
	// Tool is the called tool's name (gen_ai.tool.name), for tools/call.
	Tool string
	// RequestID is the JSON-RPC id (jsonrpc.request.id): a string id's value, a number's
	// text; empty for a notification.
	RequestID string
	// ProtocolVersion is the Mcp-Protocol-Version header (mcp.protocol.version).
	ProtocolVersion string
	// Messages is how many JSON-RPC messages the POST holds.
	Messages int
	// Name is the MCP server's name on the guard (--mcp-upstream NAME: guardrail.mcp.server).
	Name string
	// Server is the MCP server's host and Port its port (server.address, server.port).
	Server string
	Port   int
	// Traceparent and Tracestate are the message's params._meta members, where MCP's
	// conventions carry the caller's context; when Traceparent is empty the HTTP request's
	// traceparent header is read instead.
	Traceparent, Tracestate string
}

// StartMCP starts the span of a POST of MCP messages the guard judges, as MCP's semantic
// conventions name a client's: "{mcp.method.name} {gen_ai.tool.name}" ("tools/call
// search"), "{mcp.method.name}" without a tool, "batch" for several messages; kind CLIENT;
// a child of the caller's context (MCPInfo.Traceparent, else the header). The guardrail
// evaluations of the exchange are its children, as a model call's are, and End takes the
// same outcomes. It returns nil when t is nil or the POST is not sampled.
func (t *Tracer) StartMCP(ctx context.Context, h http.Header, m MCPInfo) *Call {
	if t == nil {
		return nil
	}
	if m.Traceparent != "" {
		carrier := propagation.MapCarrier{"traceparent": m.Traceparent}
		if m.Tracestate != "" {
			carrier["tracestate"] = m.Tracestate
		}
		ctx = t.prop.Extract(ctx, carrier)
	} else {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(h))
	}
	attrs := make([]attribute.KeyValue, 0, 9)
	name := "batch"
	if m.Method != "" {
		name = m.Method
		attrs = append(attrs, attribute.String("mcp.method.name", m.Method))
	}
	if m.Tool != "" {
		name += " " + m.Tool
		attrs = append(attrs, attribute.String("gen_ai.tool.name", m.Tool))
	}
	if m.Method == "tools/call" {
		attrs = append(attrs, attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	if m.RequestID != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", m.RequestID))
	}
	if m.ProtocolVersion != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", m.ProtocolVersion))
	}
	if m.Messages > 1 {
		attrs = append(attrs, attribute.Int("guardrail.mcp.messages", m.Messages))
	}
	attrs = append(attrs, attribute.String("guardrail.mcp.server", m.Name))
	attrs = serverAttrs(attrs, m.Server, m.Port)
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if !span.IsRecording() {
		return nil
	}
	return &Call{span: span, ctx: ctx, t: t}
}

// serverAttrs appends server.address and server.port, when known.
func serverAttrs(attrs []attribute.KeyValue, server string, port int) []attribute.KeyValue {
	if server == "" {
		return attrs
	}
	attrs = append(attrs, attribute.String("server.address", server))
	if port > 0 {
		attrs = append(attrs, attribute.Int("server.port", port))
	}
	return attrs
}

// HostPort returns a URL's host and port for server.address and server.port: the URL's
// port, else its scheme's (443, 80), else 0.
func HostPort(u *url.URL) (string, int) {
	if u == nil {
		return "", 0
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		switch u.Scheme {
		case "https":
			port = 443
		case "http":
			port = 80
		}
	}
	return u.Hostname(), port
}
