package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// demoNamespace holds the Pod object the local guard belongs to.
const demoNamespace = "demo"

// runGuard plays an injected pod: a Pod object (Running, labelled as injected), a token
// bound to it from TokenRequest (renewed before it expires, as the kubelet does), and the
// real guard binary subscribed to the control plane, in front of a demo provider.
func runGuard(ctx context.Context, mgr ctrl.Manager, dir, certDir string, rendered injection.Guard) error {
	log := ctrl.Log.WithName("dev").WithName("guard")
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	// The spec carries the guard as the injector renders it (the legacy shape, a regular
	// container): the control plane takes acknowledgements and decisions only from such
	// pods (injection.VerifyGuard). The guard that runs here is a local process with local
	// paths; what the control plane checks is the pod's spec.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "local-guard",
		Labels: map[string]string{"app": "chat"}},
		Spec: corev1.PodSpec{ServiceAccountName: "chat", Containers: []corev1.Container{{Name: "chat", Image: "local"}}}}
	ca, err := os.ReadFile(filepath.Join(certDir, "ca.crt"))
	if err != nil {
		return fmt.Errorf("reading the operator's CA for the local guard's pod: %w", err)
	}
	injection.RenderGuard(pod, rendered, false, ca)
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "chat"}},
		pod,
	} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(ctx, pod); err != nil {
		return err
	}

	guardDir := filepath.Join(dir, "guard")
	snapshotDir := filepath.Join(guardDir, "snapshot")
	if err := os.RemoveAll(guardDir); err != nil {
		return err
	}
	if err := os.MkdirAll(snapshotDir, 0o700); err != nil {
		return err
	}
	tokenFile := filepath.Join(guardDir, "token")
	renew := func() error {
		exp := int64(3600)
		tr, err := cs.CoreV1().ServiceAccounts(demoNamespace).CreateToken(ctx, "chat", &authv1.TokenRequest{
			Spec: authv1.TokenRequestSpec{Audiences: []string{guardv1.Audience}, ExpirationSeconds: &exp,
				BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		tmp := tokenFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(tr.Status.Token), 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, tokenFile)
	}
	if err := renew(); err != nil {
		return fmt.Errorf("requesting the local guard's token: %w", err)
	}
	go func() {
		for t := time.NewTicker(30 * time.Minute); ; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := renew(); err != nil {
					log.Error(err, "Renewing the local guard's token")
				}
			}
		}
	}()

	provider := fakeprovider.New(fakeprovider.WithHandler(fakeprovider.Echo))
	defer provider.Close()

	bin := filepath.Join(guardDir, "guard")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/guardrail-dev/guardrail-operator/cmd/guard")
	build.Dir = envtestutil.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the guard: %w\n%s", err, out)
	}
	guard := exec.CommandContext(ctx, bin, //nolint:gosec // built above
		"--listen", guardListen, "--admin-listen", guardAdmin,
		"--"+guardv1.FlagControlPlane, "https://localhost:"+strings.TrimPrefix(controlPlaneAddr, "127.0.0.1:"),
		"--"+guardv1.FlagTokenFile, tokenFile, "--"+guardv1.FlagCAFile, filepath.Join(certDir, "ca.crt"),
		"--"+guardv1.FlagSnapshotDir, snapshotDir,
		"--openai-upstream", provider.URL, "--anthropic-upstream", provider.URL,
		"--pod", pod.Name, "--namespace", demoNamespace)
	guard.Cancel = func() error { return guard.Process.Signal(os.Interrupt) }
	guard.WaitDelay = 10 * time.Second
	guard.Stdout, guard.Stderr = os.Stdout, os.Stderr
	if err := waitForFile(ctx, filepath.Join(certDir, "ca.crt")); err != nil {
		return nil //nolint:nilerr // stopped before the certificate existed
	}
	log.Info("Starting the local guard, subscribed as pod demo/local-guard (labels app=chat)",
		"proxy", "http://"+guardListen+"/v1", "admin", "http://"+guardAdmin+"/readyz", "provider", "echoes the prompt")
	if err := guard.Run(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("the local guard stopped: %w", err)
	}
	return nil
}

func waitForFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
