// Command cluster runs the project's single-node Kubernetes cluster (internal/singlenode): every
// component built from the Go module proxy, in namespaces of its own, the apiserver
// forwarded to a loopback port of the host.
//
//	go run ./hack/cluster up       # start it (make cluster-up builds the components first)
//	go run ./hack/cluster down     # stop exactly what up started, and check nothing is left
//	go run ./hack/cluster status   # running or not, where the kubeconfig is
//	go run ./hack/cluster purge    # down, then delete the cluster's data (etcd, containerd, kubelet)
//	go run ./hack/cluster images   # build the operator image and import it
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/guardrail-dev/guardrail-operator/internal/singlenode"
)

func main() {
	singlenode.RunSupervisorIfChild()
	state := flag.String("state", "", "state directory (default bin/cluster of the repository)")
	port := flag.Int("port", 16443, "host loopback port the apiserver is forwarded to (0: any free port)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: cluster [flags] up|down|status|images|purge\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	l := singlenode.DefaultLayout()
	if *state != "" {
		l.State = *state
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	start := time.Now()
	var err error
	switch flag.Arg(0) {
	case "up":
		if err = os.MkdirAll(l.State, 0o755); err != nil {
			break
		}
		_, err = singlenode.Up(ctx, l, singlenode.Options{Port: *port, Log: logf})
		if errors.Is(err, singlenode.ErrAlreadyUp) {
			logf("%v", err)
			err = nil
			break
		}
		if err == nil {
			logf("\nThe cluster is up (%s). From this shell:\n  export KUBECONFIG=%s\n  kubectl get nodes\nReach a Service from the host with kubectl port-forward, e.g.\n  kubectl -n NAMESPACE port-forward svc/NAME 8080:80\nStop it with: make cluster-down", time.Since(start).Round(time.Second/10), l.Kubeconfig())
		}
	case "down":
		if _, running := singlenode.Running(l); !running {
			logf("cluster: not running; removing what a killed run may have left")
		}
		if err = singlenode.Down(ctx, l); err == nil {
			logf("cluster: down in %s; no process, mount or cgroup of it is left", time.Since(start).Round(time.Second/10))
		}
	case "purge":
		if err = singlenode.Down(ctx, l); err == nil {
			err = singlenode.Purge(l)
			logf("cluster: down, data deleted (the built components in %s stay)", filepath.Dir(l.Bin("kubelet")))
		}
	case "status":
		if ns, ok := singlenode.Running(l); ok {
			fmt.Printf("running: supervisor pid %d, apiserver at https://127.0.0.1:%d, KUBECONFIG=%s, logs in %s\n", ns.Pid, ns.Port, l.Kubeconfig(), l.Logs())
		} else {
			fmt.Println("not running")
			os.Exit(3)
		}
	case "images":
		var c *singlenode.Cluster
		if c, err = singlenode.Attach(l); err == nil {
			err = c.LoadImages(ctx, singlenode.OperatorImage)
			if err == nil {
				ref, _ := singlenode.OperatorImageRef(l.Root)
				logf("cluster: imported %s in %s", ref, time.Since(start).Round(time.Second/10))
			}
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
}
