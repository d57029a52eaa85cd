package incluster

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

const (
	release   = "guardrail-operator"
	systemNS  = "guardrail-system"
	managerSA = "system:serviceaccount:guardrail-system:guardrail-operator"
	// The demo app's pods (config/dev/chat.yaml).
	appSelector     = "app=chat"
	managerSelector = "app.kubernetes.io/name=guardrail-operator"
)

// TestHelmInstallInjectsAndEnforces is a user's life with the product on a real cluster, in
// order: helm install of the chart with its default values; the fake provider and the demo
// app of make dev (config/dev) in an opted-in namespace with the shipped samples; the guard
// injected and started by the kubelet; answers redacted and blocked, streamed and not, with
// the decisions counted in the Guardrails' status and no prompt text in any log; the
// manager's pods deleted while traffic flows, and its replicas deleted and killed in turn
// with every decision counted exactly once; an app pod deleted and replaced; helm upgrade
// with a changed value; the manager's RBAC refusing what it must not do; helm uninstall.
func TestHelmInstallInjectsAndEnforces(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)

	start := time.Now()
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Logf("helm install --wait: %s", time.Since(start).Round(time.Millisecond))
	uninstalled := false
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", "demo", "provider", "--ignore-not-found", "--wait=false")
		if !uninstalled {
			_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
		}
	})
	// Every replica serves the webhook and the policy subscription: every one must be ready,
	// not only the elected leader.
	if got := u.kubectl("-n", systemNS, "get", "deploy", release, "-o", "jsonpath={.status.readyReplicas}/{.spec.replicas}"); got != "2/2" {
		t.Fatalf("ready replicas %s, want 2/2", got)
	}
	if holder := u.kubectl("-n", systemNS, "get", "lease", leaderLease, "-o", "jsonpath={.spec.holderIdentity}"); !strings.HasPrefix(holder, release+"-") {
		t.Errorf("leader lease holder %q: want one replica leading", holder)
	}

	u.kubectl("apply", "-f", "config/dev/provider.yaml")
	u.kubectl("-n", "provider", "rollout", "status", "deploy/provider", "--timeout=2m")
	u.kubectl("apply", "-f", "config/dev/demo.yaml")
	u.kubectl("-n", "demo", "apply", "-f", "config/samples/")
	u.kubectl("-n", "demo", "wait", "--for=condition=Ready", "guardrails", "--all", "--timeout=1m")
	appStart := time.Now()
	u.kubectl("apply", "-f", "config/dev/chat.yaml")
	u.kubectl("-n", "demo", "rollout", "status", "deploy/chat", "--timeout=2m")
	t.Logf("app pod with injected guard Ready in %s", time.Since(appStart).Round(time.Millisecond))

	t.Run("the webhook injected the guard and the kubelet runs it beside the app", func(t *testing.T) {
		u := user{t: t, c: c}
		pod := u.appPod()
		names := u.kubectl("-n", "demo", "get", "pod", pod, "-o", "jsonpath={.spec.initContainers[*].name} {.spec.containers[*].name}")
		if !strings.Contains(names, "guardrail-guard") {
			t.Fatalf("containers %q: no guard", names)
		}
		ready := u.kubectl("-n", "demo", "get", "pod", pod, "-o", "jsonpath={.status.initContainerStatuses[*].ready} {.status.containerStatuses[*].ready}")
		if strings.Contains(ready, "false") {
			t.Errorf("readiness %q", ready)
		}
	})
	t.Run("the guard acknowledges both samples: ENFORCED 1/1", func(t *testing.T) {
		u := user{t: t, c: c}
		for _, g := range []string{"redact-pii-secrets", "stop-streamed-secrets"} {
			u.eventually(time.Minute, func(s string) bool { return s == "1/1" },
				"-n", "demo", "get", "guardrail", g, "-o", "jsonpath={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}")
		}
	})
	t.Run("the app's first request, sent as it started, was already redacted", func(t *testing.T) {
		u := user{t: t, c: c}
		u.firstRequestRedacted(u.appPod())
	})
	t.Run("a request from the app goes through its guard, which redacts the answer", func(t *testing.T) {
		u := user{t: t, c: c}
		out := u.chat("write to jane.doe@example.com", false)
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
		text := streamedText(t, u.chat("reply to "+addr+" today", true))
		for _, part := range []string{"maria", "gonzalez", "iglesias", "correo", "example.es", "@"} {
			if strings.Contains(text, part) {
				t.Errorf("the client received %q of the address: %q", part, text)
			}
		}
		if !strings.Contains(text, "[REDACTED:email]") || !strings.HasSuffix(strings.TrimSpace(text), "today") {
			t.Errorf("streamed answer %q: want the address redacted and the text after it delivered", text)
		}
	})
	t.Run("a streamed answer with a credential is stopped with the sample's reason", func(t *testing.T) {
		u := user{t: t, c: c}
		const token = "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"
		out := u.chat("deploy with GITHUB_TOKEN="+token+" and report", true)
		text := streamedText(t, out)
		if strings.Contains(out, token[4:12]) || strings.Contains(out, token[len(token)-8:]) {
			t.Errorf("part of the token reached the app: %q", out)
		}
		if !strings.Contains(text, "The response was stopped because it contained a credential.") || !strings.Contains(out, `"finish_reason":"content_filter"`) {
			t.Errorf("stream %q: want the sample's reason and finish_reason content_filter", out)
		}
	})
	t.Run("the decisions are counted in the Guardrails' status", func(t *testing.T) {
		u := user{t: t, c: c}
		u.eventually(time.Minute, atLeast(1), "-n", "demo", "get", "guardrail", "redact-pii-secrets", "-o", "jsonpath={.status.decisions.redacted}")
		u.eventually(time.Minute, atLeast(1), "-n", "demo", "get", "guardrail", "stop-streamed-secrets", "-o", "jsonpath={.status.decisions.blocked}")
	})

	t.Run("the manager's pods deleted while traffic flows: every answer is still redacted, and every decision is counted once they return", func(t *testing.T) {
		u := user{t: t, c: c}
		before := u.redacted()
		const n = 20
		var wg sync.WaitGroup
		var out string
		var err error
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err = u.run("kubectl", "-n", "demo", "exec", "deploy/chat", "-c", "app", "--", "sh", "-c",
				fmt.Sprintf(`i=0; while [ $i -lt %d ]; do %s; echo; i=$((i+1)); sleep 0.3; done`, n, wgetChat(chatBody("drill: write to drill.person@example.org", false))))
		}()
		time.Sleep(time.Second)
		u.kubectl("-n", systemNS, "delete", "pod", "-l", managerSelector, "--wait=false")
		wg.Wait()
		if err != nil {
			t.Fatalf("requests during the drill: %v\n%s", err, out)
		}
		var answers []string // kubectl's own warnings (a websocket's, on stderr) are not answers
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "{") {
				answers = append(answers, line)
			}
		}
		if len(answers) != n {
			t.Fatalf("%d answers, want %d:\n%s", len(answers), n, out)
		}
		for _, a := range answers {
			if strings.Contains(a, "drill.person") || !strings.Contains(a, "[REDACTED:email]") {
				t.Fatalf("an answer while the manager was away: %s", a)
			}
		}
		u.kubectl("-n", systemNS, "rollout", "status", "deploy/"+release, "--timeout=2m")
		u.eventually(2*time.Minute, atLeast(before+n), "-n", "demo", "get", "guardrail", "redact-pii-secrets", "-o", "jsonpath={.status.decisions.redacted}")
	})
	t.Run("the leader deleted and the other replica SIGKILLed, three times each, under steady traffic: every decision counted exactly once", func(t *testing.T) {
		user{t: t, c: c}.exactlyFailover()
	})
	t.Run("an app pod deleted: its replacement is injected and its guard enforces before the app starts", func(t *testing.T) {
		u := user{t: t, c: c}
		old := u.appPod()
		u.kubectl("-n", "demo", "delete", "pod", old, "--wait=false")
		var pod string
		u.until(2*time.Minute, func() bool {
			out, _ := u.run("kubectl", "-n", "demo", "get", "pod", "-l", appSelector,
				"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) == 1 && f[0] != old {
					pod = f[0]
					return true
				}
			}
			return false
		})
		u.kubectl("-n", "demo", "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=2m")
		u.firstRequestRedacted(pod)
	})

	t.Run("helm upgrade with a changed value rolls the manager without losing enforcement", func(t *testing.T) {
		u := user{t: t, c: c}
		u.helm("upgrade", release, "charts/guardrail-operator", "-n", systemNS, "--reuse-values", "--set", "watchNamespaces={demo}", "--wait", "--timeout", "4m")
		args := u.kubectl("-n", systemNS, "get", "deploy", release, "-o", "jsonpath={.spec.template.spec.containers[0].args}")
		if !strings.Contains(args, "--watch-namespaces=demo") {
			t.Fatalf("manager args after upgrade: %s", args)
		}
		u.kubectl("-n", systemNS, "rollout", "status", "deploy/"+release, "--timeout=2m")
		out := u.chat("after the upgrade write to ann.other@example.net", false)
		if strings.Contains(out, "ann.other") || !strings.Contains(out, "[REDACTED:email]") {
			t.Fatalf("answer after the upgrade: %s", out)
		}
		u.eventually(time.Minute, func(s string) bool { return s == "1/1" },
			"-n", "demo", "get", "guardrail", "redact-pii-secrets", "-o", "jsonpath={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}")
	})
	t.Run("the manager's ServiceAccount may do what it needs and nothing more", func(t *testing.T) {
		u := user{t: t, c: c}
		for _, q := range []struct {
			verb, resource, ns string
			allowed            bool
		}{
			// What the controllers, the webhook and the policy subscription need.
			{"watch", "guardrails.guardrail.dev", "", true},
			{"update", "guardrails.guardrail.dev --subresource=status", "demo", true},
			{"update", "classifiers.guardrail.dev --subresource=status", "demo", true},
			{"create", "tokenreviews.authentication.k8s.io", "", true},
			{"create", "events.events.k8s.io", "demo", true},
			{"update", "mutatingwebhookconfigurations.admissionregistration.k8s.io/guardrail-pod-injector", "", true},
			{"update", "secrets/guardrail-webhook-cert", systemNS, true},
			{"update", "leases.coordination.k8s.io", systemNS, true},
			{"get", "secrets", "demo", true},     // a webhook Classifier's credential, in a watched namespace
			{"watch", "secrets", systemNS, true}, // ClusterClassifiers' and ModelProviders' credentials
			// What it must never be able to do.
			{"get", "secrets", "provider", false}, // outside watchNamespaces
			{"get", "secrets", "kube-system", false},
			{"update", "secrets/some-other-secret", systemNS, false},
			{"create", "secrets", systemNS, false},
			{"delete", "customresourcedefinitions.apiextensions.k8s.io", "", false},
			{"update", "pods", "demo", false},
			{"create", "pods", "demo", false},
			{"delete", "pods", "demo", false},
			{"create", "pods/exec", "demo", false},
			{"create", "serviceaccounts/token", "demo", false},
			{"update", "guardrails.guardrail.dev", "demo", false},
			{"delete", "guardrails.guardrail.dev", "demo", false},
			{"update", "mutatingwebhookconfigurations.admissionregistration.k8s.io/another-webhook", "", false},
			{"create", "validatingwebhookconfigurations.admissionregistration.k8s.io", "", false},
			{"create", "clusterrolebindings.rbac.authorization.k8s.io", "", false},
			{"escalate", "clusterroles.rbac.authorization.k8s.io", "", false},
			{"bind", "clusterroles.rbac.authorization.k8s.io", "", false},
			{"delete", "namespaces", "", false},
			// Shared guards: the manager writes their Deployments, Services, EndpointSlices
			// and PodDisruptionBudgets, and deletes only the last two (the rest goes with
			// its SharedGuard, by owner reference).
			{"create", "deployments.apps", "demo", true},
			{"delete", "deployments.apps", "demo", false},
			{"delete", "services", "demo", false},
			{"get", "configmaps", "kube-system", false},
		} {
			args := append([]string{"auth", "can-i", q.verb}, strings.Fields(q.resource)...)
			args = append(args, "--as", managerSA)
			if q.ns != "" {
				args = append(args, "-n", q.ns)
			}
			out, _ := u.run("kubectl", args...)
			// The answer is the last line (kubectl warns first about cluster-scoped resources).
			lines := strings.Split(strings.TrimSpace(out), "\n")
			answer := strings.TrimSpace(lines[len(lines)-1])
			if got := answer == "yes"; got != q.allowed || (answer != "yes" && answer != "no") {
				t.Errorf("kubectl %s: %q, want allowed=%v", strings.Join(args, " "), answer, q.allowed)
			}
		}
	})
	t.Run("no prompt or completion text in the guard's or the manager's logs", func(t *testing.T) {
		u := user{t: t, c: c}
		logs := u.kubectl("-n", "demo", "logs", "-l", appSelector, "-c", "guardrail-guard", "--tail=-1") +
			u.kubectl("-n", systemNS, "logs", "-l", managerSelector, "--tail=-1")
		for _, secret := range []string{"jane.doe", "example.com", "write to", "ghp_", "drill.person", "ann.other"} {
			if strings.Contains(logs, secret) {
				t.Errorf("logs contain %q", secret)
			}
		}
	})

	t.Run("helm uninstall removes the operator and keeps the CRDs and the policies", func(t *testing.T) {
		u := user{t: t, c: c}
		u.helm("uninstall", release, "-n", systemNS, "--wait")
		uninstalled = true
		u.until(2*time.Minute, func() bool {
			out, _ := u.run("kubectl", "-n", systemNS, "get", "pods", "-o", "name")
			return strings.TrimSpace(out) == ""
		})
		left := u.kubectl("get", "mutatingwebhookconfigurations,clusterroles,clusterrolebindings,deployments,services,secrets,roles,rolebindings,serviceaccounts,poddisruptionbudgets",
			"-A", "-l", "app.kubernetes.io/instance="+release, "-o", "name")
		if strings.TrimSpace(left) != "" {
			t.Errorf("left after helm uninstall:\n%s", left)
		}
		if out, err := u.run("kubectl", "get", "mutatingwebhookconfiguration", "guardrail-pod-injector"); err == nil {
			t.Errorf("the webhook configuration is left: new pods would still be sent to a webhook that is gone:\n%s", out)
		}
		// The CRDs carry helm.sh/resource-policy: keep (crds.keep, the chart's README): the
		// policies users wrote survive an uninstall.
		u.kubectl("get", "crd", "guardrails.guardrail.dev", "classifiers.guardrail.dev")
		u.kubectl("-n", "demo", "get", "guardrail", "redact-pii-secrets")
	})
}

// appPod is the name of the demo app's one running pod.
func (u user) appPod() string {
	u.t.Helper()
	name := strings.TrimSpace(u.kubectl("-n", "demo", "get", "pod", "-l", appSelector, "--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}"))
	if name == "" {
		u.t.Fatal("no running demo app pod")
	}
	return name
}

// firstRequestRedacted checks the log of pod's app: the request it sent as it started
// (config/dev/chat.yaml) came back redacted, so its guard enforced before the app ran.
func (u user) firstRequestRedacted(pod string) {
	u.t.Helper()
	var log string
	u.until(time.Minute, func() bool {
		log, _ = u.run("kubectl", "-n", "demo", "logs", pod, "-c", "app")
		return strings.TrimSpace(log) != ""
	})
	if strings.Contains(log, "first.request@") || !strings.Contains(log, "[REDACTED:email]") {
		u.t.Fatalf("the first request of pod %s, sent as its app started: %q", pod, log)
	}
}

// chat sends one chat completion from inside the demo app through its guard, as the app
// would, and returns the answer (the SSE stream when stream is set).
func (u user) chat(content string, stream bool) string {
	u.t.Helper()
	return u.kubectl("-n", "demo", "exec", "deploy/chat", "-c", "app", "--", "sh", "-c", wgetChat(chatBody(content, stream)))
}

func chatBody(content string, stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": "demo", "stream": stream, "messages": []map[string]string{{"role": "user", "content": content}}})
	return string(b)
}

// wgetChat is the shell command that posts body to the app's OPENAI_BASE_URL.
func wgetChat(body string) string {
	return `wget -qO- --header 'Content-Type: application/json' --post-data '` + body + `' "$OPENAI_BASE_URL/chat/completions"`
}

// redacted is the redact-pii-secrets Guardrail's count of redacted answers.
func (u user) redacted() int {
	u.t.Helper()
	n, _ := strconv.Atoi(u.kubectl("-n", "demo", "get", "guardrail", "redact-pii-secrets", "-o", "jsonpath={.status.decisions.redacted}"))
	return n
}

func atLeast(n int) func(string) bool {
	return func(s string) bool { v, err := strconv.Atoi(s); return err == nil && v >= n }
}

// streamedText joins the content deltas of an OpenAI chat completion stream.
func streamedText(t *testing.T, sse string) string {
	t.Helper()
	text, done, err := fakeprovider.ChatStreamText([]byte(sse))
	if err != nil {
		t.Fatal(err)
	}
	if !done {
		t.Fatalf("the stream did not end with [DONE]: %q", sse)
	}
	return text
}
