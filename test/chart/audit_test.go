package chart

import (
	"slices"
	"testing"
)

// managerArgs are the manager container's arguments in a render.
func managerArgs(t *testing.T, values string) []string {
	t.Helper()
	d := find(objects(t, renderYAML(t, "guardrail-system", values)), "Deployment", "guardrail-operator")
	if d == nil {
		t.Fatal("no Deployment guardrail-operator")
	}
	for _, c := range d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
		c := c.(map[string]any)
		if c["name"] != "manager" {
			continue
		}
		var args []string
		for _, a := range c["args"].([]any) {
			args = append(args, a.(string))
		}
		return args
	}
	t.Fatal("no manager container")
	return nil
}

// TestTheAuditLogsAreOptIn: neither audit log is on by default; guard.auditLog and
// controlPlane.decisionAuditLog turn on the guards' (through the injector) and the
// manager's.
func TestTheAuditLogsAreOptIn(t *testing.T) {
	off := managerArgs(t, "")
	for _, flag := range []string{"--guard-audit-log", "--decision-audit-log"} {
		if slices.Contains(off, flag) {
			t.Errorf("%s by default", flag)
		}
	}
	on := managerArgs(t, "guard: {auditLog: true}\ncontrolPlane: {decisionAuditLog: true}")
	for _, flag := range []string{"--guard-audit-log", "--decision-audit-log"} {
		if !slices.Contains(on, flag) {
			t.Errorf("%s missing from %v", flag, on)
		}
	}
}
