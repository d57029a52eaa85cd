#!/usr/bin/env bash
# Builds the real Kubernetes control plane used by the tests (DESIGN.md §7) from the Go
# module proxy and caches it under bin/controlplane/:
#   kube-apiserver  k8s.io/kubernetes v1.37.2          (hack/tools/kube)
#   etcd            go.etcd.io/etcd/server/v3 v3.6.16  (hack/tools/etcd)
# Nothing prebuilt is downloaded. A binary is rebuilt only when missing or when its pinning
# module changed, so a second run takes seconds. The first run takes several minutes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${CONTROLPLANE_DIR:-$root/bin/controlplane}
mkdir -p "$out"

# The apiserver reports its release like an official build does (kubectl and clients read it).
kube_ldflags="-s -X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"

# build NAME MODULE_DIR PACKAGE LDFLAGS
build() {
  local name=$1 dir=$2 pkg=$3 ldflags=$4
  local stamp="$out/.$name.stamp" want
  want=$( (cat "$dir/go.mod" "$dir/go.sum"; echo "$ldflags") | sha256sum | cut -d' ' -f1)
  if [[ -x "$out/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "setup-controlplane: $name is up to date ($out/$name)"
    return 0
  fi
  echo "setup-controlplane: building $name from $pkg (first build takes minutes)"
  local start=$SECONDS log
  log=$(mktemp)
  if ! (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags="$ldflags" -o "$out/$name.tmp" "$pkg") >"$log" 2>&1; then
    echo "setup-controlplane: FAILED to build $name from $pkg in $dir:" >&2
    tail -n 40 "$log" >&2
    echo "setup-controlplane: the Go module proxy must be reachable and $dir/go.mod must pin every module it needs" >&2
    rm -f "$log" "$out/$name.tmp"
    exit 1
  fi
  rm -f "$log"
  mv "$out/$name.tmp" "$out/$name"
  echo "$want" >"$stamp"
  echo "setup-controlplane: built $name in $((SECONDS - start))s"
}

build etcd "$root/hack/tools/etcd" go.etcd.io/etcd/server/v3 "-s" &
etcd_pid=$!
build kube-apiserver "$root/hack/tools/kube" k8s.io/kubernetes/cmd/kube-apiserver "$kube_ldflags"
wait "$etcd_pid"

"$out/kube-apiserver" --version
"$out/etcd" --version | head -n 1
