//go:build tools

// Package tools pins the Kubernetes builds: kube-apiserver for the envtest control plane
// (hack/setup-controlplane.sh) and the node components of the single-node cluster
// (hack/cluster).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
