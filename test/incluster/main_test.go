// Package incluster runs the product as users do, on the real single-node cluster
// (internal/singlenode): the Helm chart from the working tree with the locally built image, pods
// whose guard the webhook injects and the kubelet really starts, policies applied with
// kubectl, traffic from inside the app's pod.
package incluster

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

func TestMain(m *testing.M) { os.Exit(singlenode.Main(m)) }

// user runs kubectl and helm against one cluster, as a user at a shell would.
type user struct {
	t *testing.T
	c *singlenode.Cluster
}

func (u user) run(name string, args ...string) (string, error) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.c.Kubeconfig())
	cmd.Dir = u.c.Root
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectlStdout is kubectl's standard output alone: for `kubectl exec`, what the command in
// the container printed, without the client's own warnings on stderr (a websocket's
// "Unknown stream id 1, discarding message"), which are added to the failure's message only.
func (u user) kubectlStdout(args ...string) string {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.c.Kubeconfig())
	cmd.Dir = u.c.Root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		u.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func (u user) kubectl(args ...string) string {
	u.t.Helper()
	out, err := u.run("kubectl", args...)
	if err != nil {
		u.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (u user) helm(args ...string) string {
	u.t.Helper()
	out, err := u.run(helmBinary(u.t), args...)
	if err != nil {
		u.t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// eventually polls kubectl args until the output satisfies ok, or fails after timeout with
// the last output.
func (u user) eventually(timeout time.Duration, ok func(string) bool, args ...string) string {
	u.t.Helper()
	deadline := time.Now().Add(timeout)
	var out string
	for {
		var err error
		out, err = u.run("kubectl", args...)
		if err == nil && ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("after %s, kubectl %s: %q (err %v)", timeout, strings.Join(args, " "), out, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// until polls ok every half second until it holds, or fails the test after timeout.
func (u user) until(timeout time.Duration, ok func() bool) {
	u.t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			u.t.Fatalf("not so after %s", timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func helmBinary(t *testing.T) string {
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	t.Fatal("helm not found: set HELM (make test does)")
	return ""
}

// loadImages imports the operator's and the fake provider's images, once per run.
func loadImages(t *testing.T, c *singlenode.Cluster) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.LoadImages(ctx, singlenode.OperatorImage, singlenode.ProviderImage); err != nil {
		t.Fatal(err)
	}
	t.Logf("images built and imported in %s", time.Since(start).Round(time.Millisecond))
}
