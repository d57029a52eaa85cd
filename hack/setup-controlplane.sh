#!/usr/bin/env bash
# Builds the real Kubernetes control plane used by the tests from the Go
# module proxy and caches it under bin/controlplane/:
#   kube-apiserver  k8s.io/kubernetes v1.37.2          (hack/tools/kube)
#   etcd            go.etcd.io/etcd/server/v3 v3.6.16  (hack/tools/etcd)
# Nothing prebuilt is downloaded. A binary is rebuilt only when missing or when its pinning
# module changed, so a second run takes seconds. The first run takes several minutes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${CONTROLPLANE_DIR:-$root/bin/controlplane}
mkdir -p "$out"

# shellcheck source=hack/lib/gobuild.sh
source "$root/hack/lib/gobuild.sh"

gobuild "$out" etcd "$root/hack/tools/etcd" go.etcd.io/etcd/server/v3 "-s" &
etcd_pid=$!
gobuild "$out" kube-apiserver "$root/hack/tools/kube" k8s.io/kubernetes/cmd/kube-apiserver "$kube_ldflags"
wait "$etcd_pid" || exit 1

"$out/kube-apiserver" --version
"$out/etcd" --version | sed -n 1p   # sed reads it all: head would leave etcd a SIGPIPE, which pipefail turns into a failure
