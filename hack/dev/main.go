// Command dev is `make dev`: the whole product on the project's real single-node cluster
// (internal/singlenode), the way a user runs it. It brings the cluster up (or uses the one
// `make cluster-up` started), builds and imports the images from the working tree,
// installs the chart with helm, deploys a fake model provider and a demo app in namespace
// demo (opted in, so the webhook injects the guard and the kubelet starts it), applies
// config/samples there, forwards the demo guard and the provider to loopback ports, sends
// a little traffic, writes the addresses into bin/dev/env and prints where to look. It
// runs until Ctrl-C or `make dev-down` and then stops what it started: the cluster if it
// brought it up (its data stays; the next make dev is warm), otherwise the release and the
// two namespaces.
//
//	make dev                 # in one shell
//	source bin/dev/env       # in another: KUBECONFIG, OPENAI_BASE_URL, GUARD_ADMIN_URL, PROVIDER_URL
//	kubectl get guardrails -A
//	make dev-down
//
// The cluster needs root. Without it, `make dev-lite` runs the embedded control plane
// (hack/devlite) instead.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

const (
	release          = "guardrail-operator"
	releaseNamespace = "guardrail-system"
)

type options struct {
	helm                           string
	guardPort, adminPort, provPort int
	keep                           bool
	dir                            string
}

func main() {
	singlenode.RunSupervisorIfChild() // singlenode.Up re-executes this program as the cluster's supervisor
	root := singlenode.RepoRoot()
	var o options
	flag.StringVar(&o.helm, "helm", envOr("HELM", "helm"), "helm binary")
	flag.IntVar(&o.guardPort, "guard-port", 18000, "loopback port forwarded to the demo pod's guard (OPENAI_BASE_URL)")
	flag.IntVar(&o.adminPort, "admin-port", 18090, "loopback port forwarded to the demo guard's /readyz and /metrics (GUARD_ADMIN_URL)")
	flag.IntVar(&o.provPort, "provider-port", 18080, "loopback port forwarded to the fake provider (PROVIDER_URL)")
	flag.BoolVar(&o.keep, "keep", false, "leave the cluster, the release and the demo running on exit (make cluster-down stops the cluster later)")
	flag.StringVar(&o.dir, "dir", filepath.Join(root, "bin", "dev"), "where the env and pid files go")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: dev [flags] [down]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var err error
	switch flag.Arg(0) {
	case "":
		err = run(ctx, root, o)
	case "down":
		err = down(o.dir)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dev: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root string, o options) error {
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "dev [%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	l := singlenode.DefaultLayout()
	if err := singlenode.Preflight(l); err != nil {
		if os.Geteuid() != 0 {
			return fmt.Errorf("%v.\n\nmake dev runs the product on a real single-node cluster, which needs root here.\n"+
				"Without root, `make dev-lite` runs the operator on an embedded kube-apiserver and etcd,\n"+
				"with one local guard process playing an injected pod (no kubelet)", err)
		}
		return err
	}
	if pid, ok := devRunning(o.dir); ok {
		return fmt.Errorf("make dev is already running (pid %d); stop it with make dev-down", pid)
	}
	for _, p := range []int{o.guardPort, o.adminPort, o.provPort} {
		if err := portFree(p); err != nil {
			return fmt.Errorf("loopback port %d is taken (%v); pick others with DEV_FLAGS='-guard-port N -admin-port N -provider-port N'", p, err)
		}
	}
	if err := os.MkdirAll(o.dir, 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(pidFile(o.dir), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	defer func() { _ = os.Remove(pidFile(o.dir)) }()

	var c *singlenode.Cluster
	startedCluster := false
	if _, up := singlenode.Running(l); up {
		var err error
		if c, err = singlenode.Attach(l); err != nil {
			return err
		}
		say("using the running cluster (make cluster-up); its kubeconfig is %s", l.Kubeconfig())
	} else {
		say("starting the single-node cluster (state in %s)", l.State)
		var err error
		if err = os.MkdirAll(l.State, 0o750); err != nil {
			return err
		}
		if c, err = singlenode.Up(ctx, l, singlenode.Options{Port: 16443}); err != nil {
			return err
		}
		startedCluster = true
		say("cluster up: node %s Ready", singlenode.NodeName)
	}
	k := kube{root: root, kubeconfig: l.Kubeconfig(), helm: o.helm}
	// Whatever happens from here, stop what this run started, unless asked to keep it.
	defer func() {
		if o.keep {
			say("left running (-keep): make cluster-down stops the cluster")
			return
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if startedCluster {
			say("stopping the cluster (its data stays in %s; make dev starts warm next time)", l.State)
			if err := singlenode.Down(stopCtx, l); err != nil {
				say("cluster down: %v", err)
			}
			return
		}
		say("uninstalling the release and deleting namespaces demo and provider (the cluster was running before; it stays)")
		_, _ = k.run(stopCtx, "kubectl", "delete", "namespace", "demo", "provider", "--ignore-not-found", "--wait=false")
		_, _ = k.run(stopCtx, o.helm, "uninstall", release, "-n", releaseNamespace, "--wait", "--ignore-not-found")
	}()

	say("building the operator and fake provider images from the working tree and importing them")
	build, err := loadImages(ctx, c)
	if err != nil {
		return err
	}
	say("helm upgrade --install %s charts/guardrail-operator -n %s (2 replicas, waiting until ready)", release, releaseNamespace)
	if _, err := k.helmInstall(ctx, build); err != nil {
		return err
	}
	for _, ns := range []string{"provider", "demo"} {
		if err := k.waitNotTerminating(ctx, ns); err != nil {
			return err
		}
	}
	say("deploying the fake provider (config/dev/provider.yaml), namespace demo (config/dev/demo.yaml), the samples there, and the demo app (config/dev/chat.yaml)")
	for _, step := range [][]string{
		{"apply", "-f", "config/dev/provider.yaml"},
		{"apply", "-f", "config/dev/demo.yaml"},
		{"-n", "demo", "apply", "-f", "config/samples/"},
		// The app's first request goes out as it starts: the policies must be in effect.
		{"-n", "demo", "wait", "--for=condition=Ready", "guardrails", "--all", "--timeout=2m"},
	} {
		if _, err := k.kubectl(ctx, step...); err != nil {
			return err
		}
	}
	if err := k.applyApp(ctx, build); err != nil {
		return err
	}
	for _, step := range [][]string{
		{"-n", "provider", "rollout", "status", "deploy/provider", "--timeout=3m"},
		{"-n", "demo", "rollout", "status", "deploy/chat", "--timeout=3m"},
	} {
		if _, err := k.kubectl(ctx, step...); err != nil {
			return err
		}
	}
	say("waiting for the demo pod's guard to acknowledge every Guardrail in demo (ENFORCED n/n)")
	if err := k.waitEnforced(ctx, "demo"); err != nil {
		return err
	}
	guard := forward{k: k, ns: "demo", target: "deploy/chat", ports: []string{fmt.Sprintf("%d:15080", o.guardPort), fmt.Sprintf("%d:15090", o.adminPort)}}
	prov := forward{k: k, ns: "provider", target: "svc/provider", ports: []string{fmt.Sprintf("%d:8080", o.provPort)}}
	go guard.keep(ctx)
	go prov.keep(ctx)
	env := map[string]string{
		"KUBECONFIG":         l.Kubeconfig(),
		"OPENAI_BASE_URL":    fmt.Sprintf("http://127.0.0.1:%d/v1", o.guardPort),
		"ANTHROPIC_BASE_URL": fmt.Sprintf("http://127.0.0.1:%d", o.guardPort),
		"GUARD_ADMIN_URL":    fmt.Sprintf("http://127.0.0.1:%d", o.adminPort),
		"PROVIDER_URL":       fmt.Sprintf("http://127.0.0.1:%d", o.provPort),
	}
	for _, u := range []string{env["GUARD_ADMIN_URL"] + "/readyz", env["PROVIDER_URL"] + "/healthz"} {
		if err := waitHTTP(ctx, u); err != nil {
			return fmt.Errorf("port-forward: %w", err)
		}
	}
	if err := writeEnv(o.dir, env); err != nil {
		return err
	}
	defer func() { _ = os.Remove(filepath.Join(o.dir, "env")) }() // its addresses end with this run
	say("sending a little traffic through the demo guard")
	for _, line := range demoTraffic(ctx, env["OPENAI_BASE_URL"]) {
		fmt.Fprintf(os.Stderr, "    %s\n", line)
	}
	say("ready. Everything above runs until Ctrl-C or make dev-down.")
	fmt.Fprint(os.Stderr, whereToLook(o.dir, env))
	go k.showDecisions(ctx)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr)
	say("stopping")
	return nil
}

// demoTraffic sends three requests through the guard and describes what came back: an
// address redacted from an answer, a streamed answer with a credential stopped, and a
// harmless answer passed through.
func demoTraffic(ctx context.Context, base string) []string {
	type req struct{ what, body string }
	reqs := []req{
		{"an answer with an email address (redact-pii-secrets)", `{"model":"demo","messages":[{"role":"user","content":"Please write to jane.doe@example.com about the invoice."}]}`},
		{"a streamed answer with a GitHub token (stop-streamed-secrets)", `{"model":"demo","stream":true,"messages":[{"role":"user","content":"Deploy with GITHUB_TOKEN=ghp_8vKpZq2mW4xR7tY1nB3cD5fG9hJ0kL6sQwEr and report back."}]}`},
		{"a harmless answer", `{"model":"demo","messages":[{"role":"user","content":"What is the capital of France?"}]}`},
	}
	var out []string
	for _, r := range reqs {
		out = append(out, r.what+":")
		b, status, err := post(ctx, base+"/chat/completions", r.body)
		if err != nil {
			out = append(out, "  error: "+err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("  → %d %s", status, summarize(b)))
	}
	return out
}

// summarize gives the answer's text (a completion's message, or a stream's deltas joined)
// and how it finished, for one line on the terminal.
func summarize(b []byte) string {
	type choice struct {
		Message      struct{ Content string } `json:"message"`
		Delta        struct{ Content string } `json:"delta"`
		FinishReason string                   `json:"finish_reason"`
	}
	var text strings.Builder
	finish := ""
	add := func(data []byte) bool {
		var c struct{ Choices []choice }
		if json.Unmarshal(data, &c) != nil {
			return false
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Message.Content + ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
		return true
	}
	if !add(b) {
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && data != "[DONE]" {
				add([]byte(data))
			}
		}
	}
	if text.Len() == 0 && finish == "" {
		return strings.Join(strings.Fields(string(b)), " ")
	}
	return fmt.Sprintf("%q (finish_reason %s)", text.String(), finish)
}

func whereToLook(dir string, env map[string]string) string {
	return fmt.Sprintf(`
Where to look (in another shell: source %[1]s/env):
  kubectl get guardrails,classifiers -A          ENFORCED n/n, and the decision counters moving
  kubectl -n demo get pod -l app=chat -o jsonpath='{.items[0].spec.initContainers[*].name}'
                                                 the guard the webhook injected (a native sidecar)
  kubectl -n demo get events --field-selector involvedObject.kind=Guardrail
Send your own request through the demo pod's guard:
  curl -s $OPENAI_BASE_URL/chat/completions -H 'Content-Type: application/json' \
    -d '{"model":"demo","messages":[{"role":"user","content":"call me on +44 20 7946 0958"}]}'
  or with any OpenAI SDK: OPENAI_BASE_URL=%[2]s OPENAI_API_KEY=unused
  or from inside the app: kubectl -n demo exec deploy/chat -c app -- sh (OPENAI_BASE_URL is set there)
The app's first request, sent as it started (the guard enforced before the app ran):
  kubectl -n demo logs deploy/chat -c app
Metrics of the demo guard:  curl -s $GUARD_ADMIN_URL/metrics | grep ^guard_
The provider, unguarded:    curl -s $PROVIDER_URL/v1/chat/completions -d '{"messages":[{"role":"user","content":"hi"}]}'
Change a policy and watch:  kubectl -n demo patch guardrail redact-pii-secrets --type merge -p '{"spec":{"mode":"Report"}}'
                            then the answers keep the address and status.decisions.wouldRedact counts
Stop: Ctrl-C here, or make dev-down.
`, dir, env["OPENAI_BASE_URL"])
}

// kube runs kubectl and helm against the cluster from the repository root.
type kube struct{ root, kubeconfig, helm string }

func (k kube) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig)
	cmd.Dir = k.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (k kube) kubectl(ctx context.Context, args ...string) (string, error) {
	return k.run(ctx, "kubectl", args...)
}

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

func (k kube) helmInstall(ctx context.Context, build string) (string, error) {
	return k.run(ctx, k.helm, "upgrade", "--install", release, "charts/guardrail-operator",
		"-n", releaseNamespace, "--create-namespace", "--wait", "--timeout", "5m",
		"--set-string", "podAnnotations."+strings.ReplaceAll(buildAnnotation, ".", `\.`)+"="+build)
}

// waitNotTerminating waits until namespace ns is not being deleted (a previous run's
// cleanup may still be finishing): applying into it would be refused.
func (k kube) waitNotTerminating(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		out, _ := k.kubectl(ctx, "get", "namespace", ns, "--ignore-not-found", "-o", "jsonpath={.status.phase}")
		if strings.TrimSpace(out) != "Terminating" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s is still being deleted", ns)
		case <-time.After(time.Second):
		}
	}
}

// waitEnforced waits until every Guardrail in ns reports as many acknowledging pods as it
// selects, and selects at least one.
func (k kube) waitEnforced(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last string
	for {
		out, err := k.kubectl(ctx, "-n", ns, "get", "guardrails", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.enforcement.acknowledgedPods}/{.status.enforcement.selectedPods}{" "}{end}`)
		if err == nil {
			last = strings.TrimSpace(out)
			if enforcedAll(last) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("guardrails in %s not enforced: %q", ns, last)
		case <-time.After(time.Second):
		}
	}
}

// enforcedAll reports whether every "name=acked/selected" field has acked == selected > 0.
func enforcedAll(s string) bool {
	fields := strings.Fields(s)
	for _, f := range fields {
		_, counts, _ := strings.Cut(f, "=")
		acked, selected, _ := strings.Cut(counts, "/")
		if selected == "" || selected == "0" || acked != selected {
			return false
		}
	}
	return len(fields) > 0
}

// showDecisions prints the Guardrails once the demo traffic's decisions reach their status.
func (k kube) showDecisions(ctx context.Context) {
	for range 60 {
		out, err := k.kubectl(ctx, "-n", "demo", "get", "guardrails", "-o", "jsonpath={.items[*].status.decisions}")
		if err == nil && strings.Contains(out, `"`) && strings.ContainsAny(out, "123456789") {
			if table, err := k.kubectl(ctx, "get", "guardrails", "-A"); err == nil {
				fmt.Fprintf(os.Stderr, "\nThe demo traffic's decisions are in the Guardrails' status (kubectl get guardrails -A):\n%s", table)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// forward keeps a kubectl port-forward running while ctx lasts: a forward ends when its pod
// goes (a rollout, a deleted pod), and the next one finds the new pod.
type forward struct {
	k      kube
	ns     string
	target string
	ports  []string
}

func (f forward) keep(ctx context.Context) {
	for ctx.Err() == nil {
		args := append([]string{"-n", f.ns, "port-forward", "--address", "127.0.0.1", f.target}, f.ports...)
		cmd := exec.CommandContext(ctx, "kubectl", args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+f.k.kubeconfig)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		_ = cmd.Run()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func post(ctx context.Context, url, body string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

func waitHTTP(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %v", url, err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func writeEnv(dir string, env map[string]string) error {
	var b bytes.Buffer
	b.WriteString("# Written by make dev while it runs; source it: . bin/dev/env\n")
	for _, k := range []string{"KUBECONFIG", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GUARD_ADMIN_URL", "PROVIDER_URL"} {
		fmt.Fprintf(&b, "export %s=%q\n", k, env[k])
	}
	b.WriteString("# The fake provider ignores keys; the SDKs want one set.\nexport OPENAI_API_KEY=unused ANTHROPIC_API_KEY=unused\n")
	return os.WriteFile(filepath.Join(dir, "env"), b.Bytes(), 0o600)
}

func portFree(p int) error {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return err
	}
	return l.Close()
}

func pidFile(dir string) string { return filepath.Join(dir, "pid") }

// devRunning reports the pid of a running make dev, from its pid file.
func devRunning(dir string) (int, bool) {
	b, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// down stops a running make dev (SIGTERM, as Ctrl-C would) and waits until it has stopped
// what it started.
func down(dir string) error {
	pid, ok := devRunning(dir)
	if !ok {
		msg := "make dev is not running"
		if _, up := singlenode.Running(singlenode.DefaultLayout()); up {
			msg += "; the single-node cluster is (make cluster-down stops it)"
		}
		fmt.Fprintln(os.Stderr, msg)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if _, ok := devRunning(dir); !ok {
			fmt.Fprintln(os.Stderr, "make dev stopped")
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("make dev (pid %d) still running after 3 minutes", pid)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
