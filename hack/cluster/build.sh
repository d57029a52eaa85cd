#!/usr/bin/env bash
# Builds every component of the single-node cluster (hack/cluster) from the Go module proxy
# and caches it under bin/: kube-apiserver and etcd in bin/controlplane (shared with the
# envtest suites), the node components in bin/cluster/bin:
#   kubelet, kube-scheduler, kube-controller-manager, kube-proxy  k8s.io/kubernetes v1.37.2  (hack/tools/kube)
#   containerd, containerd-shim-runc-v2, ctr                      containerd v2.4.2          (hack/tools/containerd)
#   coredns                                                       CoreDNS v1.15.0            (hack/tools/coredns)
# A binary is rebuilt only when its pinning module changed. Cold, on 2 cores, about 10 minutes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${CLUSTER_BIN_DIR:-$root/bin/cluster/bin}

# shellcheck source=hack/lib/gobuild.sh
source "$root/hack/lib/gobuild.sh"

# Debian's packages the node needs: runc, the CNI plugins (bridge, host-local, loopback,
# portmap), iptables and conntrack for kube-proxy, iproute2 for the node's network, and a
# static busybox for the test images. Installed only when missing, and said so.
need=()
[[ -x /usr/sbin/runc ]] || need+=(runc)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
command -v conntrack >/dev/null || need+=(conntrack)
command -v ip >/dev/null || need+=(iproute2)
[[ -x /bin/busybox ]] && /bin/busybox --list 2>/dev/null | grep -qx wget || need+=(busybox-static)
if ((${#need[@]})); then
  echo "build.sh: installing Debian packages the cluster needs: ${need[*]}"
  if [[ $(id -u) != 0 ]]; then
    echo "build.sh: not root: install them with apt-get (sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

CONTROLPLANE_DIR=${CONTROLPLANE_DIR:-$root/bin/controlplane} "$root/hack/setup-controlplane.sh"

kube=$root/hack/tools/kube
for c in kubelet kube-scheduler kube-controller-manager kube-proxy; do
  gobuild "$out" "$c" "$kube" "k8s.io/kubernetes/cmd/$c" "$kube_ldflags"
done

# No btrfs, devicemapper, zfs or aufs snapshotters: overlayfs is all a node here needs, and
# those need cgo.
ctd=$root/hack/tools/containerd
ctd_tags="no_btrfs no_devmapper no_zfs no_aufs"
ctd_ldflags="-s -X github.com/containerd/containerd/v2/version.Version=v2.4.2"
for c in containerd containerd-shim-runc-v2 ctr; do
  gobuild "$out" "$c" "$ctd" "github.com/containerd/containerd/v2/cmd/$c" "$ctd_ldflags" "$ctd_tags"
done

gobuild "$out" coredns "$root/hack/tools/coredns" github.com/coredns/coredns "-s"
