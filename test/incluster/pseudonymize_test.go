package incluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// TestAMailAssistantGetsItsAddressesBack runs config/samples/pseudonymize-pii.yaml as a
// user would: the chart installed, the fake provider of make dev (which answers "You said:
// <the prompt>"), and the demo app (config/dev/chat.yaml) in a namespace of its own,
// labelled as the sample's mail assistant. The app's answers carry its own addresses,
// streamed (the provider's 4-byte deltas split every placeholder) and not, and the guard's
// metrics count the values it masked: the provider echoed placeholders, which the guard
// restored.
func TestAMailAssistantGetsItsAddressesBack(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	const ns = "mail"
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", ns, "provider", "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
	})
	u.kubectl("apply", "-f", "config/dev/provider.yaml")
	u.kubectl("-n", "provider", "rollout", "status", "deploy/provider", "--timeout=2m")
	mustApply(t, u, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n  labels: {guardrail.dev/injection: enabled}\n")
	u.kubectl("-n", ns, "apply", "-f", "config/samples/pseudonymize-pii.yaml")
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "guardrail/pseudonymize-personal-data", "--timeout=1m")

	chat, err := os.ReadFile(filepath.Join(c.Root, "config", "dev", "chat.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	app := strings.Replace(string(chat), "namespace: demo", "namespace: "+ns, 1)
	app = strings.Replace(app, "      labels: {app: chat}", "      labels: {app: chat, app.kubernetes.io/part-of: mail-assistant}", 1)
	if !strings.Contains(app, "mail-assistant") {
		t.Fatal("config/dev/chat.yaml changed shape: its pod template's labels were not found")
	}
	mustApply(t, u, app)
	u.kubectl("-n", ns, "rollout", "status", "deploy/chat", "--timeout=2m")

	u.eventually(time.Minute, func(s string) bool { return s == "1/1" },
		"-n", ns, "get", "guardrail", "pseudonymize-personal-data", "-o", "jsonpath={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}")

	exec := func(cmd string) string {
		t.Helper()
		return u.kubectl("-n", ns, "exec", "deploy/chat", "-c", "app", "--", "sh", "-c", cmd)
	}
	t.Run("the app's first request, sent as it started, got its address back", func(t *testing.T) {
		var log string
		u.until(time.Minute, func() bool {
			log, _ = u.run("kubectl", "-n", ns, "logs", "deploy/chat", "-c", "app")
			return strings.TrimSpace(log) != ""
		})
		if !strings.Contains(log, "write to first.request@example.com") || strings.Contains(log, "<EMAIL_") {
			t.Fatalf("the app's first answer: %q", log)
		}
	})
	t.Run("answers streamed and not carry the app's addresses, restored", func(t *testing.T) {
		const prompt = "write to jane.doe@example.com and cc maria.gonzalez@correo.example.es today"
		whole := exec(wgetChat(chatBody(prompt, false)))
		if !strings.Contains(whole, "You said: "+prompt) {
			t.Fatalf("answer: %s", whole)
		}
		if got := streamedText(t, exec(wgetChat(chatBody(prompt, true)))); got != "You said: "+prompt {
			t.Fatalf("streamed answer %q", got)
		}
	})
	t.Run("the guard masked them: its metrics count the values, never them", func(t *testing.T) {
		metrics := exec("wget -qO- http://127.0.0.1:15090/metrics")
		series := `guard_pseudonymized_values_total{category="email",guardrail="mail/pseudonymize-personal-data",outcome="pseudonymized"} `
		i := strings.Index(metrics, series)
		if i < 0 {
			t.Fatalf("no %s in the guard's metrics", series)
		}
		if n := strings.Fields(metrics[i+len(series):])[0]; n == "0" || n == "1" || n == "2" {
			t.Errorf("%s%s: want one per address per request (5)", series, n)
		}
		if strings.Contains(metrics, "jane.doe") || strings.Contains(metrics, "first.request") {
			t.Error("an address reached the guard's metrics")
		}
	})
}
