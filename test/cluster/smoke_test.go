package cluster_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

func TestMain(m *testing.M) {
	singlenode.RunSupervisorIfChild()
	os.Exit(m.Run())
}

// TestSingleNodeCluster brings up a private cluster, runs what the product needs of a
// kubelet (a native sidecar gating its app, a projected token with the guard's audience,
// Services by DNS name, logs, exec, port-forward from the host), then brings it down and
// checks that nothing of it is left on the host.
func TestSingleNodeCluster(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(singlenode.RequiredEnv) == "" {
		t.Skip("not root: the single-node cluster creates namespaces, mounts and cgroups")
	}
	before := hostSnapshot(t)
	start := time.Now()
	c, stop, err := singlenode.Private(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up to node Ready in %s", time.Since(start).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = stop()
		}
	})
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", c.Kubeconfig(), "-n", "smoke"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "smoke.yaml")
	if err := os.WriteFile(manifest, []byte(smokeManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", manifest)
	podStart := time.Now()
	kubectl(t, "wait", "--for=condition=Ready", "pod/web", "--timeout=90s")
	t.Logf("apply to pod Ready (native sidecar startup probe included): %s", time.Since(podStart).Round(time.Millisecond))

	t.Run("the native sidecar's startup probe gates the app", func(t *testing.T) {
		pod, err := c.Client.CoreV1().Pods("smoke").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The app exits 1 when it starts before the sidecar wrote /shared/ready (two seconds
		// after it started); a kubelet that did not wait for the probe restarts it.
		for _, s := range pod.Status.ContainerStatuses {
			if s.RestartCount != 0 || s.State.Running == nil {
				t.Errorf("container %s: restarts %d, state %+v: the app started before its sidecar was ready", s.Name, s.RestartCount, s.State)
			}
		}
		if len(pod.Status.InitContainerStatuses) != 1 || pod.Status.InitContainerStatuses[0].State.Running == nil {
			t.Errorf("the sidecar is not running beside the app: %+v", pod.Status.InitContainerStatuses)
		}
	})
	t.Run("a projected token with audience guardrail.dev is readable inside", func(t *testing.T) {
		// kubectl's own messages (stderr, in the combined output) may come before the token.
		out := strings.TrimSpace(kubectl(t, "exec", "web", "-c", "app", "--", "cat", "/var/run/guardrail/token/token"))
		lines := strings.Split(out, "\n")
		token := strings.TrimSpace(lines[len(lines)-1])
		parts := strings.Split(token, ".")
		if len(parts) != 3 {
			t.Fatalf("not a JWT: %d parts (kubectl said %d lines)", len(parts), len(lines))
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		var claims struct {
			Aud []string `json:"aud"`
			Sub string   `json:"sub"`
		}
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		if len(claims.Aud) != 1 || claims.Aud[0] != "guardrail.dev" || claims.Sub != "system:serviceaccount:smoke:default" {
			t.Errorf("token audience %v subject %q, want [guardrail.dev] system:serviceaccount:smoke:default", claims.Aud, claims.Sub)
		}
	})
	t.Run("kubectl logs reads a container's output", func(t *testing.T) {
		if out := kubectl(t, "logs", "web", "-c", "sidecar"); !strings.Contains(out, "sidecar ready") {
			t.Errorf("sidecar log %q", out)
		}
	})
	t.Run("a Service is reached by its DNS name from another pod", func(t *testing.T) {
		kubectl(t, "run", "client", "--image="+singlenode.BusyboxImage, "--image-pull-policy=Never", "--restart=Never",
			"--command", "--", "sh", "-c", "wget -qO- http://web.smoke.svc.cluster.local/ && wget -qO- http://web/")
		kubectl(t, "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/client", "--timeout=60s")
		if out := kubectl(t, "logs", "client"); strings.Count(out, "hello from web") != 2 {
			t.Errorf("client got %q, want the page twice (by FQDN and by short name)", out)
		}
	})
	t.Run("kubectl port-forward reaches a Service from the host", func(t *testing.T) {
		port := freePort(t)
		pf := exec.Command("kubectl", "--kubeconfig", c.Kubeconfig(), "-n", "smoke", "port-forward", "svc/web", fmt.Sprintf("%d:80", port))
		stdout, _ := pf.StdoutPipe()
		if err := pf.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
		if !bufio.NewScanner(stdout).Scan() { // "Forwarding from 127.0.0.1:port -> 8080"
			t.Fatal("port-forward did not start")
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !strings.Contains(string(body), "hello from web") {
			t.Errorf("through port-forward: %q", body)
		}
	})
	t.Run("a second up says the cluster is already up and leaves it running", func(t *testing.T) {
		_, err := singlenode.Up(ctx, c.Layout, singlenode.Options{})
		if !errors.Is(err, singlenode.ErrAlreadyUp) {
			t.Fatalf("second up: %v, want ErrAlreadyUp", err)
		}
		if _, err := c.Client.CoreV1().Pods("smoke").Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Fatalf("the cluster after a second up: %v", err)
		}
	})
	t.Run("down leaves no process, mount, cgroup, network device or sysctl change behind", func(t *testing.T) {
		downStart := time.Now()
		stopped = true
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		t.Logf("cluster down in %s", time.Since(downStart).Round(time.Millisecond))
		after := hostSnapshot(t)
		for k, v := range before {
			if after[k] != v {
				t.Errorf("host %s changed:\nbefore: %s\nafter:  %s", k, v, after[k])
			}
		}
		if _, err := os.Stat(c.State); !os.IsNotExist(err) {
			t.Errorf("state directory %s is still there", c.State)
		}
	})
}

// hostSnapshot is what the cluster must not change on the host: network devices, iptables
// rules, mounts, the host-wide sysctls the kubelet sets and the cgroup roots. (Processes are
// told apart by namespace, not by binary, as other suites run etcd beside this one: Down
// fails when any process is left in the cluster's pid, network or mount namespace.)
func hostSnapshot(t *testing.T) map[string]string {
	t.Helper()
	snap := map[string]string{}
	ifaces, _ := net.Interfaces()
	var names []string
	for _, i := range ifaces {
		names = append(names, i.Name)
	}
	snap["network devices"] = strings.Join(names, " ")
	if out, err := exec.Command("iptables-save").Output(); err == nil {
		snap["iptables rules"] = stripComments(string(out))
	}
	var mounts []string
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 {
				mounts = append(mounts, f[4])
			}
		}
	}
	sort.Strings(mounts)
	snap["mounts"] = strings.Join(mounts, " ")
	for _, s := range []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward"} {
		b, _ := os.ReadFile("/proc/sys/" + s)
		snap["sysctl "+s] = strings.TrimSpace(string(b))
	}
	var cg []string
	if m, _ := filepath.Glob("/sys/fs/cgroup/*/guardrail-cluster-*"); len(m) > 0 {
		cg = m
	}
	snap["cgroups"] = strings.Join(cg, " ")
	return snap
}

func stripComments(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// smokeManifest: the shape an injected pod has — a native sidecar (an init container with
// restartPolicy Always) whose startup probe gates the app, a projected token for the guard's
// audience — and a Service in front of it.
const smokeManifest = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: smoke, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: sidecar
    image: ` + singlenode.BusyboxImage + `
    imagePullPolicy: Never
    restartPolicy: Always
    command: ["sh", "-c", "sleep 2; touch /shared/ready; echo sidecar ready; exec sleep 100000"]
    startupProbe: {exec: {command: ["test", "-f", "/shared/ready"]}, periodSeconds: 1, failureThreshold: 30}
    volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
  - name: app
    image: ` + singlenode.BusyboxImage + `
    imagePullPolicy: Never
    command: ["sh", "-c", "test -f /shared/ready || exit 1; mkdir -p /tmp/www; echo hello from web > /tmp/www/index.html; exec httpd -f -p 8080 -h /tmp/www"]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
    volumeMounts:
    - {name: shared, mountPath: /shared}
    - {name: token, mountPath: /var/run/guardrail/token, readOnly: true}
    securityContext: {runAsUser: 65532, runAsNonRoot: true, allowPrivilegeEscalation: false}
  volumes:
  - name: shared
    emptyDir: {}
  - name: token
    projected:
      sources:
      - serviceAccountToken: {audience: guardrail.dev, path: token, expirationSeconds: 3600}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: smoke}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`
