// Command baselinescale measures a cluster baseline's distribution at scale: the real
// manager binary against the local apiserver, one ClusterGuardrail selecting N namespaces
// of one pod each (a real Pod object, Running, with its own pod-bound token from
// TokenRequest) and N guards' subscription clients (runtime/controlplane.Client, the code
// linked into every sidecar). Every namespace is a distinct snapshot, so an apply costs N
// compiles where cpscale's thousand pods of one namespace cost a few.
//
//	go run ./test/load/cmd/baselinescale -namespaces 1000
//
// It prints: apply → every guard applied (p50/p99/max), apply → the ClusterGuardrail
// shows ENFORCED N/N, the size of its status, and the manager's RSS and CPU.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
	"github.com/guardrail-dev/guardrail-operator/test/load/procstat"
)

const (
	operatorNS   = "guardrail-system"
	guardImage   = "guardrail-operator:scale"
	guardCommand = "/guard"
	baseline     = "baseline"
)

func main() {
	n := flag.Int("namespaces", 1000, "Namespaces, one pod and one guard each, selected by one ClusterGuardrail.")
	rounds := flag.Int("rounds", 3, "Applies measured.")
	flag.Parse()
	if err := run(*n, *rounds, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "baselinescale:", err)
		os.Exit(1)
	}
}

func run(n, rounds int, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := envtestutil.New()
	if err != nil {
		return err
	}
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 500, 1000
	work, err := os.MkdirTemp("", "baselinescale-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := envtestutil.WriteKubeconfig(env, "admin", kubeconfig); err != nil {
		return err
	}
	if _, err := envtestutil.ServingCert(work, "127.0.0.1"); err != nil {
		return err
	}
	bin := filepath.Join(work, "manager")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/guardrail-dev/guardrail-operator/cmd/manager").CombinedOutput(); err != nil {
		return fmt.Errorf("building the manager: %v\n%s", err, out)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	cpAddr, metricsAddr := procstat.FreeAddr(ctx), procstat.FreeAddr(ctx)
	mgr, err := startManager(bin, kubeconfig, work, cpAddr, metricsAddr)
	if err != nil {
		return err
	}
	defer mgr.stop()

	one := v1alpha1.Score(1)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}},
		&v1alpha1.ClusterClassifier{ObjectMeta: metav1.ObjectMeta{Name: "words"},
			Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII},
				Keywords: []v1alpha1.KeywordRule{{Category: "birds", Words: []string{"flamingo"}}}}}},
		&v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: baseline},
			Spec: v1alpha1.ClusterGuardrailSpec{GuardrailSpec: v1alpha1.GuardrailSpec{Mode: v1alpha1.ModeEnforce,
				ClassifierRef: v1alpha1.LocalObjectReference{Name: "words"}, Phases: []v1alpha1.Phase{v1alpha1.PhaseInput},
				Threshold: &one, Action: v1alpha1.ActionBlock, Reason: "initial"},
				NamespaceSelector: &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"tier": "tenant"}}}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			return err
		}
	}
	start := time.Now()
	tokens := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			tok, err := tenantPod(ctx, k8s, cs, i, work)
			if err != nil {
				errs <- err
				return
			}
			tokens[i] = tok
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "%d namespaces with one Running pod and a pod-bound token each in %v\n", n, time.Since(start).Round(time.Millisecond))

	applied := make([]chan stamp, n)
	ca := filepath.Join(work, "ca.crt")
	for i := range n {
		applied[i] = make(chan stamp, 64)
		c := &cp.Client{URL: "https://" + cpAddr, TokenFile: tokens[i], CAFile: ca}
		go c.Run(ctx, func(s *policy.Snapshot) error {
			now := time.Now()
			for _, g := range s.Guardrails {
				if g.Cluster {
					applied[i] <- stamp{g.Reason, now}
				}
			}
			return nil
		}, func(error) {})
	}
	start = time.Now()
	if _, err := waitAll(applied, "initial", 5*time.Minute, start); err != nil {
		return err
	}
	subscribed := time.Since(start).Round(time.Millisecond)
	enforced, err := waitEnforced(ctx, k8s, n, start)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "all %d guards subscribed and applied the ClusterGuardrail in %v; ENFORCED %d/%d after %v\n", n, subscribed, n, n, enforced)

	cpu0 := procstat.CPUSeconds(mgr.cmd.Process.Pid)
	for round := 1; round <= rounds; round++ {
		reason := fmt.Sprintf("round %d", round)
		g := &v1alpha1.ClusterGuardrail{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: baseline}, g); err != nil {
			return err
		}
		g.Spec.Reason = reason
		t0 := time.Now()
		if err := k8s.Update(ctx, g); err != nil {
			return err
		}
		lat, err := waitAll(applied, reason, 5*time.Minute, t0)
		if err != nil {
			return err
		}
		enforced, err := waitEnforced(ctx, k8s, n, t0)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(out, "apply %d → every guard applied: p50 %v p99 %v max %v; → ENFORCED %d/%d after %v\n",
			round, pct(lat, 50), pct(lat, 99), pct(lat, 100), n, n, enforced)
	}
	g := &v1alpha1.ClusterGuardrail{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: baseline}, g); err != nil {
		return err
	}
	st, _ := json.Marshal(g.Status)
	_, _ = fmt.Fprintf(out, "status: %d bytes, %d namespaces listed, %d summed in otherNamespaces\n", len(st), len(g.Status.Namespaces),
		otherCount(g.Status.OtherNamespaces))
	_, _ = fmt.Fprintf(out, "manager: RSS %s, peak %s; CPU %.2f s over the %d applies; snapshots compiled %.0f\n",
		procstat.RSS(mgr.cmd.Process.Pid, "VmRSS"), procstat.RSS(mgr.cmd.Process.Pid, "VmHWM"),
		procstat.CPUSeconds(mgr.cmd.Process.Pid)-cpu0, rounds, procstat.Metric(metricsAddr, "guardrail_controlplane_compiles_total"))
	return nil
}

func otherCount(o *v1alpha1.OtherNamespaces) int32 {
	if o == nil {
		return 0
	}
	return o.Namespaces
}

// tenantPod creates namespace tenant-<i> (labelled for the ClusterGuardrail) with one
// Running pod carrying the guard as the injector renders it, and writes its guard's
// token to a file, whose path it returns.
func tenantPod(ctx context.Context, k8s client.Client, cs *kubernetes.Clientset, i int, dir string) (string, error) {
	ns := fmt.Sprintf("tenant-%04d", i)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"tier": "tenant", guardv1.LabelInjection: "enabled"}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			return "", err
		}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderGuard(p, injection.Guard{Image: guardImage, Command: []string{guardCommand}, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: injection.DefaultControlPlaneURL(operatorNS)}, false, nil)
	if err := k8s.Create(ctx, p); err != nil {
		return "", err
	}
	p.Status.Phase = corev1.PodRunning
	if err := k8s.Status().Update(ctx, p); err != nil {
		return "", err
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "app", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{guardv1.Audience}, ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "token-"+ns)
	return path, os.WriteFile(path, []byte(tr.Status.Token), 0o600)
}

// stamp is a snapshot a guard applied: its ClusterGuardrail's reason and when.
type stamp struct {
	reason string
	at     time.Time
}

// waitAll waits until every guard applied a snapshot with the reason and returns each
// guard's latency from t0.
func waitAll(applied []chan stamp, reason string, timeout time.Duration, t0 time.Time) ([]time.Duration, error) {
	lat := make([]time.Duration, len(applied))
	deadline := time.After(timeout)
	for i, ch := range applied {
		for done := false; !done; {
			select {
			case r := <-ch:
				if r.reason == reason {
					lat[i], done = r.at.Sub(t0), true
				}
			case <-deadline:
				return nil, fmt.Errorf("guard %d did not apply %q within %v", i, reason, timeout)
			}
		}
	}
	return lat, nil
}

// waitEnforced waits until the ClusterGuardrail's status.enforcement shows all n pods of
// all namespaces acknowledging its generation, and returns the time from t0.
func waitEnforced(ctx context.Context, k8s client.Client, n int, t0 time.Time) (time.Duration, error) {
	want := fmt.Sprintf("%d/%d", n, n)
	seen := "no status.enforcement"
	for time.Since(t0) < 5*time.Minute {
		g := &v1alpha1.ClusterGuardrail{}
		if k8s.Get(ctx, client.ObjectKey{Name: baseline}, g) == nil && g.Status.Enforcement != nil {
			if g.Status.Enforcement.Summary == want && g.Status.ObservedGeneration == g.Generation {
				return time.Since(t0).Round(time.Millisecond), nil
			}
			seen = fmt.Sprintf("ENFORCED %s at observedGeneration %d of %d", g.Status.Enforcement.Summary, g.Status.ObservedGeneration, g.Generation)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("the ClusterGuardrail does not show ENFORCED %s after 5 minutes (last: %s)", want, seen)
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p)/100 - 1
	i = max(0, min(i, len(s)-1))
	return s[i].Round(time.Millisecond)
}

type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func startManager(bin, kubeconfig, certDir, cpAddr, metricsAddr string) (*proc, error) {
	cmd := exec.Command(bin, "--metrics-bind-address="+metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=0", //nolint:gosec,noctx // built above; stopped by proc.stop
		"--control-plane-bind-address="+cpAddr, "--control-plane-cert-dir="+certDir, "--enable-injection=false",
		"--operator-namespace="+operatorNS, "--guard-image="+guardImage, "--guard-command="+guardCommand)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if os.Getenv("BASELINESCALE_MANAGER_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}
