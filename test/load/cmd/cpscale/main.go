// Command cpscale measures policy distribution at scale: the real manager binary against
// the local apiserver, N guards' subscription clients (runtime/controlplane.Client, the
// code linked into every sidecar), each with its own pod (a real Pod object, Running) and
// its own pod-bound token from TokenRequest, spread over a few label sets.
//
//	go run ./test/load/cmd/cpscale -guards 1000 -label-sets 4
//	make scale   # the same with -kwok bin/kwok-v0.8.0, which it installs
//
// With -kwok the pods are created as users create them: through the manager's injection
// webhook (each gets its guard sidecar and the injected label from the webhook), bound to
// a node that kwok simulates, which runs them — the apiserver sees them scheduled and
// Running. Without it the harness stores labelled pods carrying the guard as the injector
// renders it (the control plane serves no other) and sets their phase itself.
//
// It prints: apply → every guard applied (p50/p99/max), apply → the Guardrail shows
// ENFORCED N/N, the manager's RSS and CPU, and after a restart of the manager (every guard
// reconnects at once) the time until all apply the next change and the TokenReviews made.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
	"github.com/guardrail-dev/guardrail-operator/test/load/procstat"
)

func main() {
	guards := flag.Int("guards", 1000, "Subscribed guards (one Pod and one token each).")
	labelSets := flag.Int("label-sets", 4, "Distinct label sets the pods are spread over.")
	flag.StringVar(&kwokBin, "kwok", "", "kwok binary: create the pods through the injection webhook on a kwok node.")
	flag.Parse()
	if err := run(*guards, *labelSets, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cpscale:", err)
		os.Exit(1)
	}
}

const ns = "scale"

// operatorNS is the manager's namespace, where it keeps the guards' Leases (their acks,
// which status.enforcement counts); guardImage and guardCommand are the guard as the
// manager is told it (--guard-image, --guard-command): the injector renders it, and the
// control plane serves only pods whose spec carries it.
const (
	operatorNS   = "guardrail-system"
	guardImage   = "guardrail-operator:scale"
	guardCommand = "/guard"
)

// kwokBin, when set, runs the pods on a kwok node, created through the webhook.
var kwokBin string

// kwokModule is the kwok release whose binary (make scale installs it) and default
// stages the harness uses.
const kwokModule = "sigs.k8s.io/kwok@v0.8.0"

// kwokNode is the simulated node.
const kwokNode = "kwok-node-0"

func run(n, sets int, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := envtestutil.New()
	if err != nil {
		return err
	}
	if kwokBin != "" {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(envtestutil.RepoRoot(), "config", "webhook", "manifests.yaml")},
		}
	}
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 500, 1000
	work, err := os.MkdirTemp("", "cpscale-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := envtestutil.WriteKubeconfig(env, "admin", kubeconfig); err != nil {
		return err
	}
	certDir := work
	if kwokBin != "" {
		// The webhook and the control plane serve envtest's certificate for the local
		// webhook, whose CA envtest put into the webhook configuration.
		wo := env.WebhookInstallOptions
		certDir = wo.LocalServingCertDir
		for _, dir := range []string{work, certDir} { // the injector reads the CA from the cert dir
			if err := os.WriteFile(filepath.Join(dir, "ca.crt"), wo.LocalServingCAData, 0o600); err != nil {
				return err
			}
		}
		managerArgs = []string{"--enable-injection=true", "--cert-management=external",
			"--webhook-cert-dir=" + certDir, "--webhook-port=" + strconv.Itoa(wo.LocalServingPort)}
	} else if _, err := envtestutil.ServingCert(work, "127.0.0.1"); err != nil {
		return err
	}
	bin := filepath.Join(work, "manager")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/guardrail-dev/guardrail-operator/cmd/manager").CombinedOutput(); err != nil {
		return fmt.Errorf("building the manager: %v\n%s", err, out)
	}
	guardBin := filepath.Join(work, "guard")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", guardBin, "github.com/guardrail-dev/guardrail-operator/cmd/guard").CombinedOutput(); err != nil {
		return fmt.Errorf("building the guard: %v\n%s", err, out)
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
	mgr, err := startManager(bin, kubeconfig, certDir, cpAddr, metricsAddr)
	if err != nil {
		return err
	}
	defer func() { mgr.stop() }()
	if kwokBin != "" {
		stopKwok, err := startKwok(ctx, k8s, kubeconfig)
		if err != nil {
			return err
		}
		defer stopKwok()
	}

	// The policy, the pods and their tokens.
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{guardv1.LabelInjection: "enabled"}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}},
		&v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
			Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII},
				Keywords: []v1alpha1.KeywordRule{{Category: "birds", Words: []string{"flamingo"}}}}}},
		guardrail(),
	} {
		if err := k8s.Create(ctx, o); err != nil {
			return err
		}
	}
	if kwokBin != "" {
		if err := waitInjecting(ctx, k8s); err != nil {
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
			tok, err := podWithToken(ctx, k8s, cs, i, sets, work)
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
	_, _ = fmt.Fprintf(out, "%d Running pods with pod-bound tokens over %d label sets in %v\n", n, sets, time.Since(start).Round(time.Millisecond))

	// The guards.
	applied := make([]chan stamp, n)
	received := make([]chan time.Time, n)
	ca := filepath.Join(work, "ca.crt")
	for i := range n {
		applied[i] = make(chan stamp, 64)
		received[i] = make(chan time.Time, 64)
		hc, err := cp.HTTPClientFor(ca)
		if err != nil {
			return err
		}
		hc.Transport = receivedAt{hc.Transport, received[i]}
		c := &cp.Client{URL: "https://" + cpAddr, TokenFile: tokens[i], CAFile: ca, HTTPClient: hc}
		go c.Run(ctx, func(s *policy.Snapshot) error {
			now := time.Now()
			for _, g := range s.Guardrails {
				applied[i] <- stamp{g.Reason, now}
			}
			return nil
		}, func(error) {})
	}
	start = time.Now()
	if _, err := waitAll(applied, "initial", 3*time.Minute, time.Now()); err != nil {
		return err
	}
	subscribed := time.Since(start).Round(time.Millisecond)
	enforced, err := waitEnforced(ctx, k8s, n, start)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "all %d guards subscribed and applied the policy in %v; ENFORCED %d/%d after %v\n", n,
		subscribed, n, n, enforced)

	apply := func(reason string) (time.Time, error) {
		g := &v1alpha1.Guardrail{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "scale"}, g); err != nil {
			return time.Time{}, err
		}
		g.Spec.Reason = reason
		t0 := time.Now()
		return t0, k8s.Update(ctx, g)
	}
	cpu0 := procstat.CPUSeconds(mgr.cmd.Process.Pid)
	for round := 1; round <= 5; round++ {
		reason := fmt.Sprintf("round %d", round)
		drain(received)
		t0, err := apply(reason)
		if err != nil {
			return err
		}
		lat, err := waitAll(applied, reason, 2*time.Minute, t0)
		if err != nil {
			return err
		}
		recv := firstAfter(received, t0)
		enforced, err := waitEnforced(ctx, k8s, n, t0)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(out, "apply %d → every guard received: p50 %v p99 %v max %v; applied: p50 %v p99 %v max %v; → ENFORCED %d/%d after %v\n",
			round, pct(recv, 50), pct(recv, 99), pct(recv, 100), pct(lat, 50), pct(lat, 99), pct(lat, 100), n, n, enforced)
	}
	_, _ = fmt.Fprintf(out, "manager: RSS %s, peak %s; CPU %.2f s over the five applies\n", procstat.RSS(mgr.cmd.Process.Pid, "VmRSS"),
		procstat.RSS(mgr.cmd.Process.Pid, "VmHWM"), procstat.CPUSeconds(mgr.cmd.Process.Pid)-cpu0)
	reviews := procstat.Metric(metricsAddr, "guardrail_controlplane_tokenreviews_total")
	_, _ = fmt.Fprintf(out, "TokenReviews so far: %.0f\n", reviews)

	if err := guardRSS(ctx, out, guardBin, work, cpAddr, tokens[0], ca); err != nil {
		return err
	}

	// The reconnect storm: the manager restarts; every guard reconnects at once.
	mgr.stop()
	if mgr, err = startManager(bin, kubeconfig, certDir, cpAddr, metricsAddr); err != nil {
		return err
	}
	t0, err := apply("after restart")
	if err != nil {
		return err
	}
	lat, err := waitAll(applied, "after restart", 3*time.Minute, t0)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "manager restarted: every guard reconnected and applied the next change: p50 %v p99 %v max %v; TokenReviews by the new manager: %.0f; RSS %s\n",
		pct(lat, 50), pct(lat, 99), pct(lat, 100), procstat.Metric(metricsAddr, "guardrail_controlplane_tokenreviews_total"),
		procstat.RSS(mgr.cmd.Process.Pid, "VmRSS"))
	return nil
}

// guardRSS compares the idle RSS of the guard binary subscribed to the control plane with
// the same binary enforcing the same policy from a file.
func guardRSS(ctx context.Context, out io.Writer, bin, work, cpAddr, token, ca string) error {
	policyFile := filepath.Join(work, "policy.yaml")
	words := &v1alpha1.Classifier{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Classifier"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII},
			Keywords: []v1alpha1.KeywordRule{{Category: "birds", Words: []string{"flamingo"}}}}}}
	g := guardrail()
	g.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Guardrail"}
	cy, err := yaml.Marshal(words)
	if err != nil {
		return err
	}
	gy, err := yaml.Marshal(g)
	if err != nil {
		return err
	}
	if err := os.WriteFile(policyFile, []byte(string(cy)+"---\n"+string(gy)), 0o600); err != nil {
		return err
	}
	common := []string{"--listen=127.0.0.1:0", "--admin-listen=127.0.0.1:0", "--namespace=" + ns}
	measure := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, append(common, args...)...) //nolint:gosec // built above
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			return "", err
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		time.Sleep(5 * time.Second)
		return procstat.RSS(cmd.Process.Pid, "VmRSS"), nil
	}
	file, err := measure("--policy-file=" + policyFile)
	if err != nil {
		return err
	}
	sub, err := measure("--control-plane=https://"+cpAddr, "--token-file="+token, "--ca-file="+ca, "--snapshot-dir="+work)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "guard idle RSS, same policy: from a file %s, subscribed to the control plane %s\n", file, sub)
	return nil
}

func guardrail() *v1alpha1.Guardrail {
	one := v1alpha1.Score(1)
	return &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scale"},
		Spec: v1alpha1.GuardrailSpec{Mode: v1alpha1.ModeEnforce, ClassifierRef: v1alpha1.LocalObjectReference{Name: "words"},
			Phases: []v1alpha1.Phase{v1alpha1.PhaseInput}, Threshold: &one, Action: v1alpha1.ActionBlock, Reason: "initial"}}
}

func podWithToken(ctx context.Context, k8s client.Client, cs *kubernetes.Clientset, i, sets int, dir string) (string, error) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i),
		Labels: map[string]string{"app": fmt.Sprintf("web-%d", i%sets)}},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	if kwokBin != "" {
		// Bound to the kwok node (no scheduler runs here); the webhook injects the guard.
		p.Spec.NodeName = kwokNode
		p.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		if err := k8s.Create(ctx, p); err != nil {
			return "", err
		}
		if p.Labels[guardv1.LabelInjected] != "true" {
			return "", fmt.Errorf("pod %s was not injected by the webhook", p.Name)
		}
		if err := waitRunning(ctx, k8s, p); err != nil {
			return "", err
		}
	} else {
		p.Labels[guardv1.LabelInjected] = "true"
		p.Spec = guardSpec()
		if err := k8s.Create(ctx, p); err != nil {
			return "", err
		}
		p.Status.Phase = corev1.PodRunning
		if err := k8s.Status().Update(ctx, p); err != nil {
			return "", err
		}
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "app", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{guardv1.Audience}, ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "token-"+strconv.Itoa(i))
	return path, os.WriteFile(path, []byte(tr.Status.Token), 0o600)
}

// guardSpec is a pod spec carrying the guard as the injector renders it (the legacy shape,
// a regular container, with the token only it mounts), for pods the webhook does not see.
func guardSpec() corev1.PodSpec {
	p := &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderGuard(p, injection.Guard{Image: guardImage, Command: []string{guardCommand}, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: injection.DefaultControlPlaneURL(operatorNS)}, false, nil)
	return p.Spec
}

// receivedAt timestamps every snapshot a guard's client receives (a 200 answer), before
// the guard compiles it: here 1,000 guards compile on the harness's two cores, in a
// cluster each on its own pod's.
type receivedAt struct {
	next http.RoundTripper
	at   chan<- time.Time
}

func (r receivedAt) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusOK {
		select {
		case r.at <- time.Now():
		default:
		}
	}
	return resp, err
}

func drain(chs []chan time.Time) {
	for _, ch := range chs {
		for len(ch) > 0 {
			<-ch
		}
	}
}

// firstAfter is each guard's first receipt after t0, as a latency from t0.
func firstAfter(chs []chan time.Time, t0 time.Time) []time.Duration {
	lat := make([]time.Duration, len(chs))
	for i, ch := range chs {
		for len(ch) > 0 {
			if at := <-ch; at.After(t0) {
				lat[i] = at.Sub(t0)
				break
			}
		}
	}
	return lat
}

// stamp is a snapshot a guard applied: its Guardrail's reason and when.
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

// waitEnforced waits until the Guardrail's status.enforcement, which counts the guards
// whose Leases acknowledge its generation, shows all n, and returns the time from t0.
func waitEnforced(ctx context.Context, k8s client.Client, n int, t0 time.Time) (time.Duration, error) {
	want := fmt.Sprintf("%d/%d", n, n)
	seen := "no status.enforcement"
	for time.Since(t0) < 5*time.Minute {
		g := &v1alpha1.Guardrail{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "scale"}, g) == nil && g.Status.Enforcement != nil {
			if g.Status.Enforcement.Summary == want && g.Status.ObservedGeneration == g.Generation {
				return time.Since(t0).Round(time.Millisecond), nil
			}
			seen = fmt.Sprintf("ENFORCED %s at observedGeneration %d of %d", g.Status.Enforcement.Summary, g.Status.ObservedGeneration, g.Generation)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, fmt.Errorf("the Guardrail does not show ENFORCED %s after 5 minutes (last: %s)", want, seen)
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

// managerArgs are the injection flags of the manager; without -kwok injection is off.
var managerArgs = []string{"--enable-injection=false"}

func startManager(bin, kubeconfig, certDir, cpAddr, metricsAddr string) (*proc, error) {
	args := append([]string{"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=0",
		"--control-plane-bind-address=" + cpAddr, "--control-plane-cert-dir=" + certDir,
		// Outside a pod the manager is told its namespace (the guards' Leases) and the guard
		// it injects and takes acknowledgements from.
		"--operator-namespace=" + operatorNS, "--guard-image=" + guardImage, "--guard-command=" + guardCommand}, managerArgs...)
	cmd := exec.Command(bin, args...) //nolint:gosec,noctx // built above; stopped with SIGTERM by proc.stop
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if os.Getenv("CPSCALE_MANAGER_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// startKwok creates a node that kwok manages and starts kwok, which marks the node Ready
// and runs the pods bound to it.
func startKwok(ctx context.Context, k8s client.Client, kubeconfig string) (func(), error) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: kwokNode,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}, Labels: map[string]string{"type": "kwok"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}}}
	if err := k8s.Create(ctx, node); err != nil {
		return nil, err
	}
	// kwok's own default stages (node ready; pods ready, completed, deleted), read from
	// its module as the Go module proxy serves it.
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", kwokModule).Output()
	if err != nil {
		return nil, fmt.Errorf("locating %s: %w", kwokModule, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("locating %s: %v", kwokModule, err)
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--server-address=127.0.0.1:0"}
	for _, stage := range []string{"node/fast/node-initialize.yaml", "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml"} {
		args = append(args, "--config="+filepath.Join(mod.Dir, "kustomize", "stage", stage))
	}
	cmd := exec.Command(kwokBin, args...) //nolint:gosec,noctx // the developer's kwok; stopped below
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if os.Getenv("CPSCALE_KWOK_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p.stop, nil
}

// waitInjecting waits until the manager's webhook injects pods (a dry-run create shows
// the admitted pod without storing it): before that, its failurePolicy Ignore admits pods
// unguarded.
func waitInjecting(ctx context.Context, k8s client.Client) error {
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		last = k8s.Create(ctx, p, client.DryRunAll)
		if last == nil && p.Labels[guardv1.LabelInjected] == "true" {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the manager's webhook injected no pod within a minute (last: %v)", last)
}

// waitRunning waits until kwok reports the pod Running.
func waitRunning(ctx context.Context, k8s client.Client, p *corev1.Pod) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodRunning {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("pod %s is not Running after 2 minutes (phase %q)", p.Name, p.Status.Phase)
}
