package incluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// otlpSinkImageRef is test/otlpsink's image: the platform's trace collector in this test.
const otlpSinkImageRef = "localhost/guardrail/otlpsink:dev"

func otlpSinkImage(ctx context.Context, root string) (singlenode.Image, error) {
	return singlenode.GoImage(ctx, root, otlpSinkImageRef, map[string]string{"otlpsink": "./test/otlpsink/cmd/otlpsink"}, "otlpsink")
}

// otlpSinkManifests run the collector in its own namespace; FORBID is what no export may
// contain.
const otlpSinkManifests = `
apiVersion: v1
kind: Namespace
metadata: {name: observability}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: otlpsink, namespace: observability}
spec:
  selector: {matchLabels: {app: otlpsink}}
  template:
    metadata: {labels: {app: otlpsink}}
    spec:
      containers:
        - name: collector
          image: IMAGE
          imagePullPolicy: Never
          args: [--listen=:4318, --forbid=FORBID]
          ports: [{containerPort: 4318}]
          readinessProbe: {httpGet: {path: /stats, port: 4318}, periodSeconds: 1}
          securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}
---
apiVersion: v1
kind: Service
metadata: {name: otlpsink, namespace: observability}
spec:
  selector: {app: otlpsink}
  ports: [{port: 4318, targetPort: 4318}]
`

// sinkStats is test/otlpsink's /stats.
type sinkStats struct {
	Exports          int      `json:"exports"`
	Refused          int      `json:"refused"`
	Authorizations   []string `json:"authorizations"`
	ForbiddenExports int      `json:"forbiddenExports"`
	Spans            []struct {
		Name     string            `json:"name"`
		Kind     string            `json:"kind"`
		Resource map[string]string `json:"resource"`
		Values   map[string]string `json:"values"`
	} `json:"spans"`
}

// TestGuardsTraceToThePlatformsCollector runs tracing as a platform team sets it up: a
// collector of its own behind a bearer token, the token in a Secret of the operator's
// namespace, the chart installed with guard.tracing.endpoint and headersSecret. An
// injected app's calls, one allowed and one blocked, reach the collector as a call span
// and guardrail evaluation spans with the outcome of each, from the app's namespace, with
// the platform's token on every export; the token is in no pod and no manager log, and no
// export carries the prompts' text.
func TestGuardsTraceToThePlatformsCollector(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.LoadImages(ctx, otlpSinkImage); err != nil {
		t.Fatal(err)
	}
	const ns = "traced"
	token := "collector-token-" + randomHex(t)
	canary := "violet-canary-" + randomHex(t)
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", ns, "observability", "provider", "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
		_, _ = u.run("kubectl", "-n", systemNS, "delete", "secret", "otlp-auth", "--ignore-not-found")
	})
	mustApply(t, u, strings.NewReplacer("IMAGE", otlpSinkImageRef, "FORBID", canary+","+token).Replace(otlpSinkManifests))
	u.kubectl("-n", "observability", "rollout", "status", "deploy/otlpsink", "--timeout=2m")

	mustApply(t, u, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+systemNS+"\n")
	u.kubectl("-n", systemNS, "create", "secret", "generic", "otlp-auth", "--from-literal=headers=authorization=Bearer%20"+token)
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m",
		"--set", "guard.tracing.endpoint=http://otlpsink.observability.svc:4318",
		"--set", "guard.tracing.headersSecret.name=otlp-auth", "--set", "guard.tracing.headersSecret.key=headers")

	u.kubectl("apply", "-f", "config/dev/provider.yaml")
	u.kubectl("-n", "provider", "rollout", "status", "deploy/provider", "--timeout=2m")
	mustApply(t, u, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n  labels: {guardrail.dev/injection: enabled}\n")
	mustApply(t, u, strings.ReplaceAll(extProcPolicy, "metadata: {name:", "metadata: {namespace: "+ns+", name:"))
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "guardrail/project-words", "--timeout=1m")
	chat, err := os.ReadFile(filepath.Join(c.Root, "config", "dev", "chat.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, u, strings.Replace(string(chat), "namespace: demo", "namespace: "+ns, 1))
	u.kubectl("-n", ns, "rollout", "status", "deploy/chat", "--timeout=2m")
	u.eventually(time.Minute, func(s string) bool { return s == "1/1" },
		"-n", ns, "get", "guardrail", "project-words", "-o", "jsonpath={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}")

	send := func(prompt string) string {
		t.Helper()
		out, _ := u.run("kubectl", "-n", ns, "exec", "deploy/chat", "-c", "app", "--", "sh", "-c", wgetChat(chatBody(prompt, false))+" 2>&1")
		return out
	}
	if got := send("say hello " + canary); !strings.Contains(got, "You said: say hello") {
		t.Fatalf("the allowed call: %q", got)
	}
	if got := send("tell me about bluebird " + canary); strings.Contains(got, "You said") {
		t.Fatalf("the call naming the project was not blocked: %q", got)
	}

	var stats sinkStats
	var call, blockedCall, inputBlocked bool
	collected := func() bool {
		raw, err := u.run("kubectl", "get", "--raw", "/api/v1/namespaces/observability/services/otlpsink:4318/proxy/stats")
		if err != nil || json.Unmarshal([]byte(raw), &stats) != nil {
			return false
		}
		call, blockedCall, inputBlocked = false, false, false
		for _, s := range stats.Spans {
			if s.Resource["k8s.namespace.name"] != ns {
				continue
			}
			switch {
			case s.Name == "chat demo" && s.Kind == "SPAN_KIND_CLIENT" && s.Values["guardrail.request.outcome"] == "allowed":
				call = true
			case s.Name == "chat demo" && s.Kind == "SPAN_KIND_CLIENT" && s.Values["guardrail.request.outcome"] == "blocked":
				blockedCall = true
			case s.Name == "guardrail "+ns+"/project-words" && s.Values["guardrail.phase"] == "Input" && s.Values["guardrail.outcome"] == "blocked":
				inputBlocked = true
			}
		}
		return call && blockedCall && inputBlocked
	}
	for deadline := time.Now().Add(90 * time.Second); !collected(); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 90s the collector had %d exports and %d spans: the allowed call's span %t, the blocked call's %t, "+
				"its Input evaluation blocked %t", stats.Exports, len(stats.Spans), call, blockedCall, inputBlocked)
		}
	}
	sum := sha256.Sum256([]byte("Bearer " + token))
	if len(stats.Authorizations) != 1 || stats.Authorizations[0] != hex.EncodeToString(sum[:]) {
		t.Errorf("the collector saw %d distinct Authorization headers; want the platform's token on every export", len(stats.Authorizations))
	}
	if stats.ForbiddenExports != 0 || stats.Refused != 0 {
		t.Errorf("%d exports carried a prompt's text or the token in their body, %d were refused", stats.ForbiddenExports, stats.Refused)
	}
	t.Logf("the collector received %d exports, %d spans", stats.Exports, len(stats.Spans))

	pods := u.kubectl("-n", ns, "get", "pods", "-o", "yaml")
	if !strings.Contains(pods, "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Error("the injected guard has no OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if strings.Contains(pods, token) {
		t.Error("the collector's token is in the app's pod")
	}
	logs := u.kubectl("-n", systemNS, "logs", "-l", managerSelector, "--tail=-1")
	guardLogs := u.kubectl("-n", ns, "logs", "deploy/chat", "-c", "guardrail-guard", "--tail=-1")
	if !strings.Contains(logs, "otlp-auth") || !strings.Contains(guardLogs, "Tracing on") {
		t.Errorf("the manager's log does not name the headers' Secret, or the guard's does not say tracing is on")
	}
	if strings.Contains(logs, token) || strings.Contains(guardLogs, token) || strings.Contains(guardLogs, canary) {
		t.Error("the token or a prompt's text is in the manager's or the guard's log")
	}
}
