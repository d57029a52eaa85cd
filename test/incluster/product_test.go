package incluster

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/cluster"
)

// TestHelmInstallInjectsAndEnforces is the first run of a user: helm install of the chart
// with its default values, a namespace opted in, the shipped PII sample applied with kubectl,
// an app pod whose guard sidecar the webhook injects and the kubelet starts, a request from
// inside the app that the guard redacts, and the outcome counted back in the Guardrail's
// status — with no prompt text in the guard's log.
func TestHelmInstallInjectsAndEnforces(t *testing.T) {
	c := cluster.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)

	start := time.Now()
	u.helm("upgrade", "--install", "guardrail-operator", "charts/guardrail-operator", "-n", "guardrail-system", "--create-namespace", "--wait", "--timeout", "4m")
	t.Logf("helm install --wait: %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", "demo", "provider", "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", "guardrail-operator", "-n", "guardrail-system", "--wait")
	})
	// Every replica serves the webhook and the policy subscription: every one must be ready,
	// not only the elected leader.
	if got := u.kubectl("-n", "guardrail-system", "get", "deploy", "guardrail-operator", "-o", "jsonpath={.status.readyReplicas}/{.spec.replicas}"); got != "2/2" {
		t.Fatalf("ready replicas %s, want 2/2", got)
	}

	u.apply(providerManifest)
	u.kubectl("-n", "provider", "rollout", "status", "deploy/provider", "--timeout=2m")

	u.kubectl("create", "namespace", "demo")
	u.kubectl("label", "namespace", "demo", "guardrail.dev/injection=enabled")
	u.kubectl("-n", "demo", "apply", "-f", "config/samples/pii-secrets-redaction.yaml")
	appStart := time.Now()
	u.apply(appManifest)
	u.kubectl("-n", "demo", "wait", "--for=condition=Ready", "pod/app", "--timeout=2m")
	t.Logf("app pod with injected guard Ready in %s", time.Since(appStart).Round(time.Millisecond))

	t.Run("the webhook injected the guard and the kubelet runs it beside the app", func(t *testing.T) {
		u := user{t: t, c: c}
		names := u.kubectl("-n", "demo", "get", "pod", "app", "-o", "jsonpath={.spec.initContainers[*].name} {.spec.containers[*].name}")
		if !strings.Contains(names, "guardrail-guard") {
			t.Fatalf("containers %q: no guard", names)
		}
		ready := u.kubectl("-n", "demo", "get", "pod", "app", "-o", "jsonpath={.status.initContainerStatuses[*].ready} {.status.containerStatuses[*].ready}")
		if strings.Contains(ready, "false") {
			t.Errorf("readiness %q", ready)
		}
	})
	t.Run("the guard acknowledges the policy: ENFORCED 1/1", func(t *testing.T) {
		u := user{t: t, c: c}
		u.eventually(time.Minute, func(s string) bool { return s == "1/1" },
			"-n", "demo", "get", "guardrail", "redact-pii-secrets", "-o", "jsonpath={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}")
	})
	t.Run("a request from the app goes through its guard, which redacts the answer", func(t *testing.T) {
		u := user{t: t, c: c}
		out := u.kubectl("-n", "demo", "exec", "app", "-c", "app", "--", "sh", "-c",
			`wget -qO- --header 'Content-Type: application/json' --post-data '{"model":"demo","messages":[{"role":"user","content":"write to jane.doe@example.com"}]}' "$OPENAI_BASE_URL/chat/completions"`)
		if strings.Contains(out, "jane.doe@example.com") || !strings.Contains(out, "[REDACTED:email]") {
			t.Fatalf("answer through the guard: %s", out)
		}
		if !strings.Contains(out, "You said: write to") {
			t.Errorf("the answer did not come from the provider: %s", out)
		}
	})
	t.Run("a streamed answer, the address split across 4-character deltas, reaches the app with no part of it", func(t *testing.T) {
		u := user{t: t, c: c}
		const addr = "maria.gonzalez-iglesias@correo.example.es"
		out := u.kubectl("-n", "demo", "exec", "app", "-c", "app", "--", "sh", "-c",
			`wget -qO- --header 'Content-Type: application/json' --post-data '{"model":"demo","stream":true,"messages":[{"role":"user","content":"reply to `+addr+` today"}]}' "$OPENAI_BASE_URL/chat/completions"`)
		text := streamedText(t, out)
		for _, part := range []string{"maria", "gonzalez", "iglesias", "correo", "example.es", "@"} {
			if strings.Contains(text, part) {
				t.Errorf("the client received %q of the address: %q", part, text)
			}
		}
		if !strings.Contains(text, "[REDACTED:email]") || !strings.HasSuffix(strings.TrimSpace(text), "today") {
			t.Errorf("streamed answer %q: want the address redacted and the text after it delivered", text)
		}
	})
	t.Run("the decision is counted in the Guardrail's status", func(t *testing.T) {
		u := user{t: t, c: c}
		u.eventually(time.Minute, func(s string) bool { n, _ := strconv.Atoi(s); return n >= 1 },
			"-n", "demo", "get", "guardrail", "redact-pii-secrets", "-o", "jsonpath={.status.decisions.redacted}")
	})
	t.Run("no prompt or completion text in the guard's or the manager's logs", func(t *testing.T) {
		u := user{t: t, c: c}
		logs := u.kubectl("-n", "demo", "logs", "app", "-c", "guardrail-guard") +
			u.kubectl("-n", "guardrail-system", "logs", "-l", "app.kubernetes.io/name=guardrail-operator", "--tail=-1")
		for _, secret := range []string{"jane.doe", "example.com", "write to"} {
			if strings.Contains(logs, secret) {
				t.Errorf("logs contain %q", secret)
			}
		}
	})
}

// streamedText joins the content deltas of an OpenAI chat completion stream.
func streamedText(t *testing.T, sse string) string {
	t.Helper()
	var b strings.Builder
	done := false
	for _, line := range strings.Split(sse, "\n") {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("stream event %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			b.WriteString(c.Delta.Content)
		}
	}
	if !done {
		t.Fatalf("the stream did not end with [DONE]: %q", sse)
	}
	return b.String()
}

const providerManifest = `
apiVersion: v1
kind: Namespace
metadata: {name: provider}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: provider, namespace: provider}
spec:
  selector: {matchLabels: {app: provider}}
  template:
    metadata: {labels: {app: provider}}
    spec:
      containers:
      - name: provider
        image: ` + cluster.ProviderImageRef + `
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
        securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}
---
apiVersion: v1
kind: Service
metadata: {name: provider, namespace: provider}
spec:
  selector: {app: provider}
  ports: [{port: 8080}]
`

// appManifest: an app whose OpenAI base URL the injector points at its guard, and whose
// guard forwards to the fake provider (annotation).
const appManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: app
  namespace: demo
  labels: {app: chat}
  annotations:
    guardrail.dev/openai-upstream: http://provider.provider.svc.cluster.local:8080
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ` + cluster.BusyboxImage + `
    imagePullPolicy: Never
    command: ["sleep", "100000"]
    securityContext: {runAsUser: 65532, runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}
`
