package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

// cluster attaches to the running make cluster-up cluster, or brings one up that cleanUp
// stops again.
func (d *dev) cluster(ctx context.Context) (*singlenode.Cluster, error) {
	d.k = kube{root: d.root, kubeconfig: d.l.Kubeconfig(), helm: d.o.helm}
	if _, up := singlenode.Running(d.l); up {
		c, err := singlenode.Attach(d.l)
		if err != nil {
			return nil, err
		}
		d.say("using the running cluster (make cluster-up); its kubeconfig is %s", d.l.Kubeconfig())
		return c, nil
	}
	d.say("starting the single-node cluster (state in %s)", d.l.State)
	if err := os.MkdirAll(d.l.State, 0o750); err != nil {
		return nil, err
	}
	c, err := singlenode.Up(ctx, d.l, singlenode.Options{Port: 16443})
	if err != nil {
		return nil, err
	}
	d.startedCluster = true
	d.say("cluster up: node %s Ready", singlenode.NodeName)
	return c, nil
}

// cleanUp stops what the run started, unless -keep: the cluster if it brought it up (its
// data stays), otherwise the release and the demo's namespaces.
func (d *dev) cleanUp() {
	if d.o.keep {
		d.say("left running (-keep): make cluster-down stops the cluster")
		return
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if d.startedCluster {
		d.say("stopping the cluster (its data stays in %s; make dev starts warm next time)", d.l.State)
		if err := singlenode.Down(stopCtx, d.l); err != nil {
			d.say("cluster down: %v", err)
		}
		return
	}
	d.say("uninstalling the release and deleting namespaces demo and provider (the cluster was running before; it stays)")
	_, _ = d.k.run(stopCtx, "kubectl", "delete", "namespace", "demo", "provider", "--ignore-not-found", "--wait=false")
	_, _ = d.k.run(stopCtx, d.o.helm, "uninstall", release, "-n", releaseNamespace, "--wait", "--ignore-not-found")
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
