package injection

import (
	"strconv"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
)

// The guard's audit log (cmd/guard --audit-log, docs/audit-log.md): a JSON line per
// guarded request's decision on the guard's stdout. The manager's --guard-audit-log is
// the default of every injected guard; a pod's guardv1.AnnotationAuditLog overrides it. Either
// way it is a per-pod setting carried in the guard's arguments, so VerifyGuard reads it
// back from them (settingsOf) and a pod injected before the default changed stays
// verified.

// resolveAuditLog applies the pod's guardv1.AnnotationAuditLog to the manager's default.
func resolveAuditLog(annotations map[string]string, cfg *Config, s *guardSettings) []refusal {
	s.auditLog = cfg.AuditLog
	raw, ok := annotations[guardv1.AnnotationAuditLog]
	if !ok {
		return nil
	}
	on, err := strconv.ParseBool(raw)
	if err != nil {
		return []refusal{{guardv1.AnnotationAuditLog, "must be true or false, got " + strconv.Quote(truncate(raw))}}
	}
	s.auditLog = on
	return nil
}

// auditLogArgs are the guard's arguments of its audit log: --audit-log=true when on,
// none when off (the guard's default).
func auditLogArgs(s guardSettings) []string {
	if !s.auditLog {
		return nil
	}
	return []string{"--" + flagAuditLog + "=true"}
}
