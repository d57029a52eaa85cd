// Package audit is the guard's decision log for security teams: one JSON line per
// guarded request, guardrail and outcome the request came to, written to stdout for the
// cluster's log shipper to take to a SIEM. Its schema, Schema, is versioned and
// documented in docs/audit-log.md.
//
// A line carries ids, names and numbers only: the pod, the guardrail, the phase, the
// categories and rules that matched, the outcome and mode, the client's request id and
// trace id when they look like ids, and the guard's version and incarnation. Never a
// prompt, a completion, a matched value, a header or a credential: the engine's decision
// records hold none (engine.Record), and the few values a client chooses (its request id,
// its traceparent, the model it names) are written only when they look like ids.
//
// The log is opt-in and costs nothing when off: the guard installs it on its telemetry
// (telemetry.OnAudit) only when asked. It is bounded: a token bucket of lines per second
// drops what exceeds it, counting the lines dropped (Logger.Dropped, the guard's
// guard_audit_lines_dropped_total) and telling the next line written how many went
// before it ("dropped").
package audit

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
)

// Schema names the version of the line format. A change that removes or changes the
// meaning of a field makes a new version; fields may be added within one.
const Schema = "guardrail.dev/decision/v1"

// Config configures a Logger.
type Config struct {
	// Out receives the lines, one Write per line; the guard's stdout.
	Out io.Writer
	// Pod and Namespace are the guard's pod (--pod, --namespace).
	Pod, Namespace string
	// Version is the guard's build (its module version or VCS revision).
	Version string
	// Incarnation is the guard process's random id, the one its decision counts go to the
	// control plane under when it has one: lines and counts of one process match.
	Incarnation string
	// Rate bounds the lines written per second on average, Burst at once; a line beyond
	// them is dropped and counted. Rate <= 0 writes every line.
	Rate  float64
	Burst int
	// Now is the clock of the rate limit; nil means time.Now.
	Now func() time.Time
}

// Logger writes the audit lines. It is safe for concurrent use.
type Logger struct {
	cfg   Config
	fixed fixed
	now   func() time.Time

	mu sync.Mutex
	// buf backs the line being encoded.
	buf []byte
	// tokens and last are the token bucket: lines that may be written now, as of last.
	tokens float64
	last   time.Time
	// droppedSince counts the lines dropped since the last one written.
	droppedSince uint64

	written, dropped, writeErrors atomic.Uint64
}

// New returns a Logger.
func New(cfg Config) *Logger {
	if cfg.Burst < 1 {
		cfg.Burst = 1
	}
	l := &Logger{cfg: cfg, fixed: newFixed(&cfg), now: cfg.Now, buf: make([]byte, 0, 1024), tokens: float64(cfg.Burst)}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Install makes l the audit sink of tel.
func (l *Logger) Install(tel *telemetry.Telemetry) { tel.OnAudit(l.Decisions) }

// Decisions writes one line per decision of a request that ended (telemetry.OnAudit).
// It keeps nothing of rd.
func (l *Logger) Decisions(rd telemetry.RequestDecisions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range rd.Decisions {
		if !l.take() {
			l.droppedSince++
			l.dropped.Add(1)
			continue
		}
		l.buf = appendLine(l.buf[:0], &l.fixed, rd.End, &rd.Decisions[i], l.droppedSince)
		l.droppedSince = 0
		if _, err := l.cfg.Out.Write(l.buf); err != nil {
			l.writeErrors.Add(1)
			continue
		}
		l.written.Add(1)
	}
}

// take spends a token of the rate limit, or reports that there is none. Called with mu held.
func (l *Logger) take() bool {
	if l.cfg.Rate <= 0 {
		return true
	}
	now := l.now()
	if !l.last.IsZero() {
		if elapsed := now.Sub(l.last); elapsed > 0 {
			l.tokens = min(float64(l.cfg.Burst), l.tokens+elapsed.Seconds()*l.cfg.Rate)
		}
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// Written is the number of lines written.
func (l *Logger) Written() uint64 { return l.written.Load() }

// Dropped is the number of lines the rate limit dropped.
func (l *Logger) Dropped() uint64 { return l.dropped.Load() }

// WriteErrors is the number of lines Out refused.
func (l *Logger) WriteErrors() uint64 { return l.writeErrors.Load() }

// Line is one audit line decoded, for tests and for consumers in Go; the field names and
// meanings are the schema (docs/audit-log.md).
type Line struct {
	Schema             string   `json:"schema"`
	Time               string   `json:"time"`
	Pod                string   `json:"pod,omitempty"`
	Namespace          string   `json:"namespace,omitempty"`
	Guardrail          string   `json:"guardrail"`
	GuardrailNamespace string   `json:"guardrailNamespace,omitempty"`
	ClusterScoped      bool     `json:"clusterScoped"`
	Generation         int64    `json:"generation"`
	Phase              string   `json:"phase"`
	Outcome            string   `json:"outcome"`
	Action             string   `json:"action,omitempty"`
	Mode               string   `json:"mode"`
	Categories         []string `json:"categories,omitempty"`
	Rules              []string `json:"rules,omitempty"`
	NotInspected       []string `json:"notInspected,omitempty"`
	Code               string   `json:"code,omitempty"`
	Escalated          bool     `json:"escalated,omitempty"`
	Partial            bool     `json:"partial,omitempty"`
	RequestID          string   `json:"requestId,omitempty"`
	TraceID            string   `json:"traceId,omitempty"`
	SpanID             string   `json:"spanId,omitempty"`
	Model              string   `json:"model,omitempty"`
	MCPServer          string   `json:"mcpServer,omitempty"`
	GuardVersion       string   `json:"guardVersion,omitempty"`
	Incarnation        string   `json:"incarnation,omitempty"`
	Dropped            uint64   `json:"dropped,omitempty"`
}

// actionOf is the guardrail action an outcome applied (or, in Report mode, would have):
// "" for the outcomes that are no action (failed, notInspected).
func actionOf(o guardv1.Outcome) string {
	switch o {
	case guardv1.OutcomeAllowed:
		return "Allow"
	case guardv1.OutcomeWarned, guardv1.OutcomeWouldWarn:
		return "Warn"
	case guardv1.OutcomeStripped, guardv1.OutcomeWouldStrip:
		return "Strip"
	case guardv1.OutcomeRedacted, guardv1.OutcomeWouldRedact:
		return "Redact"
	case guardv1.OutcomeBlocked, guardv1.OutcomeWouldBlock:
		return "Block"
	case guardv1.OutcomePseudonymized, guardv1.OutcomeWouldPseudonymize:
		return "Pseudonymize"
	}
	return ""
}
