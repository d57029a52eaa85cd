package audit

import (
	"strconv"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
)

// timeLayout is RFC 3339 in UTC with milliseconds, of fixed width.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// maxModelChars bounds the model name a line carries.
const maxModelChars = 128

// fixed are the parts of every line of a Logger, encoded once: its pod's fields and
// its guard's.
type fixed struct{ pod, guard []byte }

func newFixed(cfg *Config) fixed {
	return fixed{
		pod:   appendField(appendField(nil, "pod", cfg.Pod), "namespace", cfg.Namespace),
		guard: appendField(appendField(nil, "guardVersion", cfg.Version), "incarnation", cfg.Incarnation),
	}
}

// appendLine encodes one decision as a line (with its newline), by hand: the guard's
// hot path does not allocate for it. Field order is the schema's (docs/audit-log.md).
func appendLine(b []byte, f *fixed, end time.Time, r *engine.Record, dropped uint64) []byte {
	b = append(b, `{"schema":"`...)
	b = append(b, Schema...)
	b = append(b, `","time":"`...)
	b = end.UTC().AppendFormat(b, timeLayout)
	b = append(b, '"')
	b = append(b, f.pod...)
	ns, name, _ := strings.Cut(r.Guardrail, "/")
	if name == "" {
		ns, name = "", r.Guardrail // not a key; written as it is
	}
	b = append(b, `,"guardrail":`...)
	b = jsonx.AppendString(b, name)
	b = appendField(b, "guardrailNamespace", ns)
	b = append(b, `,"clusterScoped":`...)
	b = strconv.AppendBool(b, ns == "" && strings.HasPrefix(r.Guardrail, "/"))
	b = append(b, `,"generation":`...)
	b = strconv.AppendInt(b, r.Generation, 10)
	b = append(b, `,"phase":`...)
	b = jsonx.AppendString(b, r.Phase.String())
	b = append(b, `,"outcome":`...)
	b = jsonx.AppendString(b, string(r.Outcome))
	b = appendField(b, "action", actionOf(r.Outcome))
	b = append(b, `,"mode":`...)
	b = jsonx.AppendString(b, r.Mode.String())
	b = appendFindings(b, "categories", r.Findings, engine.FindingCategory)
	b = appendFindings(b, "rules", r.Findings, engine.FindingRule)
	b = appendFindings(b, "notInspected", r.Findings, engine.FindingNotInspected)
	b = appendField(b, "code", string(r.Code))
	if r.Escalated {
		b = append(b, `,"escalated":true`...)
	}
	if r.Partial {
		b = append(b, `,"partial":true`...)
	}
	if guardv1.ValidID(r.IDs.RequestID) {
		b = appendField(b, "requestId", r.IDs.RequestID)
	}
	if isHexID(r.IDs.TraceID, 32) {
		b = appendField(b, "traceId", r.IDs.TraceID)
		if isHexID(r.IDs.SpanID, 16) {
			b = appendField(b, "spanId", r.IDs.SpanID)
		}
	}
	if validModel(r.IDs.Model) {
		b = appendField(b, "model", r.IDs.Model)
	}
	b = appendField(b, "mcpServer", r.IDs.MCPServer)
	b = append(b, f.guard...)
	if dropped > 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendUint(b, dropped, 10)
	}
	return append(b, "}\n"...)
}

// appendField appends ,"key":"value", or nothing when value is empty.
func appendField(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return jsonx.AppendString(b, value)
}

// appendFindings appends the names of the findings of kind as an array, or nothing.
func appendFindings(b []byte, key string, fs []engine.Finding, kind engine.FindingKind) []byte {
	n := 0
	for i := range fs {
		if fs[i].Kind != kind {
			continue
		}
		if n == 0 {
			b = append(b, ',', '"')
			b = append(b, key...)
			b = append(b, `":[`...)
		} else {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, fs[i].Name)
		n++
	}
	if n > 0 {
		b = append(b, ']')
	}
	return b
}

// isHexID reports whether s is n lowercase hex digits, not all zero (W3C trace context:
// an all-zero id is invalid).
func isHexID(s string, n int) bool {
	if len(s) != n {
		return false
	}
	zero := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
		zero = zero && c == '0'
	}
	return !zero
}

// validModel reports whether a client's model name is written: a name of letters, digits
// and ._:/@+- of at most maxModelChars, which a model id is ("gpt-4o",
// "models/gemini-2.0-flash", "anthropic.claude-3-5-sonnet-20241022-v2:0"); anything else
// is left out, being the client's free text.
func validModel(s string) bool {
	if s == "" || len(s) > maxModelChars {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '+' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
