// Command relabelscale measures what relabelling guarded pods costs the manager's control
// plane: the real manager binary against the local apiserver, one guarded pod relabelled
// N times by a tenant (a new label value each time; every tenth time a label that changes
// which Guardrail selects it) while its guard's subscription client
// (runtime/controlplane.Client, the code linked into every sidecar) and those of a few
// bystander pods of the same namespace stay subscribed.
//
//	go run ./test/load/cmd/relabelscale -relabels 1000               # as fast as the apiserver takes them
//	go run ./test/load/cmd/relabelscale -relabels 1000 -every 150ms  # each relabel its own change (past the debounce)
//
// It prints the manager's CPU time and memory over the relabels, the snapshots it compiled
// and holds (guardrail_controlplane_compiles_total, guardrail_controlplane_snapshots), and
// checks that the relabelled pod's guard ends with the policy its last labels select.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

const ns = "relabel"

// operatorNS is the manager's namespace; guardImage and guardCommand are the guard as the
// manager is told it (--guard-image, --guard-command), which every pod's spec carries.
const (
	operatorNS   = "guardrail-system"
	guardImage   = "guardrail-operator:relabel"
	guardCommand = "/guard"
)

func main() {
	relabels := flag.Int("relabels", 1000, "Relabels of the one pod.")
	every := flag.Duration("every", 0, "Pause between relabels; 0 relabels as fast as the apiserver takes them.")
	bystanders := flag.Int("bystanders", 20, "Other guarded pods of the namespace, subscribed throughout.")
	flag.Parse()
	if err := run(*relabels, *every, *bystanders, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "relabelscale:", err)
		os.Exit(1)
	}
}

func run(relabels int, every time.Duration, bystanders int, out io.Writer) error {
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
	work, err := os.MkdirTemp("", "relabelscale-")
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
		"--operator-namespace="+operatorNS, "--guard-image="+guardImage, "--guard-command="+guardCommand)
	mgr.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	mgr.Stdout, mgr.Stderr = io.Discard, io.Discard
	if os.Getenv("RELABELSCALE_MANAGER_LOG") != "" {
		mgr.Stderr = os.Stderr
	}
	if err := mgr.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = mgr.Wait(); close(exited) }()
	defer func() {
		_ = mgr.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = mgr.Process.Kill()
		}
	}()
	pid := mgr.Process.Pid

	// The policy: web and api select on app; judge's Classifier has a credential, which
	// every compile reads from the apiserver.
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge"}, Data: map[string][]byte{"apiKey": []byte("sk-relabel")}},
		&v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "words"},
			Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII},
				Keywords: []v1alpha1.KeywordRule{{Category: "birds", Words: []string{"flamingo"}}}}}},
		&v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "judge"},
			Spec: v1alpha1.ClassifierSpec{Moderation: &v1alpha1.ModerationBackend{URL: "https://moderation.example/v1/moderations"},
				Categories:           []v1alpha1.Category{{ID: "violence"}},
				CredentialsSecretRef: &v1alpha1.SecretKeyReference{Name: "judge", Key: "apiKey"}}},
		guardrail("web", "words", "birds"), guardrail("web-judge", "judge", "violence"), guardrail("api", "words", "birds"),
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			return err
		}
	}

	// The guards: the relabelled pod's and the bystanders'.
	ca := filepath.Join(work, "ca.crt")
	var applied sync.Map // pod name → the Guardrails of the last snapshot its guard applied
	var pushes sync.Map  // pod name → *atomic.Int64: snapshots applied
	subscribe := func(p *corev1.Pod, tok string) {
		c := &cp.Client{URL: "https://" + cpAddr, TokenFile: tok, CAFile: ca}
		n := &atomic.Int64{}
		pushes.Store(p.Name, n)
		go c.Run(ctx, func(s *policy.Snapshot) error {
			var names []string
			for _, g := range s.Guardrails {
				names = append(names, g.Name)
			}
			applied.Store(p.Name, strings.Join(names, ","))
			n.Add(1)
			return nil
		}, func(error) {})
	}
	target, tok, err := podWithToken(ctx, k8s, cs, "tenant", "web", work)
	if err != nil {
		return err
	}
	subscribe(target, tok)
	for i := range bystanders {
		p, tok, err := podWithToken(ctx, k8s, cs, fmt.Sprintf("bystander-%d", i), []string{"web", "api", "batch"}[i%3], work)
		if err != nil {
			return err
		}
		subscribe(p, tok)
	}
	if err := waitFor("every guard's first snapshot", 2*time.Minute, func() bool {
		n := 0
		applied.Range(func(any, any) bool { n++; return true })
		return n == bystanders+1
	}); err != nil {
		return err
	}
	settle(metricsAddr)

	compiles0 := procstat.Metric(metricsAddr, "guardrail_controlplane_compiles_total")
	unchanged0 := procstat.Metric(metricsAddr, "guardrail_controlplane_compiles_unchanged_total")
	cpu0, rss0 := procstat.CPUSeconds(pid), procstat.RSS(pid, "VmRSS")
	heap0 := procstat.Metric(metricsAddr, "go_memstats_heap_inuse_bytes")
	n, _ := pushes.Load(target.Name)
	pushed0 := n.(*atomic.Int64).Load()
	start := time.Now()
	want := "web,web-judge"
	for i := 1; i <= relabels; i++ {
		app := "web"
		if i%10 == 9 {
			app = "api"
		}
		if i == relabels {
			want = map[string]string{"web": "web,web-judge", "api": "api"}[app]
		}
		before := target.DeepCopy()
		target.Labels["app"], target.Labels["rev"] = app, strconv.Itoa(i)
		if err := k8s.Patch(ctx, target, client.MergeFrom(before)); err != nil {
			return err
		}
		time.Sleep(every)
	}
	relabelled := time.Since(start)
	if err := waitFor("the relabelled pod's guard to apply "+want, time.Minute, func() bool {
		got, _ := applied.Load(target.Name)
		return got == want
	}); err != nil {
		return err
	}
	settle(metricsAddr)
	took := time.Since(start)
	_, _ = fmt.Fprintf(out, "%d relabels of one pod in %v (%d bystander guards); its guard applied %d snapshots and ended with %s\n",
		relabels, relabelled.Round(time.Millisecond), bystanders, n.(*atomic.Int64).Load()-pushed0, want)
	_, _ = fmt.Fprintf(out, "manager: %.2f CPU-s from the first relabel until the control plane settled (%v); RSS %s → %s, peak %s; Go heap in use %.1f → %.1f MiB\n",
		procstat.CPUSeconds(pid)-cpu0, took.Round(time.Millisecond), rss0, procstat.RSS(pid, "VmRSS"), procstat.RSS(pid, "VmHWM"),
		heap0/(1<<20), procstat.Metric(metricsAddr, "go_memstats_heap_inuse_bytes")/(1<<20))
	_, _ = fmt.Fprintf(out, "snapshots: %.0f compiled and %.0f rebuilt unchanged during the relabels, %.0f held at the end\n",
		procstat.Metric(metricsAddr, "guardrail_controlplane_compiles_total")-compiles0,
		procstat.Metric(metricsAddr, "guardrail_controlplane_compiles_unchanged_total")-unchanged0,
		procstat.Metric(metricsAddr, "guardrail_controlplane_snapshots"))
	return nil
}

// settle waits until the manager compiled nothing for 3 s.
func settle(metricsAddr string) {
	last, since := -2.0, time.Now()
	for time.Since(since) < 3*time.Second {
		if v := procstat.Metric(metricsAddr, "guardrail_controlplane_compiles_total"); v != last {
			last, since = v, time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waitFor(what string, timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func guardrail(name, classifier, category string) *v1alpha1.Guardrail {
	one := v1alpha1.Score(1)
	app := strings.TrimSuffix(name, "-judge")
	return &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.GuardrailSpec{Mode: v1alpha1.ModeEnforce,
			Selector:      &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"app": v1alpha1.LabelValue(app)}},
			ClassifierRef: v1alpha1.LocalObjectReference{Name: classifier}, Categories: []string{category},
			Phases: []v1alpha1.Phase{v1alpha1.PhaseInput}, Threshold: &one, Action: v1alpha1.ActionBlock, Reason: "Refused by " + name}}
}

// podWithToken stores a Running pod carrying the guard, labelled app=<app>, and writes a
// pod-bound token of it into dir.
func podWithToken(ctx context.Context, k8s client.Client, cs *kubernetes.Clientset, name, app, dir string) (*corev1.Pod, string, error) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"app": app, guardv1.LabelInjected: "true"}}, Spec: guardSpec()}
	if err := k8s.Create(ctx, p); err != nil {
		return nil, "", err
	}
	p.Status.Phase = corev1.PodRunning
	if err := k8s.Status().Update(ctx, p); err != nil {
		return nil, "", err
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "app", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{guardv1.Audience}, ExpirationSeconds: &exp,
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, p.Name+".token")
	return p, path, os.WriteFile(path, []byte(tr.Status.Token), 0o600)
}

// guardSpec is a pod spec carrying the guard as the injector renders it (the legacy
// shape, a regular container), for pods the webhook does not see: the control plane
// serves no other.
func guardSpec() corev1.PodSpec {
	p := &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	injection.RenderGuard(p, injection.Guard{Image: guardImage, Command: []string{guardCommand}, ProxyPort: 15080, AdminPort: 15090,
		ControlPlaneURL: injection.DefaultControlPlaneURL(operatorNS)}, false, nil)
	return p.Spec
}
