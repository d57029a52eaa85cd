//go:build tools

// Package tools pins the containerd build of the single-node cluster (hack/cluster):
// containerd, its runc shim and ctr, built with CGO_ENABLED=0 and the tags in
// hack/cluster/build.sh.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
