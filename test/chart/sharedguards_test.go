package chart

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// sharedGuardResources are what the manager writes or reads for SharedGuards alone.
var sharedGuardResources = []string{"deployments", "services", "endpointslices", "poddisruptionbudgets", "sharedguards", "sharedguards/status"}

// ruleResources returns the resources of a ClusterRole's rules, each with its verbs.
func ruleResources(t *testing.T, role map[string]any) map[string][]any {
	t.Helper()
	if role == nil {
		t.Fatal("no such ClusterRole in the render")
	}
	got := map[string][]any{}
	for _, r := range role["rules"].([]any) {
		r := r.(map[string]any)
		for _, res := range r["resources"].([]any) {
			got[res.(string)] = append(got[res.(string)], r["verbs"].([]any)...)
		}
	}
	return got
}

// TestSharedGuardsCanBeTurnedOff: sharedGuards.enabled=false takes from the manager every
// right it holds for SharedGuards alone, and from tenants' edit and admin roles the right to
// write SharedGuards, and tells the manager not to reconcile them; every other rule of
// controller-gen's role stays as it is.
func TestSharedGuardsCanBeTurnedOff(t *testing.T) {
	on := objects(t, render(t))
	off := objects(t, render(t, "sharedGuards.enabled=false"))

	onRules := ruleResources(t, find(on, "ClusterRole", "guardrail-operator"))
	offRules := ruleResources(t, find(off, "ClusterRole", "guardrail-operator"))
	for _, res := range sharedGuardResources {
		if _, ok := onRules[res]; !ok {
			t.Errorf("by default the manager has no rule on %s: the shared guards need it", res)
		}
		if verbs, ok := offRules[res]; ok {
			t.Errorf("with sharedGuards.enabled=false the manager still has %v on %s", verbs, res)
		}
	}
	for res, verbs := range onRules {
		if slices.Contains(sharedGuardResources, res) {
			continue
		}
		if !reflect.DeepEqual(offRules[res], verbs) {
			t.Errorf("turning shared guards off changed the manager's rule on %s: %v, was %v", res, offRules[res], verbs)
		}
	}
	// The default render is controller-gen's role, rule for rule.
	b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := ruleResources(t, find(objects(t, string(b)), "ClusterRole", "guardrail-operator")); !reflect.DeepEqual(want, onRules) {
		t.Errorf("the default ClusterRole is not config/rbac/role.yaml's")
	}

	editOn := ruleResources(t, find(on, "ClusterRole", "guardrail-operator-edit"))
	editOff := ruleResources(t, find(off, "ClusterRole", "guardrail-operator-edit"))
	for _, res := range []string{"sharedguards", "sharedguards/scale"} {
		if _, ok := editOn[res]; !ok {
			t.Errorf("by default tenants' edit role cannot write %s", res)
		}
		if _, ok := editOff[res]; ok {
			t.Errorf("with sharedGuards.enabled=false tenants' edit role still writes %s", res)
		}
	}
	for _, res := range []string{"guardrails", "classifiers"} {
		if _, ok := editOff[res]; !ok {
			t.Errorf("with sharedGuards.enabled=false tenants' edit role lost %s", res)
		}
	}

	const flag = "--enable-shared-guards=false"
	if args := managerArgs(t, ""); slices.Contains(args, flag) {
		t.Errorf("%s by default", flag)
	}
	if args := managerArgs(t, "sharedGuards: {enabled: false}"); !slices.Contains(args, flag) {
		t.Errorf("%s missing with sharedGuards.enabled=false: %v", flag, args)
	}
}

// TestTheExtProcImageIsTheReleases: the manager is told the Envoy external processor's
// image, which ExtProc SharedGuards run and the control plane verifies them by: by default
// the one make release writes beside the operator's (<repository>-extproc:<appVersion>),
// following image.repository and image.tag; sharedGuards.extProcImage names another.
func TestTheExtProcImageIsTheReleases(t *testing.T) {
	for _, tc := range []struct{ values, want string }{
		{"", "--guard-extproc-image=ghcr.io/guardrail-dev/guardrail-operator-extproc:" + chartAppVersion(t)},
		{"image: {repository: mirror.test/guardrail, tag: v9}", "--guard-extproc-image=mirror.test/guardrail-extproc:v9"},
		{"sharedGuards: {extProcImage: mirror.test/extproc@sha256:0123}", "--guard-extproc-image=mirror.test/extproc@sha256:0123"},
	} {
		if args := managerArgs(t, tc.values); !slices.Contains(args, tc.want) {
			t.Errorf("values %q: args %v, want %s", tc.values, args, tc.want)
		}
	}
	for _, a := range managerArgs(t, "sharedGuards: {enabled: false}") {
		if strings.HasPrefix(a, "--guard-extproc-image") {
			t.Errorf("with sharedGuards.enabled=false the manager is given %s", a)
		}
	}
}

// chartAppVersion is Chart.yaml's appVersion.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), "charts", "guardrail-operator", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
	return ""
}
