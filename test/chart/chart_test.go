// Package chart tests the Helm chart in charts/guardrail-operator with the pinned helm
// binary (make test installs it and sets HELM): lint, golden renders, the values schema,
// that the rendered RBAC and webhook entries are controller-gen's, and that the render is
// accepted by a real apiserver.
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

func TestLintStrict(t *testing.T) {
	for _, values := range [][]string{nil, {"certManager.enabled=true", "metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true", "dashboard.enabled=true", "admissionPolicies.enabled=false"}} {
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
			"dashboard.enabled=true", "watchNamespaces={team-a,team-b}"},
	} {
		t.Run(name, func(t *testing.T) {
			got := render(t, values...)
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
		})
	}
}

func TestSchemaRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"replicas=two", "replicas"},
		{"replicas=0", "replicas"},
		{"webhook.failurePolicy=Sometimes", "failurePolicy"},
		{"image.pullPolicy=Sometimes", "pullPolicy"},
		{"guard.openaiUpstream=ftp://example.com", "openaiUpstream"},
		{"guard.memoryLimit=-1Mi", "memoryLimit"},
		{"guard.nativeSidecars=maybe", "nativeSidecars"},
		{"watchNamespaces={Team_A}", "watchNamespaces"},
		{"certManager.issuerRef.kind=Vault", "kind"},
		{"replica=2", "replica"},
		{"admissionPolicies.enabled=maybe", "enabled"},
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
	want := find(read("config/webhook/manifests.yaml"), "MutatingWebhookConfiguration", "guardrail-pod-injector")
	got := find(chart, "MutatingWebhookConfiguration", "guardrail-pod-injector")
	if want == nil || got == nil || !reflect.DeepEqual(want["webhooks"], got["webhooks"]) {
		t.Errorf("the chart's webhook entries (default values) are not config/webhook/manifests.yaml's")
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
	if len(want) != 6 {
		t.Fatalf("config/admission/policies.yaml holds %d objects; want three policies and their bindings", len(want))
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

// TestRenderIsAcceptedByTheAPIServer applies the default render to a real apiserver: the
// CRDs first (as helm installs crds/), then every object, as a server-side dry run.
func TestRenderIsAcceptedByTheAPIServer(t *testing.T) {
	env, err := envtestutil.New()
	if err != nil {
		t.Fatal(err)
	}
	env.CRDDirectoryPaths = []string{filepath.Join(chartDir, "crds")}
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
	var docs []string
	for _, o := range objects(t, render(t)) {
		if o["kind"] == "CustomResourceDefinition" {
			continue // installed above, from crds/
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	kubectl(strings.Join(docs, "---\n"), "apply", "--dry-run=server", "-f", "-")
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
