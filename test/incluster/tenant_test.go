package incluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// tenant is a user of one namespace: kubectl impersonating a ServiceAccount of that
// namespace, as a tenant's CI or shell would run.
type tenant struct {
	user
	as string
}

func (tn tenant) try(args ...string) (string, error) {
	tn.t.Helper()
	return tn.run("kubectl", append([]string{"--as", tn.as}, args...)...)
}

func (tn tenant) apply(manifest string) (string, error) {
	tn.t.Helper()
	path := filepath.Join(tn.t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		tn.t.Fatal(err)
	}
	return tn.try("apply", "-f", path)
}

// TestAHostileTenantCannotMakeTheStatusLie plays issue 28's red team on the real cluster:
// a tenant with namespace admin in a namespace labelled guardrail.dev/injection=required,
// and a tenant allowed only to write Guardrails and Classifiers, each trying to make a
// Guardrail's status claim enforcement or counts that are not true, or to read a Secret
// through a Classifier. The chart is installed with its default values.
func TestAHostileTenantCannotMakeTheStatusLie(t *testing.T) {
	c := singlenode.Get(t)
	u := user{t: t, c: c}
	loadImages(t, c)
	const ns = "tenant"
	u.helm("upgrade", "--install", release, "charts/guardrail-operator", "-n", systemNS, "--create-namespace", "--wait", "--timeout", "4m")
	t.Cleanup(func() {
		_, _ = u.run("kubectl", "delete", "namespace", ns, "provider", "--ignore-not-found", "--wait=false")
		_, _ = u.run(helmBinary(t), "uninstall", release, "-n", systemNS, "--wait")
	})
	u.kubectl("apply", "-f", "config/dev/provider.yaml")
	mustApply(t, u, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
  labels: {guardrail.dev/injection: required}
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
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: policy-author, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: policy-author, namespace: %[1]s}
rules:
- apiGroups: [guardrail.dev]
  resources: [guardrails, classifiers]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: policy-author, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: policy-author}
subjects: [{kind: ServiceAccount, name: policy-author, namespace: %[1]s}]
---
apiVersion: v1
kind: Secret
metadata: {name: db-password, namespace: %[1]s}
stringData: {token: canary-db-password-5f1e}
`, ns))
	admin := tenant{user: u, as: "system:serviceaccount:" + ns + ":tenant-admin"}
	author := tenant{user: u, as: "system:serviceaccount:" + ns + ":policy-author"}
	u.kubectl("-n", "provider", "rollout", "status", "deploy/provider", "--timeout=2m")
	u.kubectl("-n", ns, "apply", "-f", "config/samples/")
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "guardrails", "--all", "--timeout=1m")

	// One honest app pod, injected by the webhook.
	if out, err := admin.apply(appPodManifest(ns, "honest", "", "")); err != nil {
		t.Fatalf("the honest pod: %v\n%s", err, out)
	}
	u.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/honest", "--timeout=2m")

	t.Run("item 1: no label, annotation or container name skips injection in a required namespace", func(t *testing.T) {
		for _, tc := range []struct{ name, labels, annotations string }{
			{"claims-injected", `guardrail.dev/injected: "true"`, `guardrail.dev/enforced: "redact-pii-secrets=1,stop-streamed-secrets=1"`},
			{"claims-not-injected", `guardrail.dev/injected: "false"`, ""},
			{"opts-out", `guardrail.dev/inject: "false"`, ""},
		} {
			out, err := admin.apply(appPodManifest(ns, tc.name, tc.labels, tc.annotations))
			if err != nil {
				// Refused is true to required; admitted must mean injected.
				t.Logf("%s refused: %s", tc.name, strings.TrimSpace(out))
				continue
			}
			names := u.kubectl("-n", ns, "get", "pod", tc.name, "-o", "jsonpath={.spec.initContainers[*].name} {.spec.containers[*].name}")
			if !strings.Contains(names, "guardrail-guard") {
				t.Errorf("pod %s admitted without the guard (containers %q)", tc.name, names)
			}
			env := u.kubectl("-n", ns, "get", "pod", tc.name, "-o", `jsonpath={.spec.containers[?(@.name=="app")].env[*].name}`)
			if !strings.Contains(env, "OPENAI_BASE_URL") {
				t.Errorf("pod %s admitted without base URLs pointing at its guard (env %q)", tc.name, env)
			}
		}
		impostor := strings.Replace(appPodManifest(ns, "impostor", "", ""), "- name: app", "- name: guardrail-guard", 1)
		if out, err := admin.apply(impostor); err == nil {
			t.Errorf("a pod whose app container is named guardrail-guard was admitted:\n%s", out)
		}
	})

	t.Run("item 7: a copy of the injected pod with one value of the tenant's is not admitted", func(t *testing.T) {
		// The tenant's moves against a guard's token and a provider's key: copy the
		// honest pod and change one value the injector rendered, or the pod's DNS.
		enabled := ns + "-enabled"
		mustApply(t, u, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
  labels: {guardrail.dev/injection: enabled}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-admin, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: ServiceAccount, name: tenant-admin, namespace: %[2]s}]
`, enabled, ns))
		t.Cleanup(func() { _, _ = u.run("kubectl", "delete", "namespace", enabled, "--wait=false") })
		var honest corev1.Pod
		if err := json.Unmarshal([]byte(u.kubectl("-n", ns, "get", "pod", "honest", "-o", "json")), &honest); err != nil {
			t.Fatal(err)
		}
		copyOf := func(name, namespace string, edit func(p *corev1.Pod, guard *corev1.Container)) string {
			p := corev1.Pod{TypeMeta: honest.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
				Labels: honest.Labels, Annotations: honest.Annotations}, Spec: *honest.Spec.DeepCopy()}
			p.Spec.NodeName = ""
			for i := range p.Spec.InitContainers {
				if p.Spec.InitContainers[i].Name == "guardrail-guard" {
					edit(&p, &p.Spec.InitContainers[i])
				}
			}
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		setArg := func(flag, value string) func(*corev1.Pod, *corev1.Container) {
			return func(_ *corev1.Pod, g *corev1.Container) {
				for i, a := range g.Args {
					if strings.HasPrefix(a, "--"+flag+"=") {
						g.Args[i] = "--" + flag + "=" + value
					}
				}
			}
		}
		for _, tc := range []struct {
			name, namespace string
			edit            func(*corev1.Pod, *corev1.Container)
		}{
			{"repointed", enabled, setArg("control-plane", "https://listener."+ns+".svc:9444")},
			{"own-ca", enabled, setArg("ca-file", "/var/run/guardrail/podinfo/labels")},
			{"proxied", ns, func(_ *corev1.Pod, g *corev1.Container) {
				g.Env = append(g.Env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://listener." + ns + ".svc:3128"},
					corev1.EnvVar{Name: "SSL_CERT_FILE", Value: "/var/run/guardrail/podinfo/labels"})
			}},
			{"debugged", ns, func(_ *corev1.Pod, g *corev1.Container) {
				g.Env = append(g.Env, corev1.EnvVar{Name: "GODEBUG", Value: "http2debug=2"})
			}},
			{"aliased", ns, func(p *corev1.Pod, _ *corev1.Container) {
				p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"provider.provider.svc.cluster.local"}}}
			}},
			{"resolved", enabled, func(p *corev1.Pod, _ *corev1.Container) {
				p.Spec.DNSPolicy = corev1.DNSNone
				p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.9"}}
			}},
		} {
			out, err := admin.apply(copyOf(tc.name, tc.namespace, tc.edit))
			if err == nil {
				t.Errorf("%s/%s, a copy of the injected pod with a value of the tenant's, was admitted:\n%s", tc.namespace, tc.name, out)
				continue
			}
			if !strings.Contains(out, "guardrail-guard") {
				t.Errorf("%s: the refusal does not name the guard: %s", tc.name, out)
			}
			t.Logf("%s/%s refused: %s", tc.namespace, tc.name, strings.TrimSpace(out))
		}
		// The copy as it is, in the same namespace, is the injector's guard and admitted.
		if out, err := admin.apply(copyOf("twin", ns, func(*corev1.Pod, *corev1.Container) {})); err != nil {
			t.Errorf("an exact copy of the injected pod was refused: %v\n%s", err, out)
		}
	})

	selected := func() string {
		return u.kubectl("-n", ns, "get", "pods", "--field-selector=status.phase=Running", "-o", "name")
	}
	t.Run("the status counts exactly the pods whose guards answer", func(t *testing.T) {
		u.until(3*time.Minute, func() bool {
			n := len(strings.Fields(selected()))
			out, _ := u.run("kubectl", "-n", ns, "get", "guardrail", "redact-pii-secrets", "-o", "jsonpath={.status.enforcement.summary}")
			return out == fmt.Sprintf("%d/%d", n, n)
		})
	})

	t.Run("item 2: a guard that stops answering drops out of the count within the liveness bound", func(t *testing.T) {
		// The red team's move: an image that exits, set on the guard of a running pod.
		if out, err := admin.try("-n", ns, "set", "image", "pod/honest", "guardrail-guard="+busyboxImage); err != nil {
			t.Fatalf("kubectl set image as the tenant: %v\n%s", err, out)
		}
		start := time.Now()
		out := u.eventually(3*time.Minute, func(s string) bool { return strings.Contains(s, "honest") },
			"-n", ns, "get", "guardrail", "redact-pii-secrets", "-o", `jsonpath={.status.conditions[?(@.type=="Enforced")].message}`)
		t.Logf("after %s the Enforced condition says: %s", time.Since(start).Round(time.Second), out)
		if got := u.kubectl("-n", ns, "get", "guardrail", "redact-pii-secrets", "-o", `jsonpath={.status.conditions[?(@.type=="Enforced")].status}`); got != "False" {
			t.Errorf("Enforced %s with a guard that does not run", got)
		}
	})

	t.Run("item 3: the tenant cannot mint a token the control plane would take for a guard's", func(t *testing.T) {
		out, err := admin.try("-n", ns, "create", "token", "default", "--audience", "guardrail.dev",
			"--bound-object-kind", "Pod", "--bound-object-name", "claims-injected")
		if err == nil {
			t.Fatalf("a tenant minted a pod-bound token of audience guardrail.dev")
		}
		t.Logf("refused: %s", strings.TrimSpace(out))
		if _, err := admin.try("-n", ns, "create", "token", "default", "--audience", "some-other-audience"); err != nil {
			t.Errorf("a token of another audience was refused too: the policy is broader than it should be")
		}
	})

	t.Run("item 4: a tenant allowed only Classifiers cannot send a Secret it cannot read to its own listener", func(t *testing.T) {
		if out, _ := author.try("auth", "can-i", "get", "secrets", "-n", ns); !strings.Contains(out, "no") {
			t.Fatalf("the policy author can read Secrets (%s): the test proves nothing", out)
		}
		out, err := author.apply(fmt.Sprintf(`
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata: {name: exfiltrate, namespace: %s}
spec:
  webhook: {url: "http://listener.%s.svc:8080/judge"}
  credentialsSecretRef: {name: db-password}
  categories: [{id: unsafe}]
`, ns, ns))
		if err == nil {
			t.Fatalf("a Classifier naming a Secret its author cannot read was admitted:\n%s", out)
		}
		if !strings.Contains(out, "db-password") {
			t.Errorf("the refusal does not name the Secret: %s", out)
		}
	})

	t.Run("item 6: the manager cannot write pods anywhere", func(t *testing.T) {
		for _, target := range []string{"kube-system", ns} {
			for _, verb := range []string{"patch", "update"} {
				out, _ := u.run("kubectl", "auth", "can-i", verb, "pods", "-n", target, "--as", managerSA)
				if strings.TrimSpace(out) != "no" {
					t.Errorf("kubectl auth can-i %s pods -n %s --as the manager: %q, want no", verb, target, out)
				}
			}
		}
	})

	t.Run("the counters never go negative and no canary reached status or Events", func(t *testing.T) {
		out := u.kubectl("-n", ns, "get", "guardrails,classifiers,events", "-o", "yaml")
		if strings.Contains(out, "canary-db-password") {
			t.Errorf("the Secret's value is in status or Events")
		}
		for _, f := range []string{"blocked", "redacted", "wouldBlock"} {
			if v := u.kubectl("-n", ns, "get", "guardrails", "-o", "jsonpath={.items[*].status.decisions."+f+"}"); strings.Contains(v, "-") {
				t.Errorf("%s: %q", f, v)
			}
		}
	})
}

// busyboxImage is the cluster's busybox (config/dev/chat.yaml uses it too).
const busyboxImage = "localhost/guardrail/busybox:dev"

// appPodManifest is a busybox app pod of the tenant namespace that sleeps; labels and
// annotations are YAML mapping entries, or "".
func appPodManifest(ns, name, labels, annotations string) string {
	if labels == "" {
		labels = "app: tenant-app"
	} else {
		labels = "app: tenant-app\n    " + labels
	}
	meta := "\n  labels:\n    " + labels + "\n  annotations:\n    guardrail.dev/openai-upstream: http://provider.provider.svc.cluster.local:8080"
	if annotations != "" {
		meta += "\n    " + annotations
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s%s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: [sleep, infinity]
    securityContext:
      runAsUser: 1000
      runAsNonRoot: true
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
      seccompProfile: {type: RuntimeDefault}
`, name, ns, meta, busyboxImage)
}

func mustApply(t *testing.T, u user, manifest string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	u.kubectl("apply", "-f", path)
}
