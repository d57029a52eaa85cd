// Package envtestutil starts the real control plane the tests run against: kube-apiserver
// and etcd built by hack/setup-controlplane.sh (cached in bin/controlplane), with the CRDs
// of config/crd/bases installed.
package envtestutil

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// AssetsDir returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS when
// set, else bin/controlplane. It fails with the command to run when they are missing.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "bin", "controlplane")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil { //nolint:gosec // the developer's own control-plane directory
			return "", fmt.Errorf("%s is missing from %s: run `make controlplane` (make test does it for you): %w", bin, dir, err)
		}
	}
	return dir, nil
}

// New returns an environment with the project's CRDs, ready to Start.
func New() (*envtest.Environment, error) {
	dir, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	return &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}, nil
}

// Start starts an environment of New for one test and stops it when the test ends.
func Start(t testing.TB) (*envtest.Environment, *rest.Config) {
	t.Helper()
	env, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env, cfg
}

// WriteKubeconfig writes a kubeconfig of a cluster-admin user of env to path (mode 0600),
// for kubectl and for the binaries the tests and harnesses start.
func WriteKubeconfig(env *envtest.Environment, name, path string) error {
	user, err := env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, kc, 0o600)
}
