package incluster

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// TestAKeylessAppCallsItsProviderOnlyThroughItsGuard plays keyless apps
// as a platform team and a tenant would, on the real cluster with the chart's default
// values. The platform runs a provider that checks API keys (the fake provider with
// --keys-file), keeps its key in a Secret of the operator's namespace and declares a
// ModelProvider selecting the tenant's namespace, which is labelled required and names
// the provider as its pods' default. The tenant's namespace admin deploys an app that
// holds no key. Then: the app gets answers through its guard; the same request sent from
// the app straight to the provider is refused for lack of a key; nothing the namespace
// admin can read in the namespace, nor the app's environment, holds the key; rotating the
// Secret changes the key the provider sees within a bound; usage reaches the
// ModelProvider's status and the guard's metrics.
func TestAKeylessAppCallsItsProviderOnlyThroughItsGuard(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	const ns, providerNS, mp = "keyless", "keyless-provider", "team-openai"
	key1, key2 := "sk-test-"+randomHex(t), "sk-test-"+randomHex(t)
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "modelprovider", mp, "--ignore-not-found", "--wait=false")
		_, _ = u.run("kubectl", "delete", "namespace", ns, providerNS, "--ignore-not-found", "--wait=false")
		_, _ = u.run("kubectl", "-n", systemNS, "delete", "secret", mp, "--ignore-not-found")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
	})
	// The provider accepts both keys, so that the rotation below is seen in which key it
	// was sent, not in a refusal.
	mustApply(t, u, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: keys, namespace: %[1]s}
data: {keys: "%[2]s %[3]s"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: provider, namespace: %[1]s}
spec:
  selector: {matchLabels: {app: provider}}
  template:
    metadata: {labels: {app: provider}}
    spec:
      containers:
        - name: provider
          image: localhost/guardrail/fakeprovider:dev
          imagePullPolicy: Never
          args: [--keys-file=/keys/keys]
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
          volumeMounts: [{name: keys, mountPath: /keys}]
          securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
      volumes: [{name: keys, configMap: {name: keys}}]
---
apiVersion: v1
kind: Service
metadata: {name: provider, namespace: %[1]s}
spec:
  selector: {app: provider}
  ports: [{port: 8080}]
`, providerNS, key1, key2))
	u.kubectl("-n", systemNS, "create", "secret", "generic", mp, "--from-literal=apiKey="+key1)
	mustApply(t, u, fmt.Sprintf(`
apiVersion: guardrail.dev/v1alpha1
kind: ModelProvider
metadata: {name: %[1]s}
spec:
  api: OpenAI
  url: http://provider.%[2]s.svc.cluster.local:8080/v1
  credentialsSecretRef: {name: %[1]s}
  namespaceSelector: {matchLabels: {llm-access: team-openai}}
---
apiVersion: v1
kind: Namespace
metadata:
  name: %[3]s
  labels: {guardrail.dev/injection: required, llm-access: team-openai}
  annotations: {guardrail.dev/provider: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: tenant-admin, namespace: %[3]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-admin, namespace: %[3]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: ServiceAccount, name: tenant-admin, namespace: %[3]s}]
`, mp, providerNS, ns))
	u.kubectl("wait", "--for=condition=Ready", "modelprovider/"+mp, "--timeout=1m")
	u.kubectl("-n", providerNS, "rollout", "status", "deploy/provider", "--timeout=2m")
	admin := tenant{user: u, as: "system:serviceaccount:" + ns + ":tenant-admin"}
	if out, err := admin.apply(fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, namespace: %s}
spec:
  selector: {matchLabels: {app: chat}}
  template:
    metadata: {labels: {app: chat}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: localhost/guardrail/busybox:dev
          imagePullPolicy: Never
          command: [sleep, infinity]
          securityContext: {runAsUser: 65532, runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`, ns)); err != nil {
		t.Fatalf("the tenant's app: %v\n%s", err, out)
	}
	u.kubectl("-n", ns, "rollout", "status", "deploy/chat", "--timeout=2m")
	exec := func(u user, cmd string) string {
		u.t.Helper()
		return u.kubectlStdout("-n", ns, "exec", "deploy/chat", "-c", "app", "--", "sh", "-c", cmd)
	}
	// What an SDK does with OPENAI_API_KEY and OPENAI_BASE_URL; busybox wget prints a
	// refusal's status line and fails: keep both.
	call := func(u user, base, key, content string, stream bool) string {
		u.t.Helper()
		return exec(u, `wget -qO- --header 'Content-Type: application/json' --header "Authorization: Bearer `+key+`" --post-data '`+
			chatBody(content, stream)+`' "`+base+`/chat/completions" 2>&1 || true`)
	}
	direct := "http://provider." + providerNS + ".svc.cluster.local:8080/v1"
	lastKey := func(u user) string {
		u.t.Helper()
		return strings.TrimSpace(exec(u, "wget -qO- http://provider."+providerNS+".svc.cluster.local:8080/last-key"))
	}

	t.Run("the keyless app gets answers through its guard", func(t *testing.T) {
		u := user{t: t, c: c}
		if env := exec(u, "echo $OPENAI_API_KEY"); strings.TrimSpace(env) != "guardrail-keyless-placeholder" {
			t.Fatalf("the app's OPENAI_API_KEY is %q, want the placeholder", env)
		}
		if out := call(u, "$OPENAI_BASE_URL", "$OPENAI_API_KEY", "hello through the guard", false); !strings.Contains(out, "You said: hello through the guard") {
			t.Fatalf("through the guard: %s", out)
		}
		if got := streamedText(t, call(u, "$OPENAI_BASE_URL", "$OPENAI_API_KEY", "streamed through the guard", true)); got != "You said: streamed through the guard" {
			t.Fatalf("streamed through the guard: %q", got)
		}
		if got := lastKey(u); got != fingerprint(key1) {
			t.Errorf("the provider last saw key %s, want the ModelProvider's (%s)", got, fingerprint(key1))
		}
	})

	t.Run("the same request straight to the provider fails for lack of a key", func(t *testing.T) {
		u := user{t: t, c: c}
		for _, key := range []string{"$OPENAI_API_KEY", ""} {
			if out := call(u, direct, key, "around the guard", false); !strings.Contains(out, "401") || strings.Contains(out, "You said") {
				t.Errorf("straight to the provider with key %q: %s", key, out)
			}
		}
	})

	t.Run("a key of the app's own is refused by the guard, which says why", func(t *testing.T) {
		u := user{t: t, c: c}
		if out := call(u, "$OPENAI_BASE_URL", key2, "with a key of my own", false); !strings.Contains(out, "400") || strings.Contains(out, "You said") {
			t.Errorf("a request carrying a real-looking key: %s", out)
		}
	})

	t.Run("nothing the namespace admin can read holds the key", func(t *testing.T) {
		u, admin := user{t: t, c: c}, tenant{user: user{t: t, c: c}, as: admin.as}
		var seen strings.Builder
		for _, args := range [][]string{
			{"-n", ns, "get", "all,secrets,configmaps,serviceaccounts,events,leases,roles,rolebindings,guardrails,classifiers,endpointslices", "-o", "yaml"},
			{"-n", ns, "get", "pods", "-o", "yaml"},
			{"-n", ns, "exec", "deploy/chat", "-c", "app", "--", "sh", "-c", "env; cat /proc/*/environ 2>/dev/null; wget -qO- http://127.0.0.1:15090/metrics"},
		} {
			out, err := admin.try(args...)
			if err != nil {
				t.Fatalf("kubectl %s as the namespace admin: %v\n%s", strings.Join(args, " "), err, out)
			}
			seen.WriteString(out)
		}
		if strings.Contains(seen.String(), key1) || strings.Contains(seen.String(), key2) {
			t.Fatal("the provider's key is readable by the namespace admin")
		}
		for _, args := range [][]string{
			{"-n", systemNS, "get", "secret", mp, "-o", "yaml"},
			{"-n", systemNS, "get", "secrets"},
			{"patch", "modelprovider", mp, "--type=merge", "-p", `{"spec":{"url":"http://attacker.example/v1"}}`},
			{"delete", "modelprovider", mp},
		} {
			out, err := admin.try(args...)
			if err == nil || !strings.Contains(out, "forbidden") {
				t.Errorf("kubectl %s as the namespace admin: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		if got := u.kubectl("get", "modelprovider", mp, "-o", "jsonpath={.spec.url}"); !strings.Contains(got, providerNS) {
			t.Errorf("the ModelProvider's url is %q", got)
		}
	})

	t.Run("a rotation of the Secret reaches the guard without a restart", func(t *testing.T) {
		u := user{t: t, c: c}
		restarts := u.kubectl("-n", ns, "get", "pods", "-l", "app=chat", "-o", "jsonpath={.items[0].status.initContainerStatuses[*].restartCount}{.items[0].status.containerStatuses[*].restartCount}")
		start := time.Now()
		out, err := u.run("sh", "-c", "kubectl -n "+systemNS+" create secret generic "+mp+" --from-literal=apiKey="+key2+" --dry-run=client -o yaml | kubectl apply -f -")
		if err != nil {
			t.Fatalf("rotating the Secret: %v\n%s", err, out)
		}
		const bound = 30 * time.Second
		u.until(bound, func() bool {
			return strings.Contains(call(u, "$OPENAI_BASE_URL", "$OPENAI_API_KEY", "after the rotation", false), "You said") && lastKey(u) == fingerprint(key2)
		})
		t.Logf("the provider saw the rotated key %s after the Secret changed (bound %s)", time.Since(start).Round(100*time.Millisecond), bound)
		if got := u.kubectl("-n", ns, "get", "pods", "-l", "app=chat", "-o", "jsonpath={.items[0].status.initContainerStatuses[*].restartCount}{.items[0].status.containerStatuses[*].restartCount}"); got != restarts {
			t.Errorf("containers restarted: %s, then %s", restarts, got)
		}
	})

	t.Run("usage reaches the ModelProvider's status and the guard's metrics", func(t *testing.T) {
		u := user{t: t, c: c}
		u.eventually(time.Minute, atLeast(3), "get", "modelprovider", mp, "-o", "jsonpath={.status.usage.requests}")
		u.eventually(time.Minute, atLeast(1), "get", "modelprovider", mp, "-o", "jsonpath={.status.usage.outputTokens}")
		u.eventually(time.Minute, func(s string) bool { return strings.Contains(s, ns) },
			"get", "modelprovider", mp, "-o", "jsonpath={.status.usage.namespaces[*].namespace}")
		u.eventually(time.Minute, atLeast(1), "get", "modelprovider", mp, "-o", "jsonpath={.status.pods}")
		metrics := exec(u, "wget -qO- http://127.0.0.1:15090/metrics")
		if !strings.Contains(metrics, `guard_provider_requests_total{provider="`+mp+`"}`) {
			t.Errorf("no guard_provider_requests_total for %s in the guard's metrics", mp)
		}
		if strings.Contains(metrics, key1) || strings.Contains(metrics, key2) {
			t.Error("a key reached the guard's metrics")
		}
	})

	t.Run("a budget in Enforce mode turns the namespace's calls into 429 with Retry-After, and lifting it lets them through", func(t *testing.T) {
		u := user{t: t, c: c}
		u.kubectl("patch", "modelprovider", mp, "--type=merge", "-p", `{"spec":{"limits":{"requestsPerDay":3,"mode":"Enforce"}}}`)
		// The guards report their calls every few seconds and the manager marks the
		// provider exhausted once they reach it: the overshoot is bounded, not zero.
		// busybox wget prints no header of an error answer: the request is written by hand.
		body := chatBody("spend the budget", false)
		raw := "POST /v1/chat/completions HTTP/1.0\\r\\nHost: guard\\r\\nContent-Type: application/json\\r\\n" +
			"Authorization: Bearer $OPENAI_API_KEY\\r\\nContent-Length: " + strconv.Itoa(len(body)) + "\\r\\n\\r\\n" + body
		var refused string
		start := time.Now()
		u.until(2*time.Minute, func() bool {
			refused = exec(u, `printf "`+strings.ReplaceAll(raw, `"`, `\"`)+`" | nc 127.0.0.1 15080 2>&1 || true`)
			if strings.Contains(refused, " 429 ") {
				return true
			}
			time.Sleep(time.Second)
			return false
		})
		t.Logf("calls refused %s after the limit was set", time.Since(start).Round(100*time.Millisecond))
		if !strings.Contains(strings.ToLower(refused), "retry-after:") {
			t.Errorf("the 429 carries no Retry-After: %s", refused)
		}
		if got := u.kubectl("get", "modelprovider", mp, "-o", `jsonpath={.status.budgets[?(@.namespace=="`+ns+`")].day.requestsRemaining}`); got != "0" {
			t.Errorf("status.budgets' remaining requests for %s today: %q, want 0", ns, got)
		}
		u.eventually(time.Minute, func(s string) bool { return strings.Contains(s, mp) },
			"get", "events", "-A", "--field-selector", "reason=BudgetExceeded", "-o", "jsonpath={.items[*].involvedObject.name}")

		u.kubectl("patch", "modelprovider", mp, "--type=merge", "-p", `{"spec":{"limits":null}}`)
		u.until(time.Minute, func() bool {
			return strings.Contains(call(u, "$OPENAI_BASE_URL", "$OPENAI_API_KEY", "after the budget", false), "You said")
		})
	})
}

// randomHex is 24 random hex digits: the test's keys exist only for one run.
func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// fingerprint is how the fake provider names the last key it accepted (GET /last-key).
func fingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}
