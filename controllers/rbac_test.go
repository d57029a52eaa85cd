package controllers_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// TestTheManagerCannotWritePods reads the RBAC controller-gen generates from the markers
// (config/rbac/role.yaml, which the chart installs as files/role.yaml): the manager reads
// pods and never writes them — a guard's state is its Lease — and its Leases are granted
// in its own namespace only.
func TestTheManagerCannotWritePods(t *testing.T) {
	for _, path := range []string{
		filepath.Join("config", "rbac", "role.yaml"),
		filepath.Join("charts", "guardrail-operator", "files", "role.yaml"),
	} {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), path))
			if err != nil {
				t.Fatal(err)
			}
			leasesInRole := false
			for _, doc := range strings.Split(string(b), "\n---\n") {
				var role rbacv1.ClusterRole // a Role has the same rules
				if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
					t.Fatal(err)
				}
				for _, r := range role.Rules {
					if grants(r, "", "pods") && writes(r) {
						t.Errorf("%s %s may %v pods", role.Kind, role.Name, r.Verbs)
					}
					if !grants(r, "coordination.k8s.io", "leases") {
						continue
					}
					if role.Kind != "Role" || role.Namespace != "guardrail-system" {
						t.Errorf("%s %s grants Leases outside the operator's namespace: %v", role.Kind, role.Name, r.Verbs)
					}
					leasesInRole = slices.Contains(r.Verbs, "create") && slices.Contains(r.Verbs, "patch") && slices.Contains(r.Verbs, "delete")
				}
			}
			if !leasesInRole {
				t.Error("no Role grants the guards' Leases in the operator's namespace")
			}
		})
	}
}

func grants(r rbacv1.PolicyRule, group, resource string) bool {
	return (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
		(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*"))
}

func writes(r rbacv1.PolicyRule) bool {
	for _, v := range r.Verbs {
		if v == "*" || v == "create" || v == "update" || v == "patch" || v == "delete" || v == "deletecollection" {
			return true
		}
	}
	return false
}

// TestTheManagerCannotRepointAModelProvider: the manager reads ModelProviders and writes
// only their status. A manager that could update one could point a provider's URL, and so
// its credential, elsewhere; only whoever applies them may.
func TestTheManagerCannotRepointAModelProvider(t *testing.T) {
	for _, path := range []string{
		filepath.Join("config", "rbac", "role.yaml"),
		filepath.Join("charts", "guardrail-operator", "files", "role.yaml"),
	} {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), path))
			if err != nil {
				t.Fatal(err)
			}
			readsThem, writesStatus := false, false
			for _, doc := range strings.Split(string(b), "\n---\n") {
				var role rbacv1.ClusterRole
				if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
					t.Fatal(err)
				}
				for _, r := range role.Rules {
					if grants(r, "guardrail.dev", "modelproviders") {
						readsThem = readsThem || slices.Contains(r.Verbs, "watch")
						if writes(r) {
							t.Errorf("%s %s may %v modelproviders", role.Kind, role.Name, r.Verbs)
						}
					}
					if grants(r, "guardrail.dev", "modelproviders/status") && slices.Contains(r.Verbs, "patch") {
						writesStatus = true
					}
				}
			}
			if !readsThem || !writesStatus {
				t.Errorf("the manager watches ModelProviders: %v, patches their status: %v; want both", readsThem, writesStatus)
			}
		})
	}
}
