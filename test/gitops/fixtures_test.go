// Package gitops tests the operator's face for GitOps tools (config/gitops): the Argo CD
// health checks run under a real Lua interpreter against their fixtures, the argocd-cm
// patch carries exactly those scripts, and the Flux health check expressions, evaluated the
// way kustomize-controller evaluates them, agree with the Argo CD checks on every fixture.
package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// argocdDir holds the health checks, laid out as Argo CD's resource_customizations:
// <group>/<Kind>/health.lua, health_test.yaml and testdata/.
var argocdDir = filepath.Join(envtestutil.RepoRoot(), "config", "gitops", "argocd")

// health is what an Argo CD health check returns.
type health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// healthTests is Argo CD's health_test.yaml.
type healthTests struct {
	Tests []struct {
		HealthStatus health `json:"healthStatus"`
		InputPath    string `json:"inputPath"`
	} `json:"tests"`
}

// healthCheck is one kind's health check with its expectations.
type healthCheck struct {
	Group, Kind string
	Dir         string
	Script      string
	Tests       healthTests
}

// healthChecks finds every health_test.yaml under config/gitops/argocd. It fails the test
// when the checks of the five kinds are not among them, so that a moved directory cannot make
// the tests pass on nothing.
func healthChecks(t *testing.T) []healthCheck {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(argocdDir, "*", "*", "health_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var checks []healthCheck
	for _, p := range paths {
		dir := filepath.Dir(p)
		c := healthCheck{Group: filepath.Base(filepath.Dir(dir)), Kind: filepath.Base(dir), Dir: dir}
		c.Script = readFile(t, filepath.Join(dir, "health.lua"))
		if err := yaml.UnmarshalStrict([]byte(readFile(t, p)), &c.Tests); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(c.Tests.Tests) == 0 {
			t.Fatalf("%s lists no tests", p)
		}
		checks = append(checks, c)
	}
	for _, want := range []string{"guardrail.dev/Guardrail", "guardrail.dev/Classifier", "guardrail.dev/ClusterGuardrail",
		"guardrail.dev/ClusterClassifier", "guardrail.dev/ModelProvider"} {
		if !slices.ContainsFunc(checks, func(c healthCheck) bool { return c.Group+"/"+c.Kind == want }) {
			t.Fatalf("no health_test.yaml for %s under %s", want, argocdDir)
		}
	}
	return checks
}

// object reads a fixture as the tools see it: Argo CD and Flux both hold the live object as
// unstructured content, integers as int64.
func (c healthCheck) object(t *testing.T, inputPath string) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(c.Dir, inputPath))), u); err != nil {
		t.Fatalf("%s: %v", inputPath, err)
	}
	if u.GroupVersionKind().Group != c.Group || u.GetKind() != c.Kind {
		t.Fatalf("%s is a %s, not a %s/%s", inputPath, u.GroupVersionKind(), c.Group, c.Kind)
	}
	return u.Object
}

// caseName names a fixture's subtest: "no-status is Progressing".
func caseName(inputPath, status string) string {
	return strings.TrimSuffix(filepath.Base(inputPath), ".yaml") + " is " + status
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryFixtureHasAnExpectation keeps testdata and health_test.yaml in step: a fixture
// nobody asserts on is a case that silently stopped being tested.
func TestEveryFixtureHasAnExpectation(t *testing.T) {
	for _, c := range healthChecks(t) {
		listed := map[string]bool{}
		for _, tc := range c.Tests.Tests {
			listed[filepath.Clean(tc.InputPath)] = true
		}
		fixtures, err := filepath.Glob(filepath.Join(c.Dir, "testdata", "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fixtures {
			if rel := filepath.Join("testdata", filepath.Base(f)); !listed[rel] {
				t.Errorf("%s/%s: %s is not listed in health_test.yaml", c.Group, c.Kind, rel)
			}
		}
	}
}
