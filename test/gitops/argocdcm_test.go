package gitops

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// healthKeyPrefix is the argocd-cm key of a health check, completed with <group>_<Kind>.
const healthKeyPrefix = "resource.customizations.health."

// TestArgoCDConfigMapPatchCarriesTheScripts holds the argocd-cm patch to the tested scripts:
// its health keys are exactly the checks under config/gitops/argocd, each value byte for
// byte the kind's health.lua, so that what users install is what the fixtures exercised.
func TestArgoCDConfigMapPatchCarriesTheScripts(t *testing.T) {
	path := filepath.Join(argocdDir, "argocd-cm-patch.yaml")
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(readFile(t, path)), &cm); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if cm.Kind != "ConfigMap" || cm.Name != "argocd-cm" {
		t.Errorf("%s patches %s %s, want ConfigMap argocd-cm", path, cm.Kind, cm.Name)
	}

	want := map[string]string{}
	for _, c := range healthChecks(t) {
		want[healthKeyPrefix+c.Group+"_"+c.Kind] = filepath.Join(c.Dir, "health.lua")
		script, ok := cm.Data[healthKeyPrefix+c.Group+"_"+c.Kind]
		switch {
		case !ok:
			t.Errorf("%s has no key %s%s_%s", path, healthKeyPrefix, c.Group, c.Kind)
		case script != c.Script:
			t.Errorf("%s: %s%s_%s differs from %s/%s/health.lua (first difference at line %d): "+
				"copy the script into the patch, indented under the key",
				path, healthKeyPrefix, c.Group, c.Kind, c.Group, c.Kind, firstDifferentLine(script, c.Script))
		}
	}
	for key := range cm.Data {
		if _, ok := want[key]; !ok && strings.HasPrefix(key, healthKeyPrefix) {
			t.Errorf("%s sets %s, which has no health.lua and fixtures under %s", path, key, argocdDir)
		}
	}
}

// firstDifferentLine returns the 1-based number of the first line where a and b differ.
func firstDifferentLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
