package telemetry

import (
	"net/http"
	"strings"
)

// TraceIDs reads the W3C traceparent header (version-traceid-spanid-flags) of a request,
// whose ids decision records carry; both are empty when it is absent or malformed. It
// reads the fields in place: no slice of them per request.
func TraceIDs(h http.Header) (trace, span string) {
	v := h.Get("Traceparent")
	_, rest, ok1 := strings.Cut(v, "-")
	trace, rest, ok2 := strings.Cut(rest, "-")
	span, flags, ok3 := strings.Cut(rest, "-")
	if !ok1 || !ok2 || !ok3 || strings.Contains(flags, "-") || len(trace) != 32 || len(span) != 16 {
		return "", ""
	}
	return trace, span
}
