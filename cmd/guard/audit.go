package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"runtime/debug"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/audit"
	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom"
)

// auditFlags are the audit log's settings (runtime/audit, docs/audit-log.md).
type auditFlags struct {
	enabled bool
	rate    float64
	burst   int
	// out is where the lines go: stdout, or a test's buffer.
	out io.Writer
}

// register binds the audit log's flags on fs.
func (a *auditFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&a.enabled, guardv1.FlagAuditLog, false, "Write the audit log to stdout: one JSON line (schema "+audit.Schema+
		") per guarded request, guardrail and outcome, with ids and names only, never content. Off by default.")
	fs.Float64Var(&a.rate, "audit-log-rate", 500, "Audit lines written per second on average; lines beyond it (and "+
		"--audit-log-burst) are dropped and counted in guard_audit_lines_dropped_total. 0 writes every line.")
	fs.IntVar(&a.burst, "audit-log-burst", 2000, "Audit lines that may be written at once above --audit-log-rate.")
}

// startAudit installs the audit log on tel when --audit-log is set. The lines carry the
// incarnation the guard's decision counts go to the control plane under (reporter's),
// or one of their own for a standalone guard.
func startAudit(o options, tel *telemetry.Telemetry, reporter *controlplane.Reporter, log *slog.Logger) error {
	a := o.audit
	if !a.enabled {
		return nil
	}
	if a.rate < 0 || a.burst < 1 {
		return errors.New("--audit-log-rate must not be negative and --audit-log-burst must be at least 1")
	}
	out := a.out
	if out == nil {
		out = os.Stdout
	}
	var incarnation string
	if reporter != nil && reporter.Agg != nil {
		incarnation = reporter.Agg.Incarnation()
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		incarnation = hex.EncodeToString(b[:])
	}
	l := audit.New(audit.Config{Out: out, Pod: o.pod, Namespace: o.namespace, Version: guardVersion(),
		Incarnation: incarnation, Rate: a.rate, Burst: a.burst})
	l.Install(tel)
	registerAuditMetrics(tel.Registry, l)
	log.Info("Audit log on (stdout)", "schema", audit.Schema, "rate", a.rate, "burst", a.burst, "incarnation", incarnation)
	return nil
}

// registerAuditMetrics exports what the audit log wrote and dropped.
func registerAuditMetrics(reg *prom.Registry, l *audit.Logger) {
	reg.NewCounterFunc(prom.Opts{Name: "guard_audit_lines_total", Help: "Audit log lines written."},
		func() float64 { return float64(l.Written()) })
	reg.NewCounterFunc(prom.Opts{Name: "guard_audit_lines_dropped_total",
		Help: "Audit log lines dropped by the rate limit (--audit-log-rate, --audit-log-burst)."},
		func() float64 { return float64(l.Dropped()) })
	reg.NewCounterFunc(prom.Opts{Name: "guard_audit_write_errors_total", Help: "Audit log lines stdout did not take."},
		func() float64 { return float64(l.WriteErrors()) })
}

// guardVersion is the guard's module version, else its VCS revision, else "devel".
func guardVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
