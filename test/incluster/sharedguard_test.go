package incluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// TestAnAppWithoutASidecarCallsThroughASharedGuard runs docs/shared-guard.md as a user
// would: the chart installed, a namespace that is not opted in to injection (its app
// cannot take a sidecar), the redaction sample, and config/samples/shared/shared-guard.yaml
// pointed at the fake provider. The app sets OPENAI_BASE_URL to the SharedGuard's Service
// and its prompts come back redacted, streamed and not; the Guardrail counts the shared
// guard's pods as enforcing; a tenant's pod labelled like the guard gets none of the
// Service's traffic.
func TestAnAppWithoutASidecarCallsThroughASharedGuard(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	const ns = "team-a"
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", ns, "provider", "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
	})
	u.kubectl("apply", "-f", "config/dev/provider.yaml")
	u.kubectl("-n", "provider", "rollout", "status", "deploy/provider", "--timeout=2m")
	mustApply(t, u, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
	u.kubectl("-n", ns, "apply", "-f", "config/samples/pii-secrets-redaction.yaml")
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "guardrail/redact-pii-secrets", "--timeout=1m")

	sample, err := os.ReadFile(filepath.Join(c.Root, "config", "samples", "shared", "shared-guard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sg := strings.Replace(string(sample), "spec:\n", "spec:\n  openAIUpstream: http://provider.provider.svc.cluster.local:8080\n", 1)
	start := time.Now()
	mustApply(t, u, sg)
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "sharedguard/llm-guard", "--timeout=3m")
	t.Logf("SharedGuard Ready in %s", time.Since(start).Round(time.Millisecond))
	if got := u.kubectl("-n", ns, "get", "sharedguard", "llm-guard", "-o", "jsonpath={.status.readyReplicas} {.status.url}"); got != "2 http://llm-guard."+ns+".svc" {
		t.Fatalf("status: %q", got)
	}

	mustApply(t, u, `apiVersion: v1
kind: Pod
metadata:
  name: app
  namespace: `+ns+`
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: localhost/guardrail/busybox:dev
      imagePullPolicy: Never
      command: [sleep, infinity]
      env:
        - {name: OPENAI_BASE_URL, value: "http://llm-guard.`+ns+`.svc/v1"}
      securityContext:
        runAsUser: 65532
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
        seccompProfile: {type: RuntimeDefault}
`)
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/app", "--timeout=2m")
	if names := u.kubectl("-n", ns, "get", "pod", "app", "-o", "jsonpath={.spec.initContainers[*].name} {.spec.containers[*].name}"); strings.Contains(names, "guardrail-guard") {
		t.Fatalf("the app got a sidecar (%s): the namespace is not opted in", names)
	}
	exec := func(cmd string) string {
		t.Helper()
		return u.kubectl("-n", ns, "exec", "app", "--", "sh", "-c", cmd)
	}

	t.Run("the app's prompts come back redacted, streamed and not", func(t *testing.T) {
		const prompt = "write to jane.doe@example.com today"
		whole := exec(wgetChat(chatBody(prompt, false)))
		if strings.Contains(whole, "jane.doe@") || !strings.Contains(whole, "[REDACTED:email]") {
			t.Fatalf("answer: %s", whole)
		}
		streamed := streamedText(t, exec(wgetChat(chatBody(prompt, true))))
		if strings.Contains(streamed, "jane.doe@") || !strings.Contains(streamed, "[REDACTED:email]") {
			t.Fatalf("streamed answer %q", streamed)
		}
	})
	t.Run("the Guardrail counts the shared guard's pods as enforcing", func(t *testing.T) {
		u := user{t: t, c: c}
		u.eventually(time.Minute, func(s string) bool { return s == "2/2" },
			"-n", ns, "get", "guardrail", "redact-pii-secrets", "-o", "jsonpath={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}")
	})
	t.Run("a tenant's pod labelled like the guard receives none of the Service's traffic", func(t *testing.T) {
		u := user{t: t, c: c}
		mustApply(t, u, `apiVersion: v1
kind: Pod
metadata:
  name: impostor
  namespace: `+ns+`
  labels: {app: chat, guardrail.dev/shared-guard: llm-guard, guardrail.dev/injected: "true"}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: listener
      image: localhost/guardrail/busybox:dev
      imagePullPolicy: Never
      command: [sh, -c, "while true; do echo -e 'HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nimpostor' | nc -l -p 15080; done"]
      ports: [{containerPort: 15080}]
      securityContext:
        runAsUser: 65532
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
        seccompProfile: {type: RuntimeDefault}
`)
		u.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/impostor", "--timeout=2m")
		ip := u.kubectl("-n", ns, "get", "pod", "impostor", "-o", "jsonpath={.status.podIP}")
		time.Sleep(3 * time.Second) // the reconcile after the pod's last event
		eps := u.kubectl("-n", ns, "get", "endpointslice", "llm-guard-ipv4", "-o", "jsonpath={.endpoints[*].addresses[0]}")
		if ip == "" || strings.Contains(" "+eps+" ", " "+ip+" ") || len(strings.Fields(eps)) != 2 {
			t.Fatalf("the Service's endpoints %q; the impostor is at %s", eps, ip)
		}
		for range 10 {
			if out := exec(wgetChat(chatBody("hello", false))); strings.Contains(out, "impostor") {
				t.Fatalf("a call through the Service reached the impostor: %q", out)
			}
		}
	})
}
