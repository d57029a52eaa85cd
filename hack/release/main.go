// Command release writes a release's assets into one directory (`make release`:
// bin/release), everything a user needs without this repository:
//
//	guardrail-operator-<chart version>.tgz              the Helm chart (helm package)
//	guardrail-operator-<appVersion>.oci.tar             the operator's image (manager and guard) as an
//	                                                    OCI image layout, under the reference the chart's
//	                                                    default values name; `ctr images import` loads it,
//	                                                    `skopeo copy oci-archive:…` pushes it
//	guardrail-extproc-<appVersion>.oci.tar              the Envoy external processor's image
//	                                                    (<repository>-extproc:<appVersion>, /guard-extproc)
//	guardrail-operator-<appVersion>.{manager,guard,guard-extproc}.cdx.json
//	                                                    CycloneDX SBOMs of the three binaries
//	                                                    (cyclonedx-gomod; only with -cyclonedx)
//	SHA256SUMS                                          the files' sums, for `sha256sum -c`
//
// The image is built as the cluster suite and `make dev` build it (test/singlenode.OperatorImage:
// CGO_ENABLED=0, -trimpath, nonroot, one layer, no Docker engine); its manifest digest is
// printed, for image.digest.
package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bin/release", "directory the assets are written into")
	flag.StringVar(&o.helm, "helm", "helm", "helm binary")
	flag.StringVar(&o.cyclonedx, "cyclonedx", "", "cyclonedx-gomod binary; empty writes no SBOM")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	assets, err := release(ctx, singlenode.RepoRoot(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err) //nolint:forbidigo // a command's error
		os.Exit(1)
	}
	for _, a := range assets {
		fmt.Println(a) //nolint:forbidigo // the command's output
	}
}

type options struct{ out, helm, cyclonedx string }

// chartMeta is what the release reads of Chart.yaml.
type chartMeta struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

// release writes the assets into o.out and returns a line per asset.
func release(ctx context.Context, root string, o options) ([]string, error) {
	if runtime.GOOS != "linux" {
		return nil, errors.New("the image is a linux one: run on linux")
	}
	chartDir := filepath.Join(root, "charts", "guardrail-operator")
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml")) //nolint:gosec // the repository's chart
	if err != nil {
		return nil, err
	}
	var meta chartMeta
	if err := yaml.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("reading the chart's Chart.yaml: %w", err)
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil { //nolint:gosec // a directory of public assets
		return nil, err
	}
	var files, lines []string

	if b, err := command(ctx, root, nil, o.helm, "lint", "--strict", chartDir); err != nil {
		return nil, fmt.Errorf("helm lint --strict: %w\n%s", err, b)
	}
	if b, err := command(ctx, root, nil, o.helm, "package", chartDir, "--destination", out); err != nil {
		return nil, fmt.Errorf("helm package: %w\n%s", err, b)
	}
	chartFile := fmt.Sprintf("guardrail-operator-%s.tgz", meta.Version)
	files = append(files, chartFile)
	lines = append(lines, "chart   "+filepath.Join(out, chartFile))

	img, err := singlenode.OperatorImage(ctx, root)
	if err != nil {
		return nil, err
	}
	defer img.Cleanup()
	imageFile := fmt.Sprintf("guardrail-operator-%s.oci.tar", meta.AppVersion)
	if err := writeImage(filepath.Join(out, imageFile), img); err != nil {
		return nil, err
	}
	manifest, err := manifestDigest(filepath.Join(out, imageFile))
	if err != nil {
		return nil, err
	}
	files = append(files, imageFile)
	lines = append(lines, fmt.Sprintf("image   %s (%s, manifest %s)", filepath.Join(out, imageFile), img.Ref, manifest))

	// The Envoy external processor (docs/extproc.md) has an image of its own: it links
	// gRPC, which the operator's image, pulled for every injected guard, does without.
	repo := img.Ref
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	extproc, err := singlenode.GoImage(ctx, root, repo+"-extproc:"+meta.AppVersion, map[string]string{"guard-extproc": "./cmd/guard-extproc"}, "guard-extproc")
	if err != nil {
		return nil, err
	}
	defer extproc.Cleanup()
	extprocFile := fmt.Sprintf("guardrail-extproc-%s.oci.tar", meta.AppVersion)
	if err := writeImage(filepath.Join(out, extprocFile), extproc); err != nil {
		return nil, err
	}
	if manifest, err = manifestDigest(filepath.Join(out, extprocFile)); err != nil {
		return nil, err
	}
	files = append(files, extprocFile)
	lines = append(lines, fmt.Sprintf("image   %s (%s, manifest %s)", filepath.Join(out, extprocFile), extproc.Ref, manifest))

	if o.cyclonedx != "" {
		for _, bin := range []struct{ name, main string }{{"manager", "."}, {"guard", "cmd/guard"}, {"guard-extproc", "cmd/guard-extproc"}} {
			sbom := fmt.Sprintf("guardrail-operator-%s.%s.cdx.json", meta.AppVersion, bin.name)
			// The build constraints of the image's binaries (test/singlenode.GoImage).
			env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + runtime.GOARCH}
			if b, err := command(ctx, root, env, o.cyclonedx, "app", "-json", "-packages", "-std", "-licenses",
				"-main", bin.main, "-output", filepath.Join(out, sbom), root); err != nil {
				return nil, fmt.Errorf("cyclonedx-gomod %s: %w\n%s", bin.name, err, b)
			}
			files = append(files, sbom)
			lines = append(lines, "sbom    "+filepath.Join(out, sbom))
		}
	}

	sums, err := checksums(out, files)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(sums), 0o644); err != nil { //nolint:gosec // public sums
		return nil, err
	}
	return append(lines, "sums    "+filepath.Join(out, "SHA256SUMS")), nil
}

func command(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // the release's own tools
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

func writeImage(path string, img singlenode.Image) error {
	f, err := os.Create(path) //nolint:gosec // the release directory
	if err != nil {
		return err
	}
	if err := singlenode.WriteOCI(f, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// manifestDigest reads the digest of the image manifest from an OCI archive's index.json.
func manifestDigest(path string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // the archive just written
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", fmt.Errorf("%s: no index.json", path)
		}
		if err != nil {
			return "", err
		}
		if h.Name != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Digest string `json:"digest"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			return "", err
		}
		if len(index.Manifests) != 1 {
			return "", fmt.Errorf("%s: %d manifests, want 1", path, len(index.Manifests))
		}
		return index.Manifests[0].Digest, nil
	}
}

// checksums is SHA256SUMS in sha256sum's format: "<hex>  <name>", sorted by name.
func checksums(dir string, files []string) (string, error) {
	sort.Strings(files)
	var b strings.Builder
	for _, name := range files {
		f, err := os.Open(filepath.Join(dir, name)) //nolint:gosec // the release's files
		if err != nil {
			return "", err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		_ = f.Close()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), name)
	}
	return b.String(), nil
}
