// Command chart-sync copies what controller-gen generates into the Helm chart, so that the
// chart and the kustomize bases install the same CRDs, RBAC rules and webhook entries:
//
//	config/crd/bases/*.yaml       -> charts/guardrail-operator/crds/
//	config/rbac/role.yaml         -> charts/guardrail-operator/files/role.yaml
//	config/webhook/manifests.yaml -> charts/guardrail-operator/files/webhook.yaml
//
// `make manifests` runs it; `make verify` fails when the copies are stale.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run("."); err != nil {
		fmt.Fprintln(os.Stderr, "chart-sync:", err) //nolint:forbidigo // a command's error
		os.Exit(1)
	}
}

func run(root string) error {
	chart := filepath.Join(root, "charts", "guardrail-operator")
	crds, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	copies := map[string]string{
		filepath.Join(root, "config", "rbac", "role.yaml"):         filepath.Join(chart, "files", "role.yaml"),
		filepath.Join(root, "config", "webhook", "manifests.yaml"): filepath.Join(chart, "files", "webhook.yaml"),
	}
	for _, f := range crds {
		copies[f] = filepath.Join(chart, "crds", filepath.Base(f))
	}
	for from, to := range copies {
		b, err := os.ReadFile(from) //nolint:gosec // the repository's own files
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, 0o644); err != nil { //nolint:gosec // checked-in files
			return err
		}
	}
	return nil
}
