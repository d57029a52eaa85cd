package tracing

import "context"

// ForceFlush exports the spans buffered so far (tests).
func (t *Tracer) ForceFlush(ctx context.Context) error { return t.provider.ForceFlush(ctx) }
