package telemetry

import (
	"net/http"
	"strings"
)

// TraceIDs reads the W3C traceparent header (version-traceid-spanid-flags) of a request,
// whose ids decision records carry; both are empty when it is absent or malformed.
func TraceIDs(h http.Header) (trace, span string) {
	parts := strings.Split(h.Get("Traceparent"), "-")
	if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return "", ""
	}
	return parts[1], parts[2]
}
