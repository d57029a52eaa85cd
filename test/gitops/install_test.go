package gitops

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// The operator installed through GitOps (charts/guardrail-operator/examples): no Flux or
// Argo CD runs here, so these tests check the manifests against the chart they install,
// render the chart with their values the way the tools do, and replay Argo CD's
// server-side apply of the render, then of an upgrade whose CRD changed, against a real
// apiserver. Flux's helm-controller runs Helm itself: test/chart and the cluster suite
// (test/cluster, the packaged chart) cover helm install, upgrade and uninstall.

var chartDir = filepath.Join(envtestutil.RepoRoot(), "charts", "guardrail-operator")

// kubeVersion is the Kubernetes the project tests against; Argo CD passes the cluster's.
const kubeVersion = "v1.37.2"

func helmBin() string {
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	return filepath.Join(envtestutil.RepoRoot(), "bin", "helm-v3.22.0")
}

func run(t *testing.T, stdin []byte, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // test tools
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func docs(t *testing.T, path string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(readFile(t, path)), 4096)
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

func kindOf(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range objs {
		if o["kind"] == kind && o["metadata"].(map[string]any)["name"] == name {
			return o
		}
	}
	return nil
}

func at(o map[string]any, path ...string) any {
	var cur any = o
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func chartVersion(t *testing.T) string {
	t.Helper()
	var c struct{ Version string }
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(chartDir, "Chart.yaml"))), &c); err != nil {
		t.Fatal(err)
	}
	return c.Version
}

// renderWith renders the chart as a GitOps tool does: helm template with the release
// name and namespace, the values given, CRDs included.
func renderWith(t *testing.T, chart string, values map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return run(t, nil, helmBin(), "template", "guardrail-operator", chart, "--namespace", "guardrail-system",
		"--include-crds", "--kube-version", kubeVersion, "-f", f)
}

// TestFluxHelmReleaseInstallsThisChart: the example HelmRelease is the README's release
// (name, namespace), pins this chart's version, leaves the CRDs to the chart's templates
// (install.crds and upgrade.crds Skip), its values pass the chart's schema, and the
// policies' Kustomization depends on it and takes the samples of the same version.
func TestFluxHelmReleaseInstallsThisChart(t *testing.T) {
	objs := docs(t, filepath.Join(chartDir, "examples", "flux-helmrelease.yaml"))
	hr := kindOf(objs, "HelmRelease", "guardrail-operator")
	repo := kindOf(objs, "OCIRepository", "guardrail-operator")
	if hr == nil || repo == nil {
		t.Fatal("the example has no HelmRelease and OCIRepository guardrail-operator")
	}
	if hr["apiVersion"] != "helm.toolkit.fluxcd.io/v2" {
		t.Errorf("HelmRelease apiVersion %v", hr["apiVersion"])
	}
	for path, want := range map[string]string{
		"spec.releaseName": "guardrail-operator", "spec.targetNamespace": "guardrail-system", "spec.storageNamespace": "guardrail-system",
		"spec.install.crds": "Skip", "spec.upgrade.crds": "Skip", "spec.chartRef.name": "guardrail-operator",
	} {
		if got := at(hr, strings.Split(path, ".")...); got != want {
			t.Errorf("HelmRelease %s = %v, want %s", path, got, want)
		}
	}
	if got := at(repo, "spec", "ref", "semver"); got != chartVersion(t) {
		t.Errorf("OCIRepository pins %v, not the chart's version %s", got, chartVersion(t))
	}
	if _, err := os.Stat(filepath.Join(chartDir, "crds")); err == nil {
		t.Errorf("the chart has a crds/ directory again: upgrade.crds Skip would leave it stale")
	}
	renderWith(t, chartDir, at(hr, "spec", "values").(map[string]any))

	ks := kindOf(objs, "Kustomization", "guardrail-policies")
	git := kindOf(objs, "GitRepository", "guardrail-samples")
	if ks == nil || git == nil {
		t.Fatal("the example has no Kustomization of the policies and its GitRepository")
	}
	deps, _ := at(ks, "spec", "dependsOn").([]any)
	if len(deps) != 1 || at(deps[0].(map[string]any), "name") != "guardrail-operator" || at(ks, "spec", "wait") != true {
		t.Errorf("the policies' Kustomization must wait and depend on the operator's: %v", ks["spec"])
	}
	if got := at(git, "spec", "ref", "tag"); got != "v"+chartVersion(t) {
		t.Errorf("the samples come from %v, not v%s", got, chartVersion(t))
	}
}

// TestArgoCDApplicationInstallsThisChart checks the example Applications, then replays
// what Argo CD does with them against a real apiserver: the render applied server-side
// by Argo CD's field manager, the manager writing its certificate and caBundle, a
// resync, the samples applied, an upgrade whose CRD changed, and the Application's
// deletion, which must keep every object annotated helm.sh/resource-policy: keep.
func TestArgoCDApplicationInstallsThisChart(t *testing.T) {
	objs := docs(t, filepath.Join(chartDir, "examples", "argocd-application.yaml"))
	app := kindOf(objs, "Application", "guardrail-operator")
	policies := kindOf(objs, "Application", "guardrail-policies")
	if app == nil || policies == nil {
		t.Fatal("the example has no Applications guardrail-operator and guardrail-policies")
	}
	version := chartVersion(t)
	for path, want := range map[string]any{
		"spec.source.chart": "guardrail-operator", "spec.source.targetRevision": version,
		"spec.source.helm.releaseName": "guardrail-operator", "spec.destination.namespace": "guardrail-system",
		"metadata.annotations.argocd.argoproj.io/sync-wave": "-1",
	} {
		keys := strings.Split(path, ".")
		if strings.HasPrefix(path, "metadata.annotations.") {
			keys = []string{"metadata", "annotations", strings.TrimPrefix(path, "metadata.annotations.")}
		}
		if got := at(app, keys...); got != want {
			t.Errorf("Application %s = %v, want %v", path, got, want)
		}
	}
	opts := at(app, "spec", "syncPolicy", "syncOptions").([]any)
	if !slices.Contains(opts, any("ServerSideApply=true")) {
		t.Errorf("syncOptions %v: without ServerSideApply Argo CD would fight the manager over its caBundle", opts)
	}
	if at(policies, "spec", "source", "targetRevision") != "v"+version || at(policies, "spec", "source", "path") != "config/samples" {
		t.Errorf("the policies' Application takes %v at %v, want config/samples at v%s", at(policies, "spec", "source", "path"), at(policies, "spec", "source", "targetRevision"), version)
	}
	render := renderWith(t, chartDir, at(app, "spec", "source", "helm", "valuesObject").(map[string]any))

	env, err := envtestutil.New()
	if err != nil {
		t.Fatal(err)
	}
	env.CRDDirectoryPaths = nil // the render installs them, as Argo CD's sync does
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := envtestutil.WriteKubeconfig(env, "admin", kubeconfig); err != nil {
		t.Fatal(err)
	}
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		return run(t, []byte(stdin), "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
	argoApply := func(manifests string) {
		t.Helper()
		kubectl(manifests, "apply", "--server-side", "--field-manager=argocd-controller", "-f", "-")
	}
	kubectl("", "create", "namespace", "guardrail-system") // CreateNamespace=true
	argoApply(render)
	// The manager's rotator: the certificate into its Secret, the CA into the webhooks.
	kubectl("", "-n", "guardrail-system", "patch", "secret", "guardrail-webhook-cert", "--field-manager=guardrail-operator",
		"--type=merge", "-p", `{"data":{"ca.crt":"Y2E=","tls.crt":"Y2VydA==","tls.key":"a2V5"}}`)
	n := strings.Count(kubectl("", "get", "mutatingwebhookconfiguration", "guardrail-pod-injector", "-o", "jsonpath={.webhooks[*].name}"), ".inject.")
	var patch []string
	for i := range n {
		patch = append(patch, `{"op":"add","path":"/webhooks/`+strconv.Itoa(i)+`/clientConfig/caBundle","value":"Y2E="}`)
	}
	kubectl("", "patch", "mutatingwebhookconfiguration", "guardrail-pod-injector", "--field-manager=guardrail-operator",
		"--type=json", "-p", "["+strings.Join(patch, ",")+"]")

	argoApply(render) // a resync (selfHeal)
	if got := kubectl("", "-n", "guardrail-system", "get", "secret", "guardrail-webhook-cert", "-o", "jsonpath={.data.tls\\.key}"); got != "a2V5" {
		t.Errorf("a resync emptied the manager's certificate Secret (tls.key %q)", got)
	}
	if got := kubectl("", "get", "mutatingwebhookconfiguration", "guardrail-pod-injector", "-o", "jsonpath={.webhooks[*].clientConfig.caBundle}"); strings.Count(got, "Y2E=") != n {
		t.Errorf("a resync removed the caBundle the manager wrote: %q", got)
	}

	kubectl("", "create", "namespace", "team-a")
	samples, _ := filepath.Glob(filepath.Join(envtestutil.RepoRoot(), "config", "samples", "*.yaml"))
	for _, s := range samples {
		kubectl("", "-n", "team-a", "apply", "--server-side", "--field-manager=argocd-controller", "-f", s)
	}
	before := kubectl("", "-n", "team-a", "get", "guardrails,classifiers", "-o", "jsonpath={.items[*].metadata.uid}")

	// An upgrade whose CRD changed: the next chart version's render, applied the same way.
	next := filepath.Join(t.TempDir(), "guardrail-operator")
	run(t, nil, "cp", "-r", chartDir, next)
	crd := filepath.Join(next, "templates", "crds", "guardrail.dev_guardrails.yaml")
	b := readFile(t, crd)
	const mark = "openAPIV3Schema:\n        description: '"
	if !strings.Contains(b, mark) {
		t.Fatalf("%s: the schema's description is not where the test marks it", crd)
	}
	if err := os.WriteFile(crd, []byte(strings.Replace(b, mark, mark+"(next) ", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	argoApply(renderWith(t, next, at(app, "spec", "source", "helm", "valuesObject").(map[string]any)))
	if got := kubectl("", "get", "crd", "guardrails.guardrail.dev", "-o", "jsonpath={.spec.versions[0].schema.openAPIV3Schema.description}"); !strings.HasPrefix(got, "(next) ") {
		t.Errorf("the upgrade did not change the CRD: %.60q", got)
	}
	if got := kubectl("", "-n", "team-a", "get", "guardrails,classifiers", "-o", "jsonpath={.items[*].metadata.uid}"); got != before {
		t.Errorf("the policies changed across the upgrade: %s, before %s", got, before)
	}

	// Deleting the Application: Argo CD deletes what it applied, except what is annotated
	// helm.sh/resource-policy: keep.
	var kept []string
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(render), 4096)
	for {
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			break
		}
		if o == nil {
			continue
		}
		name := at(o, "metadata", "name").(string)
		if at(o, "metadata", "annotations", "helm.sh/resource-policy") == "keep" {
			kept = append(kept, o["kind"].(string)+"/"+name)
			continue
		}
		b, _ := yaml.Marshal(o)
		kubectl(string(b), "delete", "--namespace", "guardrail-system", "--wait=false", "-f", "-")
	}
	slices.Sort(kept)
	if want := []string{"CustomResourceDefinition/classifiers.guardrail.dev", "CustomResourceDefinition/clusterclassifiers.guardrail.dev",
		"CustomResourceDefinition/clusterguardrails.guardrail.dev", "CustomResourceDefinition/guardrails.guardrail.dev",
		"CustomResourceDefinition/modelproviders.guardrail.dev", "CustomResourceDefinition/sharedguards.guardrail.dev"}; !slices.Equal(kept, want) {
		t.Errorf("kept by the Application's deletion: %v, want %v", kept, want)
	}
	if got := kubectl("", "-n", "team-a", "get", "guardrails,classifiers", "-o", "jsonpath={.items[*].metadata.uid}"); got != before {
		t.Errorf("the policies after the Application's deletion: %s, before %s", got, before)
	}
}
