package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// buildAnnotation on a pod template names the operator image build it runs: the image is
// rebuilt under the same tag, so without it a second make dev would keep the old pods.
const buildAnnotation = "guardrail.dev/dev-build"

// loadImages builds the operator's and the fake provider's images from the working tree,
// imports them, and returns a short id of the operator image's content.
func loadImages(ctx context.Context, c *singlenode.Cluster) (string, error) {
	op, err := singlenode.OperatorImage(ctx, c.Root)
	if err != nil {
		return "", err
	}
	defer op.Cleanup()
	id, err := op.LayerDigest()
	if err != nil {
		return "", err
	}
	if err := c.Import(ctx, op); err != nil {
		return "", err
	}
	if err := c.LoadImages(ctx, singlenode.ProviderImage); err != nil {
		return "", err
	}
	return strings.TrimPrefix(id, "sha256:")[:12], nil
}

func (k kube) helmInstall(ctx context.Context, build string) (string, error) {
	return k.run(ctx, k.helm, "upgrade", "--install", release, "charts/guardrail-operator",
		"-n", releaseNamespace, "--create-namespace", "--wait", "--timeout", "5m",
		"--set-string", "podAnnotations."+strings.ReplaceAll(buildAnnotation, ".", `\.`)+"="+build)
}

// applyApp applies config/dev/chat.yaml with the image build in its pod template, so the
// demo pods roll onto a rebuilt guard (same tag) and stay when nothing changed.
func (k kube) applyApp(ctx context.Context, build string) error {
	b, err := os.ReadFile(filepath.Join(k.root, "config", "dev", "chat.yaml"))
	if err != nil {
		return err
	}
	const anchor = "      annotations:\n"
	if !bytes.Contains(b, []byte(anchor)) {
		return errors.New("config/dev/chat.yaml: no pod template annotations to add the build to")
	}
	b = bytes.Replace(b, []byte(anchor), []byte(anchor+"        "+buildAnnotation+": \""+build+"\"\n"), 1)
	cmd := exec.CommandContext(ctx, "kubectl", "apply", "-f", "-")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig)
	cmd.Stdin = bytes.NewReader(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply -f config/dev/chat.yaml: %w\n%s", err, out)
	}
	return nil
}
