package incluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
	"github.com/guardrail-dev/guardrail-operator/test/fakemcp"
)

// fakeMCPImageRef is test/fakemcp's image: the MCP server (fakemcp serve) and the app's
// MCP client (fakemcp client).
const fakeMCPImageRef = "localhost/guardrail/fakemcp:dev"

func fakeMCPImage(ctx context.Context, root string) (singlenode.Image, error) {
	return singlenode.GoImage(ctx, root, fakeMCPImageRef, map[string]string{"fakemcp": "./test/fakemcp/cmd/fakemcp"}, "fakemcp")
}

// mcpManifests are the MCP server in its own namespace, and an injected agent pod whose
// annotation has its guard front that server, with the policy of the agent's namespace.
const mcpManifests = `
apiVersion: v1
kind: Namespace
metadata: {name: mcp-tools}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: fakemcp, namespace: mcp-tools}
spec:
  selector: {matchLabels: {app: fakemcp}}
  template:
    metadata: {labels: {app: fakemcp}}
    spec:
      containers:
        - name: server
          image: IMAGE
          imagePullPolicy: Never
          args: [serve, ":8080"]
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /stats, port: 8080}, periodSeconds: 1}
          securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}
---
apiVersion: v1
kind: Service
metadata: {name: fakemcp, namespace: mcp-tools}
spec:
  selector: {app: fakemcp}
  ports: [{port: 8080, targetPort: 8080}]
---
apiVersion: v1
kind: Namespace
metadata:
  name: mcp-agent
  labels: {guardrail.dev/injection: enabled}
---
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: tools, namespace: mcp-agent}
spec:
  builtin:
    keywords: [{category: exfiltration, words: [exfiltrate]}]
    patterns: [{category: api-token, regex: 'tok_[a-z0-9]{8}'}]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: no-exfiltration, namespace: mcp-agent}
spec:
  mode: Enforce
  classifierRef: {name: tools}
  phases: [ToolCalls, ToolResults]
  categories: [exfiltration]
  threshold: 1
  action: Block
  reason: Tools may not move data out of this workspace.
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata: {name: redact-tokens, namespace: mcp-agent}
spec:
  mode: Enforce
  classifierRef: {name: tools}
  phases: [ToolResults]
  categories: [api-token]
  threshold: 1
  action: Redact
  reason: Tokens stay out of the model's context.
`

const mcpAgentPod = `
apiVersion: v1
kind: Pod
metadata:
  name: agent
  namespace: mcp-agent
  annotations:
    guardrail.dev/mcp-upstreams: workspace=http://fakemcp.mcp-tools.svc.cluster.local:8080/mcp
spec:
  containers:
    - name: app
      image: IMAGE
      imagePullPolicy: Never
      args: [idle]
      securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}
`

// TestAnInjectedPodsMCPTrafficIsGuarded: a pod annotated with an MCP upstream gets a guard
// that fronts it and an environment variable pointing at the guard; the agent in it
// calls the MCP server of another namespace through the guard, with the official Go
// SDK: a poisoned tool is hidden, a blocked call never reaches the server, a secret in a
// tool result is redacted, and the decisions are counted in the Guardrails' status.
func TestAnInjectedPodsMCPTrafficIsGuarded(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.LoadImages(ctx, fakeMCPImage); err != nil {
		t.Fatal(err)
	}
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", "mcp-agent", "mcp-tools", "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
	})
	mustApply(t, u, strings.ReplaceAll(mcpManifests, "IMAGE", fakeMCPImageRef))
	u.kubectl("-n", "mcp-tools", "rollout", "status", "deploy/fakemcp", "--timeout=2m")
	u.kubectl("-n", "mcp-agent", "wait", "--for=condition=Ready", "guardrails", "--all", "--timeout=1m")
	mustApply(t, u, strings.ReplaceAll(mcpAgentPod, "IMAGE", fakeMCPImageRef))
	u.kubectl("-n", "mcp-agent", "wait", "--for=condition=Ready", "pod/agent", "--timeout=2m")
	for _, g := range []string{"no-exfiltration", "redact-tokens"} {
		u.eventually(time.Minute, func(s string) bool { return s == "1/1" },
			"-n", "mcp-agent", "get", "guardrail", g, "-o", "jsonpath={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}")
	}

	t.Run("the app is given the guard's URL of the MCP server", func(t *testing.T) {
		u := user{t: t, c: c}
		env := u.kubectl("-n", "mcp-agent", "get", "pod", "agent", "-o", `jsonpath={.spec.containers[?(@.name=="app")].env[?(@.name=="GUARDRAIL_MCP_WORKSPACE_URL")].value}`)
		if env != "http://127.0.0.1:15080/mcp/workspace" {
			t.Fatalf("GUARDRAIL_MCP_WORKSPACE_URL = %q", env)
		}
	})

	var got struct {
		Tools          []string `json:"tools"`
		Allowed        string   `json:"allowed"`
		Blocked        string   `json:"blocked"`
		BlockedIsError bool     `json:"blockedIsError"`
		Read           string   `json:"read"`
	}
	out := u.kubectl("-n", "mcp-agent", "exec", "agent", "-c", "app", "--", "/fakemcp", "client")
	if err := json.Unmarshal([]byte(lastLine(out)), &got); err != nil {
		t.Fatalf("the agent's client printed %q: %v", out, err)
	}
	t.Run("a poisoned tool is hidden", func(t *testing.T) {
		if strings.Join(got.Tools, ",") != "echo,read,send" {
			t.Errorf("tools %v, want sync hidden", got.Tools)
		}
	})
	t.Run("a blocked call never reaches the server", func(t *testing.T) {
		u := user{t: t, c: c}
		if got.Allowed != "sent to team" {
			t.Errorf("the allowed call answered %q", got.Allowed)
		}
		if !got.BlockedIsError || got.Blocked != "Tools may not move data out of this workspace." {
			t.Errorf("the blocked call answered %q (isError %v)", got.Blocked, got.BlockedIsError)
		}
		stats := lastLine(u.kubectl("-n", "mcp-agent", "exec", "agent", "-c", "app", "--",
			"/fakemcp", "stats", "http://fakemcp.mcp-tools.svc.cluster.local:8080/stats"))
		if stats != `{"sends":1}` {
			t.Errorf("the server counted %s, want only the allowed send", stats)
		}
	})
	t.Run("a secret in a tool result is redacted", func(t *testing.T) {
		if strings.Contains(got.Read, fakemcp.Secret) || !strings.Contains(got.Read, "[REDACTED:api-token]") {
			t.Errorf("the read tool's result reached the agent as %q", got.Read)
		}
	})
	t.Run("the decisions are counted in the Guardrails' status", func(t *testing.T) {
		u := user{t: t, c: c}
		u.eventually(2*time.Minute, atLeast(2), "-n", "mcp-agent", "get", "guardrail", "no-exfiltration", "-o", "jsonpath={.status.decisions.blocked}")
		u.eventually(2*time.Minute, atLeast(1), "-n", "mcp-agent", "get", "guardrail", "redact-tokens", "-o", "jsonpath={.status.decisions.redacted}")
	})
	t.Run("the guard's metrics count the MCP server's traffic by its name", func(t *testing.T) {
		u := user{t: t, c: c}
		// The guard's admin listener, from the app container beside it.
		metrics := u.kubectl("-n", "mcp-agent", "exec", "agent", "-c", "app", "--", "/fakemcp", "stats", "http://127.0.0.1:15090/metrics")
		for _, series := range []string{`guard_mcp_requests_total{outcome="blocked",server="workspace"}`, `guard_mcp_tools_hidden_total{server="workspace"} 1`} {
			if !strings.Contains(metrics, series) {
				t.Errorf("metrics lack %s", series)
			}
		}
	})
}

// lastLine is the last non-empty line of kubectl's combined output (its own messages may
// come first).
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
