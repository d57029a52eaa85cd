package singlenode

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Image is a container image written without a Docker engine: one layer of files, usually
// static binaries, and the image config (entrypoint, user, environment).
type Image struct {
	// Ref is the fully qualified reference the image is imported under (the CRI normalises
	// short names, so a short one would not be found).
	Ref        string
	Files      []File
	Entrypoint []string
	Cmd        []string
	// User as in a Dockerfile's USER: numeric, so runAsNonRoot can be verified.
	User string
	Env  []string
	// tmp is the directory GoImage built the Files' sources in (Cleanup removes it).
	tmp string
}

// Cleanup removes what GoImage built for img (its binaries, in a directory of their own),
// once img has been imported or written: a cluster suite builds images in every test, and
// the binaries would otherwise stay in the temporary directory for good. Files then no
// longer have their sources; an image without a build directory is left as it is.
func (img Image) Cleanup() {
	if img.tmp != "" {
		_ = os.RemoveAll(img.tmp)
	}
}

// File is one entry of the image's layer: a regular file (from Source on the host, or
// Data), a directory (Dir) or a symbolic link (Link).
type File struct {
	Path   string
	Source string
	Data   []byte
	Mode   int64
	Dir    bool
	Link   string
}

// epoch stamps every entry, so the same inputs give the same image digest.
var epoch = time.Unix(0, 0).UTC()

// WriteOCI writes img as an OCI image layout in a tar stream, the format
// `ctr images import` reads; the reference is in the index's io.containerd.image.name
// annotation.
func WriteOCI(w io.Writer, img Image) error {
	layer, err := img.layer()
	if err != nil {
		return err
	}
	layerDigest := digest(layer)
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config": map[string]any{
			"User": img.User, "Env": img.Env, "Entrypoint": img.Entrypoint, "Cmd": img.Cmd, "WorkingDir": "/",
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor("application/vnd.oci.image.config.v1+json", config),
		"layers":        []any{descriptor("application/vnd.oci.image.layer.v1.tar", layer)},
	})
	md := descriptor("application/vnd.oci.image.manifest.v1+json", manifest)
	md["platform"] = map[string]string{"architecture": "amd64", "os": "linux"}
	tag := img.Ref[strings.LastIndex(img.Ref, ":")+1:]
	md["annotations"] = map[string]string{"io.containerd.image.name": img.Ref, "org.opencontainers.image.ref.name": tag}
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     []any{md},
	})
	tw := tar.NewWriter(w)
	entries := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blobPath(config), config},
		{blobPath(manifest), manifest},
		{blobPath(layer), layer},
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "blobs/sha256/", Mode: 0o755, ModTime: epoch}); err != nil {
		return err
	}
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: epoch}); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func (img Image) layer() ([]byte, error) {
	files := append([]File(nil), img.Files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	var mkdirs func(string) error
	mkdirs = func(dir string) error {
		if dir == "." || dir == "/" || dir == "" || dirs[dir] {
			return nil
		}
		if err := mkdirs(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: epoch})
	}
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean(f.Path), "/")
		if err := mkdirs(path.Dir(name)); err != nil {
			return nil, err
		}
		h := &tar.Header{Name: name, Mode: f.Mode, ModTime: epoch}
		switch {
		case f.Dir:
			if dirs[name] {
				continue
			}
			dirs[name] = true
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			data := f.Data
			if f.Source != "" {
				var err error
				if data, err = os.ReadFile(f.Source); err != nil {
					return nil, err
				}
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func blobPath(b []byte) string { return "blobs/sha256/" + strings.TrimPrefix(digest(b), "sha256:") }

func descriptor(mediaType string, b []byte) map[string]any {
	return map[string]any{"mediaType": mediaType, "digest": digest(b), "size": len(b)}
}

// nonRoot are the files of a distroless-like base: the nonroot user (65532), /tmp and the
// host's CA bundle.
func nonRoot() []File {
	files := []File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/home/nonroot", Dir: true, Mode: 0o755},
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		files = append(files, File{Path: "/etc/ssl/certs/ca-certificates.crt", Source: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644})
	}
	return files
}

// GoImage builds the main packages pkgs of the repository (CGO_ENABLED=0, -trimpath, like
// the Dockerfile) and returns an image with each at /<name>, nonroot, entrypoint the first.
func GoImage(ctx context.Context, root, ref string, pkgs map[string]string, first string) (Image, error) {
	dir, err := os.MkdirTemp("", "guardrail-image-")
	if err != nil {
		return Image{}, err
	}
	img := Image{Ref: ref, User: "65532:65532", Entrypoint: []string{"/" + first}, Files: nonRoot(), tmp: dir}
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s", "-o", out, pkgs[name])
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			img.Cleanup()
			return Image{}, fmt.Errorf("go build %s: %v\n%s", pkgs[name], err, b)
		}
		img.Files = append(img.Files, File{Path: "/" + name, Source: out, Mode: 0o755})
	}
	return img, nil
}

// PauseImage is the sandbox image: a static Go program that waits for a signal and reaps
// children (internal/singlenode/pause), at the reference containerd is configured with.
func pauseImage(ctx context.Context, root string) (Image, error) {
	img, err := GoImage(ctx, root, PauseImage, map[string]string{"pause": "./internal/singlenode/pause"}, "pause")
	img.User = "65535:65535"
	return img, err
}

// busyboxImage is Debian's static busybox with a link per applet: a shell, cat, wget,
// nslookup and the rest, for smoke tests and debugging.
func busyboxImage(ctx context.Context) (Image, error) {
	const bb = "/bin/busybox"
	out, err := exec.CommandContext(ctx, bb, "--list").Output()
	if err != nil {
		return Image{}, fmt.Errorf("%s (Debian's busybox-static; hack/cluster/build.sh installs it): %w", bb, err)
	}
	img := Image{Ref: BusyboxImage, Cmd: []string{"/bin/sh"}, Files: append(nonRoot(), File{Path: bb, Source: bb, Mode: 0o755})}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && regexp.MustCompile(`^[a-z0-9_.\[-]+$`).MatchString(applet) {
			img.Files = append(img.Files, File{Path: "/bin/" + applet, Link: "busybox"})
		}
	}
	return img, nil
}

// BaseImages are the images every cluster gets at Up.
func BaseImages() []func(ctx context.Context, root string) (Image, error) {
	return []func(context.Context, string) (Image, error){
		pauseImage,
		func(ctx context.Context, _ string) (Image, error) { return busyboxImage(ctx) },
	}
}

// LoadImages builds each image and imports it into the cluster's containerd (namespace
// k8s.io, where the kubelet's images live).
func (c *Cluster) LoadImages(ctx context.Context, builders ...func(ctx context.Context, root string) (Image, error)) error {
	for _, build := range builders {
		img, err := build(ctx, c.Root)
		if err != nil {
			return err
		}
		err = c.Import(ctx, img)
		img.Cleanup()
		if err != nil {
			return err
		}
	}
	return nil
}

// Import writes img as an OCI archive and imports it with ctr.
func (c *Cluster) Import(ctx context.Context, img Image) error {
	f, err := os.CreateTemp("", "guardrail-image-*.tar")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if err := WriteOCI(f, img); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, c.Bin("ctr"), "--address", c.ContainerdSocket(), "-n", "k8s.io", "images", "import", "--local", f.Name())
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("import %s: %v\n%s", img.Ref, err, b)
	}
	return nil
}

// LayerDigest is the digest of img's only layer: it changes exactly when a file does, so
// a pod template annotated with it rolls when the image under the same tag was rebuilt.
func (img Image) LayerDigest() (string, error) {
	layer, err := img.layer()
	if err != nil {
		return "", err
	}
	return digest(layer), nil
}

// OperatorImage is the project's image as the Dockerfile builds it: /manager and /guard,
// nonroot, entrypoint /manager, under the reference the chart's default values name
// (repository and the chart's appVersion), so the chart installs unchanged.
func OperatorImage(ctx context.Context, root string) (Image, error) {
	ref, err := OperatorImageRef(root)
	if err != nil {
		return Image{}, err
	}
	return GoImage(ctx, root, ref, map[string]string{"manager": "./cmd/manager", "guard": "./cmd/guard"}, "manager")
}

// OperatorImageRef reads the chart's default image reference.
func OperatorImageRef(root string) (string, error) {
	chart, err := os.ReadFile(filepath.Join(root, "charts", "guardrail-operator", "Chart.yaml"))
	if err != nil {
		return "", err
	}
	values, err := os.ReadFile(filepath.Join(root, "charts", "guardrail-operator", "values.yaml"))
	if err != nil {
		return "", err
	}
	app := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?`).FindSubmatch(chart)
	repo := regexp.MustCompile(`(?m)^image:\s*\n(?:\s*#.*\n)*\s+repository:\s*(\S+)`).FindSubmatch(values)
	if app == nil || repo == nil {
		return "", fmt.Errorf("chart: cannot read the default image repository and appVersion")
	}
	return string(repo[1]) + ":" + string(app[1]), nil
}

// ProviderImageRef is the fake model provider's image (test/fakeprovider/cmd/fakeprovider:
// it answers every chat request by repeating its last message; port 8080).
const ProviderImageRef = "localhost/guardrail/fakeprovider:dev"

// ProviderImage builds the fake model provider's image.
func ProviderImage(ctx context.Context, root string) (Image, error) {
	return GoImage(ctx, root, ProviderImageRef, map[string]string{"fakeprovider": "./test/fakeprovider/cmd/fakeprovider"}, "fakeprovider")
}
