package incluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// TestAPlatformBaselineBindsEveryTenant plays the cluster baselines as a platform team and
// a tenant would, on the real cluster with the chart's default values: the platform
// applies config/samples/cluster (a ClusterGuardrail blocking credentials in prompts); a
// tenant namespace that has no Guardrail of its own is enforced by it; the tenant, with
// namespace admin (the built-in admin role, which the chart's roles aggregate into),
// adds a Report Guardrail on the same content, which does not weaken it, and cannot
// edit or delete the cluster objects.
func TestAPlatformBaselineBindsEveryTenant(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	const ns = "baseline-tenant"
	const token = "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"
	// The guard refuses an Input block with HTTP 400 and the Guardrail's reason; which
	// Guardrail refused shows in its status (a Report Guardrail never refuses).
	const refusal = "400"
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "-f", "config/samples/cluster/", "--ignore-not-found", "--wait=false")
		_, _ = u.run("kubectl", "delete", "namespace", ns, "provider", "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
	})
	u.kubectl("apply", "-f", "config/dev/provider.yaml")
	u.kubectl("apply", "-f", "config/samples/cluster/")
	u.kubectl("wait", "--for=condition=Ready", "clusterguardrail/no-credentials-to-models", "clusterclassifier/platform-secrets", "--timeout=1m")
	mustApply(t, u, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
  labels: {guardrail.dev/injection: enabled}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: tenant-admin, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-admin, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: ServiceAccount, name: tenant-admin, namespace: %[1]s}]
`, ns))
	admin := tenant{user: u, as: "system:serviceaccount:" + ns + ":tenant-admin"}
	u.kubectl("-n", "provider", "rollout", "status", "deploy/provider", "--timeout=2m")

	chat, err := os.ReadFile(filepath.Join(c.Root, "config", "dev", "chat.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := admin.apply(strings.Replace(string(chat), "namespace: demo", "namespace: "+ns, 1)); err != nil {
		t.Fatalf("the tenant's app: %v\n%s", err, out)
	}
	u.kubectl("-n", ns, "rollout", "status", "deploy/chat", "--timeout=2m")
	send := func(u user, content string) string {
		u.t.Helper()
		// Busybox wget prints a refusal's status, not its body, and fails: keep both.
		cmd := `wget -qO- --header 'Content-Type: application/json' --post-data '` + chatBody(content, false) +
			`' "$OPENAI_BASE_URL/chat/completions" 2>&1 || true`
		return u.kubectlStdout("-n", ns, "exec", "deploy/chat", "-c", "app", "--", "sh", "-c", cmd)
	}

	t.Run("a tenant namespace without Guardrails of its own is enforced", func(t *testing.T) {
		u := user{t: t, c: c}
		u.eventually(2*time.Minute, func(s string) bool { return s != "" && s != "0" },
			"get", "clusterguardrail", "no-credentials-to-models", "-o", "jsonpath={.status.enforcement.acknowledgedPods}")
		out := send(u, "deploy with "+token)
		if !strings.Contains(out, refusal) || strings.Contains(out, "You said") {
			t.Fatalf("a prompt with a credential: %s", out)
		}
		if out := send(u, "deploy the service"); !strings.Contains(out, "You said: deploy the service") {
			t.Fatalf("a prompt without one: %s", out)
		}
		u.eventually(time.Minute, atLeast(1), "get", "clusterguardrail", "no-credentials-to-models", "-o", "jsonpath={.status.decisions.blocked}")
		u.eventually(time.Minute, func(s string) bool { return strings.Contains(s, ns) },
			"get", "clusterguardrail", "no-credentials-to-models", "-o", "jsonpath={.status.namespaces[*].namespace}")
	})

	t.Run("the tenant's Report Guardrail on the same content does not weaken it", func(t *testing.T) {
		u, admin := user{t: t, c: c}, tenant{user: user{t: t, c: c}, as: admin.as}
		blocked := u.kubectl("get", "clusterguardrail", "no-credentials-to-models", "-o", "jsonpath={.status.decisions.blocked}")
		if out, err := admin.apply(fmt.Sprintf(`
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: secrets, namespace: %[1]s}
spec:
  builtin: {packs: [secrets]}
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: secrets-report, namespace: %[1]s}
spec:
  mode: Report
  classifierRef: {name: secrets}
  phases: [Input]
  threshold: 1
  action: Block
  reason: Would be refused by the tenant.
`, ns)); err != nil {
			t.Fatalf("the tenant could not add its Guardrail: %v\n%s", err, out)
		}
		u.eventually(time.Minute, func(s string) bool { return s == "1/1" },
			"-n", ns, "get", "guardrail", "secrets-report", "-o", "jsonpath={.status.enforcement.summary}")
		out := send(u, "deploy with "+token)
		if !strings.Contains(out, refusal) || strings.Contains(out, "You said") {
			t.Fatalf("with the tenant's Report Guardrail, a prompt with a credential: %s", out)
		}
		// The ClusterGuardrail, which runs first, refused it: the tenant's Report
		// Guardrail never saw the request it ended.
		n, _ := strconv.Atoi(blocked)
		u.eventually(time.Minute, atLeast(n+1), "get", "clusterguardrail", "no-credentials-to-models", "-o", "jsonpath={.status.decisions.blocked}")
	})

	t.Run("the tenant cannot edit or delete the cluster objects", func(t *testing.T) {
		u, admin := user{t: t, c: c}, tenant{user: user{t: t, c: c}, as: admin.as}
		for _, args := range [][]string{
			{"delete", "clusterguardrail", "no-credentials-to-models"},
			{"patch", "clusterguardrail", "no-credentials-to-models", "--type=merge", "-p", `{"spec":{"mode":"Report"}}`},
			{"delete", "clusterclassifier", "platform-secrets"},
			{"label", "clusterguardrail", "no-credentials-to-models", "tenant=was-here"},
		} {
			out, err := admin.try(args...)
			if err == nil || !strings.Contains(out, "forbidden") {
				t.Errorf("kubectl %s as the namespace admin: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		if got := u.kubectl("get", "clusterguardrail", "no-credentials-to-models", "-o", "jsonpath={.spec.mode}"); got != "Enforce" {
			t.Errorf("the ClusterGuardrail's mode is %q", got)
		}
	})
}
