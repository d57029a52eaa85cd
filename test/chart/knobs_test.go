package chart

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// everyKnob sets every value of the pod, the webhook, the PDB, the Services and the
// NetworkPolicy away from its default (hostNetwork aside: it excludes the NetworkPolicy).
const everyKnob = `
replicas: 3
image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
logLevel: debug
logFormat: console
extraArgs: ["--decision-interval=5s"]
extraEnv:
  - {name: HTTPS_PROXY, value: "http://proxy.corp:3128"}
  - name: NODE_NAME
    valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
priorityClassName: guardrail-critical
podLabels: {team: platform}
podAnnotations: {example.com/owner: platform}
podDisruptionBudget: {maxUnavailable: 34%}
topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
  - maxSkew: 2
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector: {matchLabels: {team: platform}}
tolerations:
  - {key: dedicated, operator: Equal, value: platform, effect: NoSchedule}
nodeSelector: {kubernetes.io/os: linux}
podSecurityContext:
  runAsUser: 10001
  fsGroup: 10001
  seccompProfile: {type: RuntimeDefault}
securityContext:
  runAsUser: 10001
  capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
service:
  annotations: {service.example.com/internal: "true"}
webhook:
  exemptNamespaces: [ops, monitoring]
  namespaceSelector:
    matchExpressions: [{key: example.com/tier, operator: NotIn, values: [system]}]
  objectSelector:
    matchLabels: {example.com/guard: allowed}
networkPolicy:
  enabled: true
  metricsFrom:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
  apiServer: {ports: [6443], cidrs: [172.18.0.2/32]}
`

// TestKnobGoldens renders each knob and compares the objects it changes with a golden
// file, so that a reviewer sees what each value does.
func TestKnobGoldens(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		kinds        []string
	}{
		{"knob-pdb-percent", "podDisruptionBudget: {maxUnavailable: 50%}", []string{"PodDisruptionBudget"}},
		{"knob-pdb-min-available", "replicas: 3\npodDisruptionBudget: {minAvailable: 2}", []string{"PodDisruptionBudget"}},
		{"knob-monitors", "metrics:\n  serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}, annotations: {a: b}}\n  podMonitor: {enabled: true, labels: {release: kube-prometheus-stack}}",
			[]string{"ServiceMonitor", "PodMonitor", "ServiceAccount", "Secret", "ClusterRoleBinding"}},
		{"knob-pod", everyKnob, []string{"Deployment"}},
		{"knob-image-digest", `image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`, []string{"Deployment"}},
		{"knob-network-policy", everyKnob, []string{"NetworkPolicy"}},
		{"knob-keyless-egress", keylessValues, []string{"NetworkPolicy"}},
		{"knob-host-network", "webhook: {hostNetwork: true, port: 10260}\nhealthProbe: {port: 10261}", []string{"Deployment"}},
		{"knob-webhook-selectors", everyKnob, []string{"MutatingWebhookConfiguration"}},
		{"knob-service-annotations", everyKnob, []string{"Service"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(t, renderYAML(t, "guardrail-system", tc.values))
			var picked []string
			for _, o := range objs {
				if slices.Contains(tc.kinds, o["kind"].(string)) {
					b, err := yaml.Marshal(o)
					if err != nil {
						t.Fatal(err)
					}
					picked = append(picked, string(b))
				}
			}
			if len(picked) == 0 {
				t.Fatalf("the render has none of %v", tc.kinds)
			}
			golden(t, tc.name, strings.Join(picked, "---\n"))
		})
	}
}

func webhooks(t *testing.T, objs []map[string]any) []map[string]any {
	t.Helper()
	cfg := find(objs, "MutatingWebhookConfiguration", "guardrail-pod-injector")
	if cfg == nil {
		t.Fatal("no MutatingWebhookConfiguration guardrail-pod-injector")
	}
	var out []map[string]any
	for _, w := range cfg["webhooks"].([]any) {
		out = append(out, w.(map[string]any))
	}
	return out
}

// exempted is the values of the entry's kubernetes.io/metadata.name NotIn expression.
func exempted(w map[string]any) []string {
	var names []string
	for _, e := range w["namespaceSelector"].(map[string]any)["matchExpressions"].([]any) {
		m := e.(map[string]any)
		if m["key"] == "kubernetes.io/metadata.name" && m["operator"] == "NotIn" {
			for _, v := range m["values"].([]any) {
				names = append(names, v.(string))
			}
		}
	}
	return names
}

// TestTheReleaseNamespaceIsNeverSentToTheWebhook: whatever namespace the chart is
// installed in, every entry (required's too) exempts it, with the system namespaces, and
// extra exemptions add to them.
func TestTheReleaseNamespaceIsNeverSentToTheWebhook(t *testing.T) {
	for _, ns := range []string{"guardrail-system", "ops-guardrails"} {
		for _, w := range webhooks(t, objects(t, renderYAML(t, ns, "webhook: {exemptNamespaces: [monitoring]}"))) {
			got := exempted(w)
			for _, want := range []string{ns, "kube-system", "kube-public", "kube-node-lease", "monitoring"} {
				if !slices.Contains(got, want) {
					t.Errorf("namespace %s: entry %s exempts %v, not %s", ns, w["name"], got, want)
				}
			}
		}
	}
	// Extra object selectors never reach the required entry: a pod label must not skip it.
	// The opt-in entries take them (enabled has no objectSelector of its own).
	for _, w := range webhooks(t, objects(t, renderYAML(t, "guardrail-system", everyKnob))) {
		_, has := w["objectSelector"]
		if strings.HasPrefix(w["name"].(string), "required.") == has {
			t.Errorf("entry %s: objectSelector %v", w["name"], w["objectSelector"])
		}
	}
	// Without them the enabled entry has none either: no pod label keeps a pod, or a
	// hand-written guard, from the injector in a namespace labelled enabled.
	for _, w := range webhooks(t, objects(t, renderYAML(t, "guardrail-system", ""))) {
		if _, has := w["objectSelector"]; has && !strings.HasPrefix(w["name"].(string), "pod.") {
			t.Errorf("entry %s: objectSelector %v", w["name"], w["objectSelector"])
		}
	}
}

// TestPodDisruptionBudget: no budget at one replica (it would block every drain);
// maxUnavailable 1 by default; minAvailable instead when set.
func TestPodDisruptionBudget(t *testing.T) {
	if pdb := find(objects(t, render(t, "replicas=1")), "PodDisruptionBudget", "guardrail-operator"); pdb != nil {
		t.Errorf("replicas=1 rendered a PodDisruptionBudget %v: a drain of its node would wait forever", pdb["spec"])
	}
	spec := find(objects(t, render(t)), "PodDisruptionBudget", "guardrail-operator")["spec"].(map[string]any)
	if spec["maxUnavailable"] != float64(1) || spec["minAvailable"] != nil {
		t.Errorf("default PDB spec %v, want maxUnavailable 1", spec)
	}
	spec = find(objects(t, render(t, "podDisruptionBudget.minAvailable=50%")), "PodDisruptionBudget", "guardrail-operator")["spec"].(map[string]any)
	if spec["minAvailable"] != "50%" || spec["maxUnavailable"] != nil {
		t.Errorf("minAvailable=50%% PDB spec %v", spec)
	}
}

// TestMonitorsArePickedUpByAKubePrometheusStack: the labels a kube-prometheus-stack
// selects by reach both monitors; the ServiceMonitor authenticates with the authorization
// form, from a token Secret beside it whose ServiceAccount may read /metrics.
func TestMonitorsArePickedUpByAKubePrometheusStack(t *testing.T) {
	objs := objects(t, render(t, "metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true",
		"metrics.serviceMonitor.labels.release=kps", "metrics.podMonitor.labels.release=kps"))
	sm, pm := find(objs, "ServiceMonitor", "guardrail-operator"), find(objs, "PodMonitor", "guardrail-guards")
	for _, m := range []map[string]any{sm, pm} {
		if m["metadata"].(map[string]any)["labels"].(map[string]any)["release"] != "kps" {
			t.Errorf("%s has no release: kps label", m["kind"])
		}
	}
	b, _ := yaml.Marshal(sm)
	if strings.Contains(string(b), "bearerTokenFile") {
		t.Errorf("the ServiceMonitor uses the deprecated bearerTokenFile:\n%s", b)
	}
	ep := sm["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	cred := ep["authorization"].(map[string]any)["credentials"].(map[string]any)
	secret := find(objs, "Secret", cred["name"].(string))
	if secret == nil || secret["type"] != "kubernetes.io/service-account-token" {
		t.Fatalf("the ServiceMonitor's credentials name Secret %v, which is not a token Secret of the chart", cred["name"])
	}
	sa := secret["metadata"].(map[string]any)["annotations"].(map[string]any)["kubernetes.io/service-account.name"]
	crb := find(objs, "ClusterRoleBinding", "guardrail-operator-metrics-scraper")
	if crb == nil || crb["roleRef"].(map[string]any)["name"] != "guardrail-operator-metrics-reader" ||
		crb["subjects"].([]any)[0].(map[string]any)["name"] != sa {
		t.Errorf("the scraper %v is not bound to guardrail-operator-metrics-reader: %v", sa, crb)
	}
}

// TestCRDsAreControllerGensAndKept: the chart's CRDs are config/crd/bases' (spec and
// name), annotated keep unless crds.keep=false, and absent with crds.enabled=false.
func TestCRDsAreControllerGensAndKept(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(envtestutil.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("config/crd/bases: %v", err)
	}
	objs := objects(t, render(t))
	for _, p := range paths {
		b, err := os.ReadFile(p) //nolint:gosec // the repository's CRDs
		if err != nil {
			t.Fatal(err)
		}
		want := objects(t, string(b))[0]
		name := want["metadata"].(map[string]any)["name"].(string)
		got := find(objs, "CustomResourceDefinition", name)
		if got == nil || !reflect.DeepEqual(want["spec"], got["spec"]) {
			t.Errorf("the chart's CRD %s is not %s", name, p)
			continue
		}
		if got["metadata"].(map[string]any)["annotations"].(map[string]any)["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s is not annotated helm.sh/resource-policy: keep: helm uninstall would delete every %s", name, want["spec"].(map[string]any)["names"].(map[string]any)["kind"])
		}
	}
	for _, o := range objects(t, render(t, "crds.keep=false")) {
		if o["kind"] == "CustomResourceDefinition" && o["metadata"].(map[string]any)["annotations"].(map[string]any)["helm.sh/resource-policy"] != nil {
			t.Errorf("crds.keep=false: %v still kept", o["metadata"].(map[string]any)["name"])
		}
	}
	for _, o := range objects(t, render(t, "crds.enabled=false")) {
		if o["kind"] == "CustomResourceDefinition" {
			t.Errorf("crds.enabled=false rendered %v", o["metadata"].(map[string]any)["name"])
		}
	}
}

// TestCertificateModesUseTheirOwnSecrets: cert-manager's Secret is not the Helm-owned
// Secret of the self-managed mode, so switching modes never makes Helm adopt
// cert-manager's (upgrade_test.go switches on a real apiserver).
func TestCertificateModesUseTheirOwnSecrets(t *testing.T) {
	self := objects(t, render(t))
	cm := objects(t, render(t, "certManager.enabled=true"))
	cert := find(cm, "Certificate", "guardrail-webhook-cert")
	secretName := cert["spec"].(map[string]any)["secretName"].(string)
	if find(self, "Secret", secretName) != nil {
		t.Errorf("cert-manager writes Secret %s, which the self-managed mode renders too: switching back would fail on ownership", secretName)
	}
	if find(self, "Secret", "guardrail-webhook-cert") == nil {
		t.Errorf("the self-managed mode renders no Secret guardrail-webhook-cert for the rotator")
	}
	b, _ := yaml.Marshal(find(cm, "Deployment", "guardrail-operator"))
	if !strings.Contains(string(b), "secretName: "+secretName) {
		t.Errorf("the manager does not mount cert-manager's Secret %s", secretName)
	}
}

// TestChartMetadata: kubeVersion, the icon and the Artifact Hub annotations name this
// chart's version, so a packaged chart never points at main (the NOTES: upgrade_test.go).
func TestChartMetadata(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version, AppVersion, KubeVersion, Icon string
		Annotations                            map[string]string
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.KubeVersion != ">=1.29.0-0" {
		t.Errorf("kubeVersion %q: the guard is a native sidecar, on by default from 1.29", chart.KubeVersion)
	}
	if !strings.Contains(chart.Icon, "/v"+chart.Version+"/") {
		t.Errorf("icon %s is not at the chart's version v%s", chart.Icon, chart.Version)
	}
	if _, err := os.Stat(filepath.Join(chartDir, "icon.svg")); err != nil {
		t.Errorf("the icon's file: %v", err)
	}
	ref, err := regexp.Compile(`image: (\S+)`)
	if err != nil {
		t.Fatal(err)
	}
	var values struct{ Image struct{ Repository string } }
	vb, _ := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err := yaml.Unmarshal(vb, &values); err != nil {
		t.Fatal(err)
	}
	if m := ref.FindStringSubmatch(chart.Annotations["artifacthub.io/images"]); m == nil || m[1] != values.Image.Repository+":"+chart.AppVersion {
		t.Errorf("artifacthub.io/images %q is not the default image %s:%s", chart.Annotations["artifacthub.io/images"], values.Image.Repository, chart.AppVersion)
	}
	for _, o := range objects(t, render(t)) {
		if o["kind"] == "CustomResourceDefinition" {
			if name := o["metadata"].(map[string]any)["name"].(string); !strings.Contains(chart.Annotations["artifacthub.io/crds"], "name: "+name) {
				t.Errorf("artifacthub.io/crds does not list %s", name)
			}
		}
	}
	for _, k := range []string{"artifacthub.io/links", "artifacthub.io/crds", "artifacthub.io/images"} {
		if strings.Contains(chart.Annotations[k], "/main/") || strings.Contains(chart.Annotations[k], "tree/main") {
			t.Errorf("%s points at main", k)
		}
	}
}

// TestEveryValueIsDocumented: the chart's README (helm-docs) describes every value; a row
// without a description is a value added without a `# --` comment.
func TestEveryValueIsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Key ") {
			continue
		}
		rows++
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if strings.TrimSpace(cells[len(cells)-1]) == "" {
			t.Errorf("README.md: value %s has no description in values.yaml", strings.TrimSpace(cells[0]))
		}
	}
	if rows < 40 {
		t.Errorf("README.md has %d value rows: is the values table generated?", rows)
	}
}

// TestScopedSecretsIncludeTheReleaseNamespace: with watchNamespaces, the manager reads
// Secrets in the listed namespaces and in the release's own, where ClusterClassifiers' and
// ModelProviders' credentials live — once, whether or not the list names it — and gets no
// cluster-wide Secret reader.
func TestScopedSecretsIncludeTheReleaseNamespace(t *testing.T) {
	for _, watched := range []string{"watchNamespaces={team-a,team-b}", "watchNamespaces={team-a,guardrail-system}"} {
		var got []string
		for _, o := range objects(t, render(t, watched)) {
			md, _ := o["metadata"].(map[string]any)
			if md["name"] != "guardrail-operator-secret-reader" {
				continue
			}
			switch o["kind"] {
			case "RoleBinding":
				got = append(got, md["namespace"].(string))
			case "ClusterRoleBinding":
				t.Errorf("%s: a cluster-wide Secret reader binding", watched)
			}
		}
		slices.Sort(got)
		want := []string{"guardrail-system", "team-a", "team-b"}
		if strings.Contains(watched, "guardrail-system}") {
			want = []string{"guardrail-system", "team-a"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Secret reader bound in %v, want %v", watched, got, want)
		}
	}
}
