// Package chart tests the Helm chart in charts/guardrail-operator with the pinned helm
// binary (make test installs it and sets HELM): lint, golden renders (the defaults, and
// each knob), the values schema and the template's own refusals, that the rendered CRDs,
// RBAC and webhook entries are controller-gen's, that the render is accepted by a real
// apiserver, and helm install, upgrade and uninstall against one (upgrade_test.go).
package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

var update = flag.Bool("update", false, "rewrite the golden renders of testdata/")

var chartDir = filepath.Join(envtestutil.RepoRoot(), "charts", "guardrail-operator")

// kubeVersion is the Kubernetes of the project's apiserver and cluster.
const kubeVersion = "v1.37.2"

// TestMain reads every file of the chart once: helm reads them in a child process, which
// go test's cache cannot see, and a test reading them itself makes a change to the chart
// invalidate the cached result.
func TestMain(m *testing.M) {
	err := filepath.WalkDir(chartDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(path) //nolint:gosec // the chart's files
		return err
	})
	if err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// helm runs the pinned helm binary.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join(envtestutil.RepoRoot(), "bin", "helm-v3.22.0")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm is missing (%v): run `make test`, which installs it into bin/", err)
	}
	if len(args) > 0 && (args[0] == "template" || args[0] == "lint") {
		// A go-installed helm assumes Kubernetes 1.20 where no cluster says otherwise, and
		// the chart requires 1.29: render for the version the project tests against.
		args = append(args, "--kube-version", kubeVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // the pinned helm
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String() + stderr.String(), err
	}
	return out.String(), nil
}

func render(t *testing.T, values ...string) string {
	t.Helper()
	args := []string{"template", "guardrail-operator", chartDir, "--namespace", "guardrail-system", "--include-crds"}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", values, err, out)
	}
	return out
}

// renderYAML renders the chart with a values file holding values, in namespace ns.
func renderYAML(t *testing.T, ns, values string) string {
	t.Helper()
	out, err := helm(t, "template", "guardrail-operator", chartDir, "--namespace", ns, "-f", valuesFile(t, values))
	if err != nil {
		t.Fatalf("helm template -f <<%s>>: %v\n%s", values, err, out)
	}
	return out
}

func valuesFile(t *testing.T, values string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// golden compares got with testdata/name.golden.yaml (or rewrites it with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.yaml")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil { //nolint:gosec // checked-in test data
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path) //nolint:gosec // test data
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the render differs from %s; run `go test ./test/chart -update` and review the diff", path)
	}
}

func TestLintStrict(t *testing.T) {
	for _, values := range [][]string{nil, {"certManager.enabled=true", "metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true", "dashboard.enabled=true", "admissionPolicies.enabled=false"},
		{"networkPolicy.enabled=true", "replicas=1", "webhook.exemptNamespaces={ops}", "crds.keep=false", "image.digest=sha256:" + strings.Repeat("ab", 32)},
		{"keylessEgress.namespaces={team-a,team-b}", "keylessEgress.providerCIDRs={162.159.140.0/24}", "keylessEgress.allowInCluster=false"}} {
		args := []string{"lint", "--strict", chartDir}
		for _, v := range values {
			args = append(args, "--set", v)
		}
		if out, err := helm(t, args...); err != nil {
			t.Errorf("helm lint --strict %v: %v\n%s", values, err, out)
		}
	}
}

func TestGoldenRenders(t *testing.T) {
	for name, values := range map[string][]string{
		"default": nil,
		"cert-manager": {"certManager.enabled=true", "metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true",
			"dashboard.enabled=true", "watchNamespaces={team-a,team-b}", "crds.enabled=false"},
	} {
		t.Run(name, func(t *testing.T) {
			golden(t, name, render(t, values...))
		})
	}
}

// TestSchemaRefusesBadValues: helm refuses each bad value, before anything is applied,
// with a message that names the key (the schema's path, or the template's own fail for
// what a schema cannot say). helm install runs the same checks as helm template.
func TestSchemaRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"resources.limits.memory=lots", "/resources/limits/memory"},
		{"resources.requests.cpu=fast", "/resources/requests/cpu"},
		{"certManager.issuerRef.kind=ClusterIssuer", "/certManager/issuerRef"},
		{"certManager.issuerRef.name=", "/certManager/issuerRef/name"},
		{"watchNamespaces={team-a,team-a}", "/watchNamespaces"},
		{"goMemLimit=1GiB", "goMemLimit: 1GiB is above resources.limits.memory (384Mi)"},
		{"podDisruptionBudget.maxUnavailable=half", "/podDisruptionBudget/maxUnavailable"},
		{"podDisruptionBudget.minAvailable=2", "podDisruptionBudget.minAvailable: 2 of 2 replicas"},
		{"podDisruptionBudget.minAvailable=150%", "/podDisruptionBudget/minAvailable"},
		{"securityContext.allowPrivilegeEscalation=true", "/securityContext/allowPrivilegeEscalation"},
		{"securityContext.capabilities.add={NET_ADMIN}", "/securityContext/capabilities/add/0"},
		{"securityContext.capabilities.drop={NET_RAW}", "/securityContext/capabilities/drop"},
		{"podSecurityContext.runAsNonRoot=false", "/podSecurityContext/runAsNonRoot"},
		{"podSecurityContext.runAsUser=0", "/podSecurityContext/runAsUser"},
		{"podSecurityContext.seccompProfile.type=Unconfined", "/podSecurityContext/seccompProfile/type"},
		{"image.digest=latest", "/image/digest"},
		{"logLevel=loud", "/logLevel"},
		{"logFormat=xml", "/logFormat"},
		{"extraArgs={leader-elect}", "/extraArgs/0"},
		{"podLabels.app\\.kubernetes\\.io/name=other", "/podLabels"},
		{"topologySpreadConstraints[0].whenUnsatisfiable=Sometimes", "/topologySpreadConstraints/0/whenUnsatisfiable"},
		{"webhook.hostNetwork=true,networkPolicy.enabled=true", "networkPolicy.enabled: NetworkPolicies do not apply"},
		{"networkPolicy.apiServer.cidrs={10.0.0.1}", "/networkPolicy/apiServer/cidrs/0"},
		{"webhook.exemptNamespaces={Ops}", "/webhook/exemptNamespaces/0"},
		{"metrics.serviceMonitor.labels.release=1", "/metrics/serviceMonitor/labels/release"},
		{"replicas=two", "replicas"},
		{"replicas=0", "replicas"},
		{"webhook.failurePolicy=Sometimes", "failurePolicy"},
		{"image.pullPolicy=Sometimes", "pullPolicy"},
		{"guard.openaiUpstream=ftp://example.com", "openaiUpstream"},
		{"guard.geminiUpstream=generativelanguage.googleapis.com", "geminiUpstream"},
		{"guard.memoryLimit=-1Mi", "memoryLimit"},
		{"guard.nativeSidecars=maybe", "nativeSidecars"},
		{"watchNamespaces={Team_A}", "watchNamespaces"},
		{"certManager.issuerRef.kind=Vault", "kind"},
		{"replica=2", "replica"},
		{"admissionPolicies.enabled=maybe", "enabled"},
		{"keylessEgress.namespaces={default}", "keylessEgress.namespaces: default is the release's namespace"},
		{"keylessEgress.namespaces={Team_A}", "/keylessEgress/namespaces/0"},
		{"keylessEgress.providerCIDRs={162.159.140.1}", "/keylessEgress/providerCIDRs/0"},
		{"keylessEgress.providerPorts={0}", "/keylessEgress/providerPorts/0"},
	} {
		out, err := helm(t, "template", "guardrail-operator", chartDir, "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s rendered; want a refusal", tc.set)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("--set %s: the refusal does not name %q:\n%s", tc.set, tc.want, out)
		}
	}
	// Values that are not strings of a --set: a list of strings where tolerations go, a
	// number where a quantity's string belongs is fine but a list is not.
	for _, tc := range []struct{ json, want string }{
		{`tolerations=["string"]`, "/tolerations/0"},
		{`tolerations=[{"operator":"Maybe"}]`, "/tolerations/0/operator"},
		{`resources={"limits":{"memory":["384Mi"]}}`, "/resources/limits/memory"},
		{`extraEnv=[{"value":"x"}]`, "/extraEnv/0"},
	} {
		out, err := helm(t, "template", "guardrail-operator", chartDir, "--set-json", tc.json)
		if err == nil {
			t.Errorf("--set-json %s rendered; want a refusal", tc.json)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("--set-json %s: the refusal does not name %q:\n%s", tc.json, tc.want, out)
		}
	}
}

// TestSchemaAcceptsWhatKubernetesAccepts: the schema is no stricter than the API where
// users need the API's forms (percentages, integers, decimal and binary quantities).
func TestSchemaAcceptsWhatKubernetesAccepts(t *testing.T) {
	for _, set := range [][]string{
		{"podDisruptionBudget.maxUnavailable=50%"},
		{"podDisruptionBudget.minAvailable=50%"},
		{"podDisruptionBudget.minAvailable=1", "replicas=3"},
		{"resources.limits.memory=1G", "resources.requests.cpu=0.5", "goMemLimit=900MiB"},
		{"resources.limits.memory=1Gi", "goMemLimit=1GiB"},
		{"goMemLimit=off", "resources.limits.memory=64Mi"},
		{"logLevel=5"},
		{"securityContext.capabilities.add={NET_BIND_SERVICE}", "podSecurityContext.runAsUser=10001", "podSecurityContext.seccompProfile.type=Localhost", "podSecurityContext.seccompProfile.localhostProfile=profiles/manager.json"},
		{"certManager.enabled=true", "certManager.issuerRef.name=corp-ca", "certManager.issuerRef.kind=ClusterIssuer"},
	} {
		if out, err := helm(t, append([]string{"template", "guardrail-operator", chartDir}, setArgs(set)...)...); err != nil {
			t.Errorf("--set %v refused: %v\n%s", set, err, out)
		}
	}
}

func setArgs(values []string) []string {
	var args []string
	for _, v := range values {
		args = append(args, "--set", v)
	}
	return args
}

// objects splits a render into objects.
func objects(t *testing.T, render string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(render), 4096)
	for {
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			break
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

func find(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if o["kind"] == kind && md["name"] == name {
			return o
		}
	}
	return nil
}

// TestRenderedRulesAndWebhooksAreControllerGens: the chart renders controller-gen's
// RBAC rules and webhook entries, so the chart and config/ cannot drift.
func TestRenderedRulesAndWebhooksAreControllerGens(t *testing.T) {
	chart := objects(t, render(t))
	read := func(path string) []map[string]any {
		b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), path)) //nolint:gosec // the repository's files
		if err != nil {
			t.Fatal(err)
		}
		return objects(t, string(b))
	}
	gen := read("config/rbac/role.yaml")
	for _, kind := range []string{"ClusterRole", "Role"} {
		want, got := find(gen, kind, "guardrail-operator"), find(chart, kind, "guardrail-operator")
		if want == nil || got == nil || !reflect.DeepEqual(want["rules"], got["rules"]) {
			t.Errorf("%s guardrail-operator: the chart's rules are not config/rbac/role.yaml's", kind)
		}
	}
	// config/webhook is controller-gen's entries with guardrail-system exempted (a kustomize
	// patch); the chart in guardrail-system must render exactly those.
	kustomized, err := exec.CommandContext(context.Background(), "kubectl", "kustomize", filepath.Join(envtestutil.RepoRoot(), "config", "webhook")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/webhook: %v", err)
	}
	want := find(objects(t, string(kustomized)), "MutatingWebhookConfiguration", "guardrail-pod-injector")
	got := find(chart, "MutatingWebhookConfiguration", "guardrail-pod-injector")
	if want == nil || got == nil || !reflect.DeepEqual(want["webhooks"], got["webhooks"]) {
		t.Errorf("the chart's webhook entries (default values, namespace guardrail-system) are not config/webhook's (kubectl kustomize)")
	}

	fail := objects(t, render(t, "webhook.failurePolicy=Fail"))
	for _, w := range find(fail, "MutatingWebhookConfiguration", "guardrail-pod-injector")["webhooks"].([]any) {
		if w.(map[string]any)["failurePolicy"] != "Fail" {
			t.Errorf("webhook.failurePolicy=Fail left %v", w.(map[string]any)["name"])
		}
	}
	ignore := find(chart, "MutatingWebhookConfiguration", "guardrail-pod-injector")["webhooks"].([]any)
	for _, w := range ignore {
		m := w.(map[string]any)
		if strings.HasPrefix(m["name"].(string), "required.") && m["failurePolicy"] != "Fail" {
			t.Errorf("the entry for guardrail.dev/injection=required must fail closed, got %v", m["failurePolicy"])
		}
	}
}

// TestAdmissionPoliciesAreConfigAdmissions: the chart installs the admission policies and
// bindings of config/admission by default (same names, same specs), and none of them with
// admissionPolicies.enabled=false.
func TestAdmissionPoliciesAreConfigAdmissions(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), "config", "admission", "policies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := objects(t, string(b))
	if len(want) != 8 {
		t.Fatalf("config/admission/policies.yaml holds %d objects; want four policies and their bindings", len(want))
	}
	chart := objects(t, render(t))
	for _, w := range want {
		kind, name := w["kind"].(string), w["metadata"].(map[string]any)["name"].(string)
		got := find(chart, kind, name)
		if got == nil {
			t.Errorf("the chart does not render %s %s", kind, name)
			continue
		}
		if !reflect.DeepEqual(w["spec"], got["spec"]) {
			t.Errorf("%s %s: the chart's spec is not config/admission's", kind, name)
		}
	}
	for _, o := range objects(t, render(t, "admissionPolicies.enabled=false")) {
		if k := o["kind"].(string); strings.HasPrefix(k, "ValidatingAdmissionPolicy") {
			t.Errorf("admissionPolicies.enabled=false rendered %s %v", k, o["metadata"].(map[string]any)["name"])
		}
	}
}

// TestRenderIsAcceptedByTheAPIServer applies renders to a real apiserver, as a
// server-side dry run: the default one, and one with every knob of the pod, the webhook,
// the PDB and the NetworkPolicy set (the Prometheus Operator's kinds are left out: their
// CRDs are not there).
func TestRenderIsAcceptedByTheAPIServer(t *testing.T) {
	env, err := envtestutil.New()
	if err != nil {
		t.Fatal(err)
	}
	env.CRDDirectoryPaths = []string{filepath.Join(envtestutil.RepoRoot(), "config", "crd", "bases")}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := envtestutil.WriteKubeconfig(env, "admin", kubeconfig); err != nil {
		t.Fatal(err)
	}
	kubectl := func(stdin string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(context.Background(), "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...) //nolint:gosec // test arguments
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	kubectl("", "create", "namespace", "guardrail-system")
	kubectl("", "create", "priorityclass", "guardrail-critical", "--value=1000000")
	for _, r := range []string{render(t), renderYAML(t, "guardrail-system", everyKnob)} {
		var docs []string
		for _, o := range objects(t, r) {
			if o["apiVersion"] == "monitoring.coreos.com/v1" {
				continue
			}
			b, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
		kubectl(strings.Join(docs, "---\n"), "apply", "--server-side", "--dry-run=server", "-f", "-")
	}
	// The example of the README's Network policies section, in the namespace it names.
	kubectl("", "create", "namespace", "team-b")
	kubectl("", "apply", "--dry-run=server", "-f", filepath.Join(chartDir, "examples", "app-egress-networkpolicy.yaml"))
	// The keyless egress policy, in the namespace it is rendered for.
	kubectl(renderYAML(t, "guardrail-system", "keylessEgress: {namespaces: [team-b], providerCIDRs: [162.159.140.0/24, \"2606:4700::/32\"], podSelector: {matchExpressions: [{key: app, operator: Exists}]}}"),
		"apply", "--server-side", "--dry-run=server", "-f", "-")
}

// TestDashboardQueriesExportedMetrics: every metric a panel of the Grafana dashboard
// queries is one the guard or the manager registers (names read from their sources), so a
// renamed metric cannot leave an empty panel behind.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	exported := map[string]bool{}
	decl := regexp.MustCompile(`Name:\s*"((?:guard|guardrail)_[a-z_]+)"`)
	for _, dir := range []string{"runtime", "controllers"} {
		err := filepath.WalkDir(filepath.Join(envtestutil.RepoRoot(), dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path) //nolint:gosec // the repository's sources
			for _, m := range decl.FindAllSubmatch(b, -1) {
				exported[string(m[1])] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "guardrail-operator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`\b(?:guard|guardrail)_[a-z_]+\b`)
	queried := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range used.FindAllString(tg.Expr, -1) {
				queried++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if trimmed, ok := strings.CutSuffix(name, suffix); ok && exported[trimmed] {
						base = trimmed
					}
				}
				if !exported[base] {
					t.Errorf("panel %q queries %s, which neither binary exports", p.Title, name)
				}
				if strings.HasSuffix(name, "_bucket") != strings.Contains(tg.Expr, "histogram_quantile") {
					t.Errorf("panel %q: %s and histogram_quantile go together", p.Title, name)
				}
			}
		}
	}
	if queried < 10 {
		t.Errorf("the dashboard queries %d metrics; it should show the guards and the manager", queried)
	}
}
