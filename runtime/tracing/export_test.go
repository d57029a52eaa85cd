package tracing

import "context"

// ForceFlush exports the spans buffered so far (tests).
func (t *Tracer) ForceFlush(ctx context.Context) error { return t.provider.ForceFlush(ctx) }

// Transport is the exporter's current HTTP client (tests: a new one is a new transport).
func (t *Tracer) Transport() any { return t.client.http.Load() }
