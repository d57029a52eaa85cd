package cluster_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
	"github.com/guardrail-dev/guardrail-operator/test/chart"
)

// TestPackagedChartLifecycle is a platform team's life with a release, on the real
// cluster, using only the release's assets and the commands of the chart's README: the
// assets built by hack/release (make release), the image archive imported into
// containerd, the packaged chart (.tgz) installed; the release namespace labelled
// guardrail.dev/injection=required and the manager's pods re-created there; an upgrade to
// a chart whose CRD changed, the Guardrails surviving it; the uninstall, which leaves no
// webhook configuration or cluster-scoped RBAC and keeps the CRDs and users' objects.
func TestPackagedChartLifecycle(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(singlenode.RequiredEnv) == "" {
		t.Skip("not root: the single-node cluster creates namespaces, mounts and cgroups")
	}
	helmBin := os.Getenv("HELM")
	if helmBin == "" {
		helmBin = filepath.Join(singlenode.RepoRoot(), "bin", "helm-v3.22.0")
	}
	c := clusterForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root := singlenode.RepoRoot()
	readme := filepath.Join(root, "charts", "guardrail-operator", "README.md")

	// The release's assets, as make release writes them (no SBOM: that needs a tool
	// the suite does not install).
	assets := t.TempDir()
	start := time.Now()
	release := exec.CommandContext(ctx, "go", "run", "./hack/release", "-out", assets, "-helm", helmBin)
	release.Dir = root
	if out, err := release.CombinedOutput(); err != nil {
		t.Fatalf("hack/release: %v\n%s", err, out)
	}
	t.Logf("release assets built in %s", time.Since(start).Round(time.Millisecond))
	sums := exec.CommandContext(ctx, "sha256sum", "-c", "SHA256SUMS")
	sums.Dir = assets
	if out, err := sums.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}
	chartV1 := onlyFile(t, assets, "guardrail-operator-*.tgz")
	image := onlyFile(t, assets, "guardrail-operator-*.oci.tar")
	// The Envoy external processor's image is an asset of its own; it must load too.
	for _, img := range []string{image, onlyFile(t, assets, "guardrail-extproc-*.oci.tar")} {
		imp := exec.CommandContext(ctx, c.Bin("ctr"), "--address", c.ContainerdSocket(), "-n", "k8s.io", "images", "import", "--local", img)
		if out, err := imp.CombinedOutput(); err != nil {
			t.Fatalf("ctr images import %s: %v\n%s", img, err, out)
		}
	}
	chartV2 := changedCRDChart(ctx, t, helmBin, chartV1)

	u := shellUser{t: t, kubeconfig: c.Kubeconfig(), bin: t.TempDir()}
	if err := os.Symlink(helmBin, filepath.Join(u.bin, "helm")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Leave a shared cluster as found: no policies (their Classifier's finalizer has no
		// manager left to remove it), no required label on the release namespace.
		_, _ = u.sh(`kubectl -n team-a patch classifier pii-secrets --type merge -p '{"metadata":{"finalizers":null}}' || true
kubectl delete namespace team-a --ignore-not-found --wait=false
kubectl label namespace guardrail-system guardrail.dev/injection- || true
helm uninstall guardrail-operator -n guardrail-system --wait --ignore-not-found || true`)
	})

	install := docBlocks(t, readme, "## Install")[0]
	start = time.Now()
	u.must(install, "CHART="+chartV1)
	t.Logf("README's install of %s: %s", filepath.Base(chartV1), time.Since(start).Round(time.Millisecond))
	u.must(`kubectl create namespace team-a
kubectl -n team-a apply -f ` + filepath.Join(root, "config", "samples", "pii-secrets-redaction.yaml") + `
kubectl -n team-a wait --for=condition=Ready guardrails,classifiers --all --timeout=2m`)
	uids := u.must(`kubectl -n team-a get guardrails,classifiers -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid} {end}'`)

	t.Run("a manager pod in the release namespace labelled required is created", func(t *testing.T) {
		u := u.with(t)
		// With no manager running, a required entry that matched the release namespace
		// (failurePolicy Fail) would refuse the manager's own new pods: the operator could
		// never come back. The case, made certain by scaling to zero first.
		u.must(`kubectl label namespace guardrail-system guardrail.dev/injection=required --overwrite
kubectl -n guardrail-system scale deployment/guardrail-operator --replicas=0
until [ -z "$(kubectl -n guardrail-system get pods -l app.kubernetes.io/name=guardrail-operator -o name)" ]; do sleep 1; done
kubectl -n guardrail-system scale deployment/guardrail-operator --replicas=2
kubectl -n guardrail-system rollout status deployment/guardrail-operator --timeout=3m`)
		got := u.must(`kubectl -n guardrail-system get pods -l app.kubernetes.io/name=guardrail-operator -o jsonpath='{range .items[*]}{.metadata.name}:{.spec.initContainers[*].name}{.spec.containers[*].name} {end}'`)
		if strings.Contains(got, "guardrail-guard") {
			t.Errorf("the manager's own pods got a guard: %s", got)
		}
		u.must(`kubectl label namespace guardrail-system guardrail.dev/injection-`)
	})

	t.Run("the README's upgrade to a chart whose CRD changed upgrades it and keeps the policies", func(t *testing.T) {
		u := u.with(t)
		upgrade := docBlocks(t, readme, "## Upgrade")[0]
		start := time.Now()
		u.must(upgrade, "CHART="+chartV2)
		t.Logf("README's upgrade to %s: %s", filepath.Base(chartV2), time.Since(start).Round(time.Millisecond))
		if got := u.must(`kubectl get crd guardrails.guardrail.dev -o jsonpath='{.spec.versions[0].schema.openAPIV3Schema.description}'`); !strings.HasPrefix(got, "(upgraded) ") {
			t.Errorf("the Guardrail CRD was not upgraded: its description is %.80q", got)
		}
		if got := u.must(`kubectl -n team-a get guardrails,classifiers -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid} {end}'`); got != uids {
			t.Errorf("policies after the upgrade: %s\nbefore: %s", got, uids)
		}
		u.must(`kubectl -n team-a wait --for=condition=Ready guardrails,classifiers --all --timeout=2m`)
		if got := u.must(`helm history guardrail-operator -n guardrail-system -o json`); !strings.Contains(got, `"chart":"guardrail-operator-0.1.1-crdchange"`) {
			t.Errorf("helm history does not show the upgraded chart: %s", got)
		}
	})

	t.Run("with sharedGuards.enabled=false the manager holds no right to write workloads and still reconciles", func(t *testing.T) {
		u := u.with(t)
		u.must(`helm upgrade guardrail-operator "$CHART" -n guardrail-system --reuse-values --set sharedGuards.enabled=false --wait --timeout 5m
kubectl -n guardrail-system rollout status deployment/guardrail-operator --timeout=3m`, "CHART="+chartV2)
		const manager = "system:serviceaccount:guardrail-system:guardrail-operator"
		for _, what := range []string{"create deployments.apps", "update deployments.apps", "create services", "update services",
			"create endpointslices.discovery.k8s.io", "create poddisruptionbudgets.policy", "list deployments.apps"} {
			if out, _ := u.sh(`kubectl auth can-i ` + what + ` --all-namespaces --as=` + manager); strings.TrimSpace(out) != "no" {
				t.Errorf("the manager may %s with shared guards off: %s", what, out)
			}
		}
		// A tenant with the aggregated edit role keeps its policies and loses SharedGuards.
		u.must(`kubectl -n team-a create rolebinding tenant-edit --clusterrole=edit --user=tenant`)
		if out, _ := u.sh(`kubectl -n team-a auth can-i create sharedguards.guardrail.dev --as=tenant`); strings.TrimSpace(out) != "no" {
			t.Errorf("a tenant with edit may create SharedGuards with shared guards off: %s", out)
		}
		if out, _ := u.sh(`kubectl -n team-a auth can-i create guardrails.guardrail.dev --as=tenant`); strings.TrimSpace(out) != "yes" {
			t.Errorf("a tenant with edit may no longer create Guardrails: %s", out)
		}
		// The manager, restarted with the narrower role, reconciles a new policy and logs no
		// refusal of the API server.
		u.must(`sed 's/name: redact-pii-secrets/name: redact-with-shared-guards-off/' ` + filepath.Join(root, "config", "samples", "pii-secrets-redaction.yaml") + ` | kubectl -n team-a apply -f -
kubectl -n team-a wait --for=condition=Ready guardrail/redact-with-shared-guards-off --timeout=2m
kubectl -n team-a delete guardrail redact-with-shared-guards-off --wait
kubectl -n team-a delete rolebinding tenant-edit`)
		if logs := u.must(`kubectl -n guardrail-system logs -l app.kubernetes.io/name=guardrail-operator --tail=-1 --prefix`); strings.Contains(logs, "forbidden") {
			t.Errorf("the manager was refused something with shared guards off:\n%s", grepLines(logs, "forbidden"))
		}
	})

	t.Run("the README's uninstall leaves no webhook or cluster-scoped RBAC and keeps CRDs and policies", func(t *testing.T) {
		u := u.with(t)
		u.must(docBlocks(t, readme, "## Uninstall")[0])
		if left := u.must(`kubectl get mutatingwebhookconfigurations,validatingadmissionpolicies,validatingadmissionpolicybindings,clusterroles,clusterrolebindings -l app.kubernetes.io/instance=guardrail-operator -o name`); strings.TrimSpace(left) != "" {
			t.Errorf("cluster-scoped objects left after helm uninstall:\n%s", left)
		}
		if out, err := u.sh(`kubectl get mutatingwebhookconfiguration guardrail-pod-injector`); err == nil {
			t.Errorf("the webhook configuration is left: new pods would be sent to a webhook that is gone:\n%s", out)
		}
		if out, err := u.sh(`kubectl get clusterrole guardrail-operator guardrail-operator-secret-reader guardrail-operator-metrics-auth guardrail-operator-metrics-reader -o name`); err == nil || strings.Contains(out, "clusterrole.rbac") {
			t.Errorf("ClusterRoles left after helm uninstall:\n%s", out)
		}
		u.must(`kubectl get crd guardrails.guardrail.dev classifiers.guardrail.dev`)
		if got := u.must(`kubectl -n team-a get guardrails,classifiers -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid} {end}'`); got != uids {
			t.Errorf("policies after the uninstall: %s\nbefore: %s", got, uids)
		}
	})
}

// clusterForTest is make cluster-up's cluster when it runs, else a private one for this test.
func clusterForTest(t *testing.T) *singlenode.Cluster {
	t.Helper()
	if c, err := singlenode.Attach(singlenode.DefaultLayout()); err == nil {
		return c
	}
	start := time.Now()
	c, stop, err := singlenode.Private(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up to node Ready in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	return c
}

func onlyFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("%s in the release's assets: %v (%v)", pattern, m, err)
	}
	return m[0]
}

func docBlocks(t *testing.T, readme, heading string) []string {
	t.Helper()
	blocks, err := chart.ShellBlocks(readme, heading)
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// changedCRDChart is the packaged chart with the Guardrail CRD's description changed and
// the version 0.1.1-crdchange: a next release whose CRD differs.
func changedCRDChart(ctx context.Context, t *testing.T, helmBin, tgz string) string {
	t.Helper()
	dir := t.TempDir()
	if err := untar(tgz, dir); err != nil {
		t.Fatal(err)
	}
	edit := func(path, old, new string) {
		b, err := os.ReadFile(path) //nolint:gosec // the unpacked chart
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s has no %q", path, old)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	chartDir := filepath.Join(dir, "guardrail-operator")
	// The schema's description may be a quoted scalar: the mark goes inside the quotes.
	crd := filepath.Join(chartDir, "templates", "crds", "guardrail.dev_guardrails.yaml")
	const at = "openAPIV3Schema:\n        description: "
	b, err := os.ReadFile(crd) //nolint:gosec // the unpacked chart
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), at)
	if i < 0 {
		t.Fatalf("%s has no %q", crd, at)
	}
	quote := ""
	if q := b[i+len(at)]; q == '\'' || q == '"' {
		quote = string(q)
	}
	edit(crd, at+quote, at+quote+"(upgraded) ")
	edit(filepath.Join(chartDir, "Chart.yaml"), "\nversion: ", "\nversion: 0.1.1-crdchange\n# was: ")
	out, err := exec.CommandContext(ctx, helmBin, "package", chartDir, "--destination", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("helm package: %v\n%s", err, out)
	}
	return filepath.Join(dir, "guardrail-operator-0.1.1-crdchange.tgz")
}

func untar(tgz, dir string) error {
	f, err := os.Open(tgz) //nolint:gosec // the release's chart
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.Clean("/"+h.Name)) //nolint:gosec // a chart helm just packaged
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
}

// shellUser runs commands as a user at a shell would: sh -e, KUBECONFIG set, the pinned
// helm as `helm`.
type shellUser struct {
	t               *testing.T
	kubeconfig, bin string
}

func (u shellUser) with(t *testing.T) shellUser { u.t = t; return u }

func (u shellUser) sh(script string, env ...string) (string, error) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-ec", script)
	cmd.Env = append(os.Environ(), append(env, "KUBECONFIG="+u.kubeconfig, "PATH="+u.bin+":"+os.Getenv("PATH"))...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (u shellUser) must(script string, env ...string) string {
	u.t.Helper()
	out, err := u.sh(script, env...)
	if err != nil {
		u.t.Fatalf("%s: %v\n%s", strings.TrimSpace(script), err, out)
	}
	return out
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
