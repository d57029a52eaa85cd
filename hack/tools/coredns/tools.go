//go:build tools

// Package tools pins the CoreDNS build that serves cluster DNS in the single-node cluster
// (hack/cluster).
package tools

import _ "github.com/coredns/coredns"
