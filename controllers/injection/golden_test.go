package injection

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// TestGoldenPods renders the fixture pod in both shapes and compares it with testdata/, so
// that every change to what users get in their pods shows in review. Regenerate with
// go test ./controllers/injection -run TestGoldenPods -update.
func TestGoldenPods(t *testing.T) {
	for name, native := range map[string]bool{"native-sidecar": true, "legacy": false} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.NativeSidecars = native
			d := decide(newPod(withInitContainer("migrate"), withEnv("LOG_LEVEL", "info")), "apps", enabledNS, cfg, []byte(testCA), providerChoice{})
			got, err := yaml.Marshal(d.pod)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.MkdirAll("testdata", 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path) //nolint:gosec // a file of this package
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Fatalf("the injected pod changed (-want +got); run with -update if intended:\n%s", diff)
			}
		})
	}
}
