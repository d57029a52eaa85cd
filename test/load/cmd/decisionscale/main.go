// Command decisionscale measures the decisions intake at scale: the real manager binary
// against the local apiserver, N guards' reporters (runtime/controlplane.Reporter and
// Aggregator, the code linked into every sidecar), each with its own Running pod (its spec
// carrying the guard as the injector renders it) and pod-bound token, all counting
// decisions for one Guardrail and sending their cumulative batches every interval.
//
//	go run ./test/load/cmd/decisionscale -guards 1000 -interval 10s -intervals 3
//
// It prints the batches taken, the status writes per Guardrail per interval, the
// manager's CPU and RSS, and whether status.decisions.wouldBlock equals the number of
// decisions the guards counted, summed over the guards' Leases' decisions claims too.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	authv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
	"github.com/guardrail-dev/guardrail-operator/test/load/procstat"
)

const ns = "scale"

// operatorNS is the manager's namespace, where it keeps the guards' Leases; guardImage
// and guardCommand are the guard as the manager is told it (--guard-image,
// --guard-command), which every pod's spec carries.
const (
	operatorNS   = "guardrail-system"
	guardImage   = "guardrail-operator:scale"
	guardCommand = "/guard"
)

func main() {
	guards := flag.Int("guards", 1000, "Guards (one Pod and one token each).")
	interval := flag.Duration("interval", 10*time.Second, "The guards' and the manager's decision interval.")
	intervals := flag.Int("intervals", 3, "Intervals of traffic measured.")
	flag.Parse()
	if err := run(*guards, *interval, *intervals, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "decisionscale:", err)
		os.Exit(1)
	}
}

func run(n int, interval time.Duration, intervals int, out io.Writer) error {
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
	work, err := os.MkdirTemp("", "decisionscale-")
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
	mgr := exec.Command(bin, "--metrics-bind-address="+metricsAddr, "--metrics-secure=false", //nolint:gosec,noctx // built above; stopped with SIGTERM
		"--health-probe-bind-address=0", "--enable-injection=false", "--control-plane-bind-address="+cpAddr, "--control-plane-cert-dir="+work,
		"--decision-interval="+interval.String(),
		// Outside a pod the manager is told its namespace (the guards' Leases) and the guard
		// it takes reports from (guardSpec).
		"--operator-namespace="+operatorNS, "--guard-image="+guardImage, "--guard-command="+guardCommand)
	mgr.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	mgr.Stdout, mgr.Stderr = io.Discard, io.Discard
	if os.Getenv("DECISIONSCALE_MANAGER_LOG") != "" {
		mgr.Stderr = os.Stderr
	}
	if err := mgr.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = mgr.Wait(); close(exited) }()
	defer func() { _ = mgr.Process.Signal(syscall.SIGTERM); <-exited }()
	// managerUp fails once the manager has exited: its figures would be meaningless.
	managerUp := func() error {
		select {
		case <-exited:
			return fmt.Errorf("the manager exited (%v); DECISIONSCALE_MANAGER_LOG=1 shows its log", exitErr)
		default:
			return nil
		}
	}

	g := &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scale"}, Spec: v1alpha1.GuardrailSpec{
		Mode: v1alpha1.ModeReport, ClassifierRef: v1alpha1.LocalObjectReference{Name: "words"},
		Phases: []v1alpha1.Phase{v1alpha1.PhaseInput}, Threshold: ptr(v1alpha1.Score(0.5)), Action: v1alpha1.ActionBlock,
		Reason: "no"}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}},
		&v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
			Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{
				Keywords: []v1alpha1.KeywordRule{{Category: "birds", Words: []string{"flamingo"}}}}}},
		g,
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
			tok, err := podWithToken(ctx, k8s, cs, i, work)
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
	_, _ = fmt.Fprintf(out, "%d Running pods with pod-bound tokens in %v\n", n, time.Since(start).Round(time.Millisecond))

	// The guards: each counts a few decisions a second and reports every interval,
	// starting at a random point of the interval, as real guards do.
	ca := filepath.Join(work, "ca.crt")
	var counted atomic.Int64
	traffic, stopTraffic := context.WithCancel(ctx)
	reporters := make([]*cp.Reporter, n)
	var running sync.WaitGroup
	for i := range n {
		agg := cp.NewAggregator()
		reporters[i] = &cp.Reporter{URL: "https://" + cpAddr, TokenFile: tokens[i], CAFile: ca, Interval: interval, Agg: agg}
		running.Add(2)
		go func() {
			defer running.Done()
			t := time.NewTicker(time.Duration(500+rand.IntN(1000)) * time.Millisecond) //nolint:gosec // load shape
			defer t.Stop()
			for {
				select {
				case <-traffic.Done():
					return
				case <-t.C:
					agg.Add(decision())
					counted.Add(1)
				}
			}
		}()
		go func() {
			defer running.Done()
			time.Sleep(time.Duration(rand.Int64N(int64(interval)))) //nolint:gosec // spread, as guards started at different times
			reporters[i].Run(traffic)
		}()
	}
	cpu0, writes0 := procstat.CPUSeconds(mgr.Process.Pid), procstat.Metric(metricsAddr, `guardrail_decisions_status_writes_total{result="written"}`)
	t0 := time.Now()
	time.Sleep(time.Duration(intervals) * interval)
	stopTraffic()
	running.Wait()
	// Every guard's last batch, as at its shutdown.
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fctx, c := context.WithTimeout(ctx, 30*time.Second)
			defer c()
			_ = reporters[i].Flush(fctx)
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if err := managerUp(); err != nil {
		return err
	}
	cpu := procstat.CPUSeconds(mgr.Process.Pid) - cpu0
	want := counted.Load()
	var got int64
	deadline := time.Now().Add(3 * interval)
	for time.Now().Before(deadline) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(g), g); err == nil && g.Status.Decisions != nil {
			if got = g.Status.Decisions.WouldBlock; got >= want {
				time.Sleep(interval + time.Second)
				_ = k8s.Get(ctx, client.ObjectKeyFromObject(g), g)
				got = g.Status.Decisions.WouldBlock
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	writes := procstat.Metric(metricsAddr, `guardrail_decisions_status_writes_total{result="written"}`) - writes0
	conflicts := procstat.Metric(metricsAddr, `guardrail_controlplane_decision_batches_total{result="conflict"}`)
	batches := procstat.Metric(metricsAddr, `guardrail_controlplane_decision_batches_total{result="counted"}`)
	errors := procstat.Metric(metricsAddr, `guardrail_controlplane_decision_batches_total{result="error"}`)
	perInterval := writes / (elapsed.Seconds() / interval.Seconds())
	_, _ = fmt.Fprintf(out, "%d guards, %v intervals, %v of traffic: %.0f batches counted (%.0f errors, %.0f claim conflicts re-read)\n",
		n, interval, elapsed.Round(time.Second), batches, errors, conflicts)
	_, _ = fmt.Fprintf(out, "status writes to the Guardrail: %.0f, %.2f per interval\n", writes, perInterval)
	_, _ = fmt.Fprintf(out, "manager: CPU %.2f s over %v (%.1f%% of one core); RSS %s, peak %s\n", cpu, elapsed.Round(time.Second),
		100*cpu/elapsed.Seconds(), procstat.RSS(mgr.Process.Pid, "VmRSS"), procstat.RSS(mgr.Process.Pid, "VmHWM"))
	leases, claimed, err := claims(ctx, k8s)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "decisions counted by the guards %d; status.decisions.wouldBlock %d; claimed on the guards' %d Leases %d; exact: %v\n",
		want, got, leases, claimed, want == got && want == claimed)
	if want != got || want != claimed {
		return fmt.Errorf("wouldBlock %d and %d claimed on Leases, the guards counted %d", got, claimed, want)
	}
	return nil
}

// claims counts the Leases of the guards of ns in the operator's namespace and sums the wouldBlock
// their decisions claims record as counted: the exactly-once record, per guard.
func claims(ctx context.Context, k8s client.Client) (int, int64, error) {
	list := &coordinationv1.LeaseList{}
	if err := k8s.List(ctx, list, client.InNamespace(operatorNS), client.MatchingLabels{guardv1.LabelLeasePodNamespace: ns}); err != nil {
		return 0, 0, err
	}
	var n int64
	for _, l := range list.Items {
		var claim struct{ Guardrails []guardv1.GuardrailDecisions }
		if s := l.Annotations[guardv1.AnnotationDecisions]; s != "" {
			if err := json.Unmarshal([]byte(s), &claim); err != nil {
				return 0, 0, fmt.Errorf("the decisions claim on Lease %s: %w", l.Name, err)
			}
		}
		for _, gd := range claim.Guardrails {
			for _, c := range gd.Counts {
				if c.Outcome == guardv1.OutcomeWouldBlock {
					n += c.Requests
				}
			}
		}
	}
	return len(list.Items), n, nil
}

func decision() telemetry.RequestDecisions {
	return telemetry.RequestDecisions{End: time.Now(),
		Decisions: []engine.Record{{Guardrail: ns + "/scale", Generation: 1, Phase: policy.PhaseInput,
			Outcome: guardv1.OutcomeWouldBlock, Findings: []engine.Finding{{Kind: engine.FindingCategory, Name: "birds", Score: 1, Threshold: 0.5}}}},
		Matches: []telemetry.Match{{Guardrail: ns + "/scale", Name: "birds"}}}
}

func podWithToken(ctx context.Context, k8s client.Client, cs *kubernetes.Clientset, i int, dir string) (string, error) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i),
		Labels: map[string]string{"app": "web", guardv1.LabelInjected: "true"}}, Spec: guardSpec()}
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
	path := filepath.Join(dir, p.Name+".token")
	return path, os.WriteFile(path, []byte(tr.Status.Token), 0o600)
}

// guardSpec is a pod spec carrying the guard as the injector renders it (the legacy shape,
// a regular container, with the token only it mounts): the control plane counts decisions
// only from such pods (injection.VerifyGuard).
func guardSpec() corev1.PodSpec {
	p := &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderGuard(p, injection.Guard{Image: guardImage, Command: []string{guardCommand}, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: injection.DefaultControlPlaneURL(operatorNS)}, false, nil)
	return p.Spec
}

func ptr[T any](v T) *T { return &v }
