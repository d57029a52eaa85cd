// Package cluster runs a real single-node Kubernetes cluster on this machine for the
// project's end-to-end suites and `make dev`: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubelet, containerd (with Debian's runc and CNI plugins), kube-proxy and
// CoreDNS, every one built from the Go module proxy by hack/cluster/build.sh.
//
// The whole stack runs as the children of one supervisor that is PID 1 of new pid, network,
// mount, UTS and IPC namespaces, so it neither sees nor changes the host's network, process
// table, mounts or host-wide sysctls; the only things it creates on the host are the files
// under its state directory and one cgroup subtree per hierarchy, which Down removes. The
// apiserver is reachable from the host at a loopback port (the supervisor holds a listener
// opened in the host's network namespace and forwards it into the cluster's), so plain
// kubectl with the written kubeconfig works from outside, and so does `kubectl port-forward`
// to reach a Service.
//
// See hack/cluster for the command line (make cluster-up / cluster-down) and Shared for tests.
package singlenode

import (
	"os"
	"path/filepath"
	"runtime"
)

// Addresses inside the cluster's network namespace. They are private to it, so they cannot
// clash with the host's.
const (
	NodeName      = "guardrail-node"
	NodeIP        = "10.200.0.2"
	nodeCIDR      = "10.200.0.2/24"
	PodCIDR       = "10.244.0.0/24"
	ServiceCIDR   = "10.96.0.0/16"
	kubernetesSvc = "10.96.0.1"
	// ClusterDNS is where pods send their DNS queries: CoreDNS on the node address.
	ClusterDNS    = NodeIP
	ClusterDomain = "cluster.local"
	apiserverPort = 6443
	etcdClient    = "http://127.0.0.1:2379"
)

// Image references of the images every cluster has (Up imports them). Fully qualified, as
// the CRI normalises short names.
const (
	PauseImage   = "localhost/guardrail/pause:dev"
	BusyboxImage = "localhost/guardrail/busybox:dev"
)

// Layout says where a cluster keeps its binaries and its state.
type Layout struct {
	// Root is the repository root (bin/ lives there).
	Root string
	// State is the cluster's directory: certificates, configs, logs, etcd and containerd data,
	// the kubeconfig and the supervisor's pid file. bin/cluster for `make cluster-up`.
	State string
}

// DefaultLayout is the cluster of `make cluster-up`: state in <repo>/bin/cluster.
func DefaultLayout() Layout {
	root := RepoRoot()
	return Layout{Root: root, State: filepath.Join(root, "bin", "cluster")}
}

// RepoRoot finds the repository root from the working directory (go test runs in the
// package directory, make in the root).
func RepoRoot() string {
	if r := os.Getenv("GUARDRAIL_REPO_ROOT"); r != "" {
		return r
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "hack", "cluster")); err == nil {
				return d
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Bin is the path of a node component built by hack/cluster/build.sh.
func (l Layout) Bin(name string) string {
	switch name {
	case "etcd", "kube-apiserver":
		return filepath.Join(l.Root, "bin", "controlplane", name)
	}
	return filepath.Join(l.Root, "bin", "cluster", "bin", name)
}

func (l Layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.State}, elem...)...)
}

// Kubeconfig is the admin kubeconfig for use from the host (server at a loopback port).
func (l Layout) Kubeconfig() string { return l.path("kubeconfig") }

// ContainerdSocket is containerd's API socket (reachable from the host: it is a file).
func (l Layout) ContainerdSocket() string { return l.path("run", "containerd.sock") }

// Logs is the directory with one log file per component.
func (l Layout) Logs() string { return l.path("logs") }

func (l Layout) nsFile() string      { return l.path("namespaces.json") }
func (l Layout) pki(n string) string { return l.path("pki", n) }
func (l Layout) conf(n string) string {
	return l.path("conf", n)
}

// cgroupName is the cgroup subtree (in every hierarchy) under which the kubelet puts pods:
// one per state directory, so two clusters never share one and Down removes exactly it.
func (l Layout) cgroupName() string {
	return "guardrail-cluster-" + shortHash(l.State)
}
