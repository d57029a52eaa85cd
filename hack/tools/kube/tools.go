//go:build tools

// Package tools pins the kube-apiserver build for hack/setup-controlplane.sh.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
