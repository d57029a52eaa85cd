package telemetry

import (
	"net/http"
	"testing"
)

func TestTraceIDs(t *testing.T) {
	const trace, span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	for _, tc := range []struct {
		traceparent string
		ok          bool
	}{
		{"00-" + trace + "-" + span + "-01", true},
		{"ff-" + trace + "-" + span + "-", true}, // the fields' lengths are what is checked
		{"", false},
		{"00-" + trace + "-" + span, false},
		{"00-" + trace + "-" + span + "-01-02", false},
		{"00-" + trace[1:] + "-" + span + "-01", false},
		{"00-" + trace + "-" + span[1:] + "-01", false},
		{"---", false},
	} {
		h := http.Header{}
		if tc.traceparent != "" {
			h.Set("Traceparent", tc.traceparent)
		}
		gotTrace, gotSpan := TraceIDs(h)
		if tc.ok && (gotTrace != trace || gotSpan != span) || !tc.ok && (gotTrace != "" || gotSpan != "") {
			t.Errorf("TraceIDs(%q) = %q, %q", tc.traceparent, gotTrace, gotSpan)
		}
	}
}
