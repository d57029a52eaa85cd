//go:build tools

// Package tools pins the etcd build for hack/setup-controlplane.sh.
package tools

import _ "go.etcd.io/etcd/server/v3"
