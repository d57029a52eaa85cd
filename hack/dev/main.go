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
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
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
	d := &dev{o: o, root: root, l: singlenode.DefaultLayout(), start: time.Now()}
	if err := d.preflight(); err != nil {
		return err
	}
	unlock, err := d.holdPIDFile()
	if err != nil {
		return err
	}
	defer unlock()
	c, err := d.cluster(ctx)
	if err != nil {
		return err
	}
	// Whatever happens from here, stop what this run started, unless asked to keep it.
	defer d.cleanUp()

	d.say("building the operator and fake provider images from the working tree and importing them")
	build, err := loadImages(ctx, c)
	if err != nil {
		return err
	}
	d.say("helm upgrade --install %s charts/guardrail-operator -n %s (2 replicas, waiting until ready)", release, releaseNamespace)
	if _, err := d.k.helmInstall(ctx, build); err != nil {
		return err
	}
	if err := d.deployDemo(ctx, build); err != nil {
		return err
	}
	env, err := d.serve(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(filepath.Join(o.dir, "env")) }() // its addresses end with this run
	d.say("sending a little traffic through the demo guard")
	for _, line := range demoTraffic(ctx, env["OPENAI_BASE_URL"]) {
		fmt.Fprintf(os.Stderr, "    %s\n", line)
	}
	d.say("ready. Everything above runs until Ctrl-C or make dev-down.")
	fmt.Fprint(os.Stderr, whereToLook(o.dir, env))
	go d.k.showDecisions(ctx)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr)
	d.say("stopping")
	return nil
}

// dev is one run of make dev: its options, the cluster's layout, and what it started.
type dev struct {
	o              options
	root           string
	l              singlenode.Layout
	k              kube
	start          time.Time
	startedCluster bool
}

// say prints one line of progress with the time since the run started.
func (d *dev) say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dev [%5.1fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}
