package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// apiserver is a real kube-apiserver (envtest) with helm and kubectl pointed at it. No
// kubelet runs there: releases are installed without --wait.
type apiserver struct {
	t          *testing.T
	kubeconfig string
	bin        string // a directory with `helm` (the pinned one), first on PATH
}

func newAPIServer(t *testing.T) *apiserver {
	t.Helper()
	env, err := envtestutil.New()
	if err != nil {
		t.Fatal(err)
	}
	env.CRDDirectoryPaths = nil // the releases install them
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	a := &apiserver{t: t, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), bin: t.TempDir()}
	if err := envtestutil.WriteKubeconfig(env, "admin", a.kubeconfig); err != nil {
		t.Fatal(err)
	}
	helmBin := os.Getenv("HELM")
	if helmBin == "" {
		helmBin = filepath.Join(envtestutil.RepoRoot(), "bin", "helm-v3.22.0")
	}
	if err := os.Symlink(helmBin, filepath.Join(a.bin, "helm")); err != nil {
		t.Fatal(err)
	}
	return a
}

// sh runs script with sh -e, helm and kubectl talking to the apiserver, env added.
func (a *apiserver) sh(script string, env ...string) (string, error) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-ec", script)
	cmd.Env = append(os.Environ(), append(env, "KUBECONFIG="+a.kubeconfig, "PATH="+a.bin+":"+os.Getenv("PATH"))...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (a *apiserver) must(script string, env ...string) string {
	a.t.Helper()
	out, err := a.sh(script, env...)
	if err != nil {
		a.t.Fatalf("%s: %v\n%s", strings.TrimSpace(script), err, out)
	}
	return out
}

// certManagerCRDs stand in for cert-manager's: the kinds exist, nothing issues.
const certManagerCRDs = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certificates.cert-manager.io}
spec:
  group: cert-manager.io
  names: {kind: Certificate, plural: certificates}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: issuers.cert-manager.io}
spec:
  group: cert-manager.io
  names: {kind: Issuer, plural: issuers}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// TestSwitchingCertificateModesOnUpgrade: self-managed → cert-manager → self-managed,
// each a helm upgrade against a real apiserver, while cert-manager's Secret (which Helm
// does not own) exists.
func TestSwitchingCertificateModesOnUpgrade(t *testing.T) {
	a := newAPIServer(t)
	a.must("kubectl apply -f - <<'EOF'\n" + certManagerCRDs + "EOF")
	notes := a.must(`helm install guardrail-operator "$CHART" -n guardrail-system --create-namespace`, "CHART="+chartDir)
	// The notes link the samples at the chart's version, and send nobody to a crds/ directory.
	if strings.Contains(notes, "/main/") || !regexp.MustCompile(`/v[0-9]+\.[0-9]+\.[0-9]+[^/]*/config/samples/`).MatchString(notes) || strings.Contains(notes, "crds/") {
		t.Errorf("NOTES:\n%s", notes)
	}
	a.must(`helm upgrade guardrail-operator "$CHART" -n guardrail-system --reset-then-reuse-values --set certManager.enabled=true`, "CHART="+chartDir)
	// What cert-manager does when the Certificate appears: the Secret it names, unowned by Helm.
	a.must(`name=$(kubectl -n guardrail-system get certificate guardrail-webhook-cert -o jsonpath='{.spec.secretName}')
kubectl -n guardrail-system create secret generic "$name" --from-literal=tls.crt=issued
kubectl -n guardrail-system annotate secret "$name" cert-manager.io/certificate-name=guardrail-webhook-cert`)
	out, err := a.sh(`helm upgrade guardrail-operator "$CHART" -n guardrail-system --reset-then-reuse-values --set certManager.enabled=false`, "CHART="+chartDir)
	if err != nil {
		t.Fatalf("switching back to self-managed certificates: %v\n%s", err, out)
	}
	owner := a.must(`kubectl -n guardrail-system get secret guardrail-webhook-cert -o jsonpath='{.metadata.annotations.meta\.helm\.sh/release-name}'`)
	if owner != "guardrail-operator" {
		t.Errorf("the rotator's Secret guardrail-webhook-cert is owned by %q, not the release", owner)
	}
	if args := a.must(`kubectl -n guardrail-system get deploy guardrail-operator -o jsonpath='{.spec.template.spec.containers[0].args}'`); !strings.Contains(args, "--cert-management=self") {
		t.Errorf("the manager runs with %s after switching back", args)
	}
}

// TestUpgradeFromAChartWithACRDsDirectory follows the README's Upgrade section from a
// release of a chart that kept its CRDs in crds/ (as 0.1.0 did): the CRDs are handed to
// the release, the upgrade upgrades them, a Guardrail survives it and the uninstall.
func TestUpgradeFromAChartWithACRDsDirectory(t *testing.T) {
	old := filepath.Join(t.TempDir(), "guardrail-operator")
	root := envtestutil.RepoRoot()
	if out, err := exec.CommandContext(context.Background(), "cp", "-r", chartDir, old).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(old, "templates", "crds")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(old, "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The kinds 0.1.0 had; those added since are created by the upgrade.
	for _, name := range []string{"guardrail.dev_guardrails.yaml", "guardrail.dev_classifiers.yaml"} {
		c := filepath.Join(root, "config", "crd", "bases", name)
		b, err := os.ReadFile(c) //nolint:gosec // the repository's CRDs
		if err != nil {
			t.Fatal(err)
		}
		// An older CRD: the upgrade must bring back the current description.
		b = []byte(strings.Replace(string(b), "openAPIV3Schema:\n        description: '", "openAPIV3Schema:\n        description: '(old) ", 1))
		if !strings.Contains(string(b), "(old)") {
			t.Fatalf("%s: the schema's description is not where the test marks it", c)
		}
		if err := os.WriteFile(filepath.Join(old, "crds", filepath.Base(c)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	readme := filepath.Join(chartDir, "README.md")
	blocks, err := ShellBlocks(readme, "## Upgrade")
	if err != nil || len(blocks) != 2 {
		t.Fatalf("README.md's Upgrade section: %d sh blocks (%v), want the upgrade and the hand-over of the CRDs", len(blocks), err)
	}
	upgrade, handOver := blocks[0], blocks[1]

	a := newAPIServer(t)
	a.must(`helm install guardrail-operator "$CHART" -n guardrail-system --create-namespace`, "CHART="+old)
	a.must("kubectl create namespace team-a && kubectl -n team-a apply -f " + filepath.Join(root, "config", "samples", "pii-secrets-redaction.yaml"))

	a.must(handOver)
	// The README's line, without --wait: no kubelet runs the manager here.
	a.must(strings.Replace(upgrade, " --wait", "", 1), "CHART="+chartDir)
	for _, crd := range []string{"guardrails.guardrail.dev", "classifiers.guardrail.dev"} {
		got := a.must(`kubectl get crd ` + crd + ` -o jsonpath='{.metadata.annotations.helm\.sh/resource-policy} {.spec.versions[0].schema.openAPIV3Schema.description}'`)
		if !strings.HasPrefix(got, "keep ") || strings.Contains(got, "(old)") {
			t.Errorf("CRD %s after the upgrade: %q, want it kept and upgraded", crd, got)
		}
	}
	a.must("kubectl -n team-a get guardrail redact-pii-secrets")

	uninstall, err := ShellBlocks(readme, "## Uninstall")
	if err != nil {
		t.Fatal(err)
	}
	a.must(strings.Replace(uninstall[0], " --wait", "", 1))
	a.must("kubectl get crd guardrails.guardrail.dev classifiers.guardrail.dev && kubectl -n team-a get guardrail redact-pii-secrets")
	if left := a.must("kubectl get mutatingwebhookconfigurations,clusterroles,clusterrolebindings,validatingadmissionpolicies -l app.kubernetes.io/instance=guardrail-operator -o name"); strings.TrimSpace(left) != "" {
		t.Errorf("left after helm uninstall:\n%s", left)
	}
	// README: a later install under the same name and namespace takes the kept CRDs back.
	a.must(`helm install guardrail-operator "$CHART" -n guardrail-system`, "CHART="+chartDir)
	a.must("kubectl -n team-a get guardrail redact-pii-secrets")
}
