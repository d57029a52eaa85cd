package tracing

import (
	"context"
	"fmt"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter is the guard's span exporter: it encodes each batch of spans as OTLP's
// ExportTraceServiceRequest itself (appendRequest, in otlpwire.go, which says why) and
// sends it with client. It does what the SDK's otlptrace exporter over the same client
// did: a batch without a span sends nothing, an export's error is wrapped as "traces
// export: …", the context the batch processor gives (its OTEL_BSP_EXPORT_TIMEOUT) bounds
// the request beside the client's own timeout (OTEL_EXPORTER_OTLP_TIMEOUT), and Shutdown
// closes the client's idle connections once.
type exporter struct {
	client *client
	once   sync.Once
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

// spanSizeHint is about what one of the guard's spans takes encoded: a call's with its
// GenAI attributes, an evaluation's with the guardrail's.
const spanSizeHint = 400

// ExportSpans sends spans to the collector in one request.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	// Sized for the guard's spans (some 400 bytes each): append would otherwise grow a
	// large batch's buffer in steps of a quarter, allocating five times its size.
	msg := appendRequest(make([]byte, 0, spanSizeHint*len(spans)), spans)
	if len(msg) == 0 {
		return nil
	}
	if err := e.client.send(ctx, msg); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// Shutdown closes the idle connections to the collector; the batch processor has
// exported what it held before it calls it. Later calls do nothing.
func (e *exporter) Shutdown(context.Context) error {
	e.once.Do(e.client.stop)
	return nil
}
