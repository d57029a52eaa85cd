package tracing

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// capture is an otlptrace.Client that keeps what otlptrace made of the spans.
type capture struct{ got []*tracepb.ResourceSpans }

func (*capture) Start(context.Context) error { return nil }
func (*capture) Stop(context.Context) error  { return nil }
func (c *capture) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	c.got = append(c.got, rs...)
	return nil
}

// receiver is an OTLP/HTTP endpoint that keeps the bodies it receives.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	status int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: http.StatusOK}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) received() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

func newTestExporter(t *testing.T, endpoint string) *exporter {
	t.Helper()
	c, err := newClient(Config{Endpoint: endpoint, Protocol: ProtocolHTTP, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &exporter{client: c}
}

// allAttributes has a value of every attribute.Type, zero and empty ones among them
// (which OTLP's oneof must still carry), and a string long enough that its lengths, and
// those of every message around it, take three bytes.
func allAttributes(prefix string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Bool(prefix+"bool", true),
		attribute.Bool(prefix+"bool.false", false),
		attribute.Int64(prefix+"int", -42),
		attribute.Int64(prefix+"int.zero", 0),
		attribute.Int64(prefix+"int.max", math.MaxInt64),
		attribute.Float64(prefix+"float", 0.25),
		attribute.Float64(prefix+"float.zero", 0),
		attribute.Float64(prefix+"float.inf", math.Inf(-1)),
		attribute.String(prefix+"string", "héllo"),
		attribute.String(prefix+"string.empty", ""),
		attribute.String(prefix+"string.long", strings.Repeat("x", 20000)),
		attribute.BoolSlice(prefix+"bools", []bool{true, false}),
		attribute.Int64Slice(prefix+"ints", []int64{1, -1, 1 << 40}),
		attribute.Float64Slice(prefix+"floats", []float64{1.5, 0, -2}),
		attribute.StringSlice(prefix+"strings", []string{"a", "", "c"}),
		attribute.StringSlice(prefix+"strings.empty", []string{}),
		attribute.ByteSlice(prefix+"bytes", []byte{0, 1, 0xff}),
		attribute.ByteSlice(prefix+"bytes.empty", nil),
		attribute.Slice(prefix+"slice", attribute.StringValue("s"), attribute.IntValue(7), attribute.BoolValue(false),
			attribute.Float64Value(2.5), attribute.ByteSliceValue([]byte("b")), attribute.Value{},
			attribute.StringSliceValue([]string{"nested"}), attribute.SliceValue(attribute.Int64Value(1))),
		{Key: attribute.Key(prefix + "empty")}, // an EMPTY value: an AnyValue with no member set
	}
}

// recordOnly records spans without sampling them: their trace flags are 00.
type recordOnly struct{}

func (recordOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly,
		Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}
func (recordOnly) Description() string { return "record only" }

// testSpans makes spans with the SDK: two providers (resources with schema URLs, one of
// them with span limits that drop attributes, events and links), several tracers (scopes
// with versions, schema URLs and attributes), a remote parent with a tracestate, local
// children, links to remote and local spans, events, every status, every kind, an
// unsampled span; and span stubs for what the SDK never makes (no scope, no resource,
// times before 1970, dropped counts past uint32).
func testSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec1, rec2, rec3 := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	res1 := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		append(allAttributes("res."), attribute.String("service.name", "one"))...)
	res2 := resource.NewSchemaless(attribute.String("service.name", "two"), attribute.Int("k8s.pod.ordinal", 3))
	tp1 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec1), sdktrace.WithResource(res1))
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec2), sdktrace.WithResource(res2),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeValueLengthLimit: -1, AttributeCountLimit: 2,
			EventCountLimit: 1, LinkCountLimit: 1, AttributePerEventCountLimit: 1, AttributePerLinkCountLimit: 1}))
	tp3 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec3), sdktrace.WithResource(res2),
		sdktrace.WithSampler(recordOnly{}))

	ts, err := trace.ParseTraceState("vendor=abc,other=x-y")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled,
		TraceState: ts, Remote: true})
	linked := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  trace.SpanID{8, 7, 6, 5, 4, 3, 2, 1}, TraceState: ts, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(t.Context(), remote)
	start := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

	plain := tp1.Tracer("plain")
	versioned := tp1.Tracer("versioned", trace.WithInstrumentationVersion("1.2.3"),
		trace.WithSchemaURL("https://opentelemetry.io/schemas/1.30.0"),
		trace.WithInstrumentationAttributes(allAttributes("scope.")...))

	parentCtx, parent := plain.Start(ctx, "call", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
		trace.WithAttributes(allAttributes("span.")...),
		trace.WithLinks(trace.Link{SpanContext: linked, Attributes: allAttributes("link.")}))
	parent.AddEvent("first", trace.WithTimestamp(start.Add(time.Millisecond)), trace.WithAttributes(allAttributes("event.")...))
	parent.AddEvent("bare")
	parent.SetStatus(codes.Error, "upstream_error")

	for i, k := range []trace.SpanKind{trace.SpanKindUnspecified, trace.SpanKindInternal, trace.SpanKindServer,
		trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer} {
		tr := plain
		if i%2 == 1 {
			tr = versioned
		}
		_, child := tr.Start(parentCtx, "child", trace.WithSpanKind(k), trace.WithTimestamp(start.Add(time.Duration(i))),
			trace.WithLinks(trace.LinkFromContext(parentCtx, attribute.Int("i", i))))
		if i == 2 {
			child.SetStatus(codes.Ok, "ignored by the SDK for Ok")
		}
		child.End(trace.WithTimestamp(start.Add(time.Second)))
	}
	parent.End(trace.WithTimestamp(start.Add(2 * time.Second)))

	// A root span (no parent) on another resource, with limits: dropped counts.
	_, limited := tp2.Tracer("limited").Start(t.Context(), "root",
		trace.WithAttributes(attribute.Int("a", 1), attribute.Int("b", 2), attribute.Int("c", 3)),
		trace.WithLinks(trace.Link{SpanContext: remote},
			trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.Int("x", 1), attribute.Int("y", 2)}}))
	// The SDK keeps the last events and links past the limits.
	limited.AddEvent("e1")
	limited.AddEvent("e2")
	limited.AddEvent("e3", trace.WithAttributes(attribute.Int("x", 1), attribute.Int("y", 2)))
	limited.End()

	// Recorded, not sampled: trace flags 00, a remote parent's tracestate kept.
	_, unsampled := tp3.Tracer("limited").Start(ctx, "unsampled")
	unsampled.End()

	spans := append(append(rec1.Ended(), rec2.Ended()...), rec3.Ended()...)
	stubs := tracetest.SpanStubs{
		{Name: "no scope, no resource", SpanContext: remote, Parent: linked,
			StartTime:         time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), // before 1970: 0
			DroppedAttributes: math.MaxUint32 + 10, DroppedEvents: -1, DroppedLinks: 5,
			Status: sdktrace.Status{Code: codes.Unset},
			Events: []sdktrace.Event{{Name: "dropped", DroppedAttributeCount: 3, Time: time.Unix(0, 1)}},
			Links:  []sdktrace.Link{{SpanContext: linked, DroppedAttributeCount: math.MaxInt32}}},
		{Name: "zero span"},
	}
	spans = append(spans, stubs.Snapshots()...)
	// A nil span is skipped, as otlptrace skips it.
	spans = slices.Insert(spans, 3, sdktrace.ReadOnlySpan(nil))
	if len(spans) < 12 {
		t.Fatalf("%d spans recorded", len(spans))
	}
	return spans
}

// resourceKey orders a request's ResourceSpans, which otlptrace groups in a map's order.
func resourceKey(rs *tracepb.ResourceSpans) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rs.GetResource())
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The request the exporter sends is the one otlptrace and proto.Marshal make of the same
// spans: decoded with the generated types, equal to otlptrace's messages (proto.Equal),
// and byte for byte what proto.Marshal writes. One difference is deliberate: a link's
// trace_state, which otlptrace does not fill in and OTLP has, is sent.
func TestExportIsOTLPTraceTransform(t *testing.T) {
	spans := testSpans(t)

	// What otlptrace makes of the spans.
	capt := &capture{}
	ref, err := otlptrace.New(t.Context(), capt)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.ExportSpans(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	want := &coltracepb.ExportTraceServiceRequest{ResourceSpans: capt.got}
	// The link trace_state otlptrace leaves out, from the spans.
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if s != nil {
			byID[s.SpanContext().SpanID()] = s
		}
	}
	linkStates := 0
	for _, rs := range want.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				src, ok := byID[trace.SpanID(sp.GetSpanId())]
				if !ok {
					continue // the stubs share span ids; neither has links
				}
				for i, l := range sp.GetLinks() {
					l.TraceState = src.Links()[i].SpanContext.TraceState().String()
					if l.TraceState != "" {
						linkStates++
					}
				}
			}
		}
	}
	if linkStates == 0 {
		t.Fatal("no link with a tracestate among the test's spans")
	}

	// What the exporter sends.
	r := newReceiver(t)
	exp := newTestExporter(t, r.URL)
	if err := exp.ExportSpans(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	bodies := r.received()
	if len(bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(bodies))
	}
	got := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(bodies[0], got); err != nil {
		t.Fatalf("the request does not decode as ExportTraceServiceRequest: %v", err)
	}

	// otlptrace's resources come in a map's order; the exporter's, in the order of the
	// spans. Order both alike for the comparison.
	order := func(rs []*tracepb.ResourceSpans) {
		slices.SortFunc(rs, func(a, b *tracepb.ResourceSpans) int { return strings.Compare(resourceKey(a), resourceKey(b)) })
	}
	order(want.ResourceSpans)
	gotSorted := proto.Clone(got).(*coltracepb.ExportTraceServiceRequest)
	order(gotSorted.ResourceSpans)
	if len(want.GetResourceSpans()) != 3 {
		t.Fatalf("otlptrace made %d ResourceSpans, want 3 (two resources and none)", len(want.GetResourceSpans()))
	}
	if !proto.Equal(gotSorted, want) {
		t.Fatalf("the exporter's request differs from otlptrace's (-otlptrace +exporter):\n%s", diff(want, gotSorted))
	}

	// Byte for byte: proto.Marshal writes fields in the order of their numbers, as the
	// exporter does, and lengths as short as they go.
	wantOrdered := &coltracepb.ExportTraceServiceRequest{}
	for _, rs := range got.GetResourceSpans() {
		for _, w := range want.GetResourceSpans() {
			if resourceKey(w) == resourceKey(rs) {
				wantOrdered.ResourceSpans = append(wantOrdered.ResourceSpans, w)
			}
		}
	}
	wantBytes, err := proto.Marshal(wantOrdered)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bodies[0], wantBytes) {
		t.Errorf("the request decodes as otlptrace's but its bytes differ from proto.Marshal's (%d and %d bytes)",
			len(bodies[0]), len(wantBytes))
	}
}

// diff describes how two requests differ, for a failure.
func diff(want, got proto.Message) string {
	d := cmp.Diff(want, got, protocmp.Transform())
	if len(d) > 4000 {
		d = d[:4000] + "…"
	}
	return d
}

// A batch without a span sends nothing, as otlptrace sends nothing.
func TestExportOfNoSpanSendsNothing(t *testing.T) {
	r := newReceiver(t)
	exp := newTestExporter(t, r.URL)
	capt := &capture{}
	ref, err := otlptrace.New(t.Context(), capt)
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]sdktrace.ReadOnlySpan{nil, {}, {nil, nil}} {
		if err := exp.ExportSpans(t.Context(), batch); err != nil {
			t.Errorf("ExportSpans(%d spans): %v", len(batch), err)
		}
		if err := ref.ExportSpans(t.Context(), batch); err != nil {
			t.Errorf("otlptrace ExportSpans(%d spans): %v", len(batch), err)
		}
	}
	if n := len(r.received()); n != 0 {
		t.Errorf("%d requests for batches without a span", n)
	}
	if len(capt.got) != 0 {
		t.Errorf("otlptrace uploaded %d ResourceSpans for batches without a span", len(capt.got))
	}
}

// An export's error says what failed, wrapped as otlptrace wrapped the client's, without
// the endpoint; an export past its context's deadline fails as timed out; Shutdown can be
// called twice.
func TestExportErrorsAndShutdown(t *testing.T) {
	r := newReceiver(t)
	r.status = http.StatusServiceUnavailable
	exp := newTestExporter(t, r.URL+"/v1/traces")
	spans := testSpans(t)[:1]
	err := exp.ExportSpans(t.Context(), spans)
	if err == nil || err.Error() != "traces export: OTLP export: the collector answered HTTP 503" {
		t.Errorf("export to a collector answering 503: %v", err)
	}
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	err = exp.ExportSpans(ctx, spans)
	if err == nil || err.Error() != "traces export: OTLP export: timed out" || strings.Contains(err.Error(), r.URL) {
		t.Errorf("export past its deadline: %v", err)
	}
	if n := len(r.received()); n != 1 {
		t.Errorf("%d requests reached the collector, want 1 (none past the deadline)", n)
	}
	for range 2 {
		if err := exp.Shutdown(t.Context()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
}

// A string that is not UTF-8 (a model name as a client sent it) is sent with U+FFFD in
// its place, and the request decodes; proto.Marshal, over otlptrace's messages, refused
// the whole batch.
func TestExportOfInvalidUTF8(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resource.Empty()))
	_, span := tp.Tracer("utf8").Start(t.Context(), "chat gpt\xff",
		trace.WithAttributes(attribute.String("gen_ai.request.model", "gpt\xc3"), attribute.StringSlice("k\xfe", []string{"ok", "\xed\xa0\x80"})))
	span.SetStatus(codes.Error, "bad\x80")
	span.End()
	spans := rec.Ended()

	capt := &capture{}
	ref, err := otlptrace.New(t.Context(), capt)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.ExportSpans(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	if _, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: capt.got}); err == nil {
		t.Error("proto.Marshal encoded a string that is not UTF-8: the test's premise is gone")
	}

	r := newReceiver(t)
	if err := newTestExporter(t, r.URL).ExportSpans(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	got := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(r.received()[0], got); err != nil {
		t.Fatalf("the request does not decode: %v", err)
	}
	s := got.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0]
	attrs := s.GetAttributes()
	if s.GetName() != "chat gpt\uFFFD" || attrs[0].GetValue().GetStringValue() != "gpt\uFFFD" || attrs[1].GetKey() != "k\uFFFD" ||
		attrs[1].GetValue().GetArrayValue().GetValues()[1].GetStringValue() != "\uFFFD" ||
		s.GetStatus().GetMessage() != "bad\uFFFD" {
		t.Errorf("the span as sent: %v", s)
	}
}
