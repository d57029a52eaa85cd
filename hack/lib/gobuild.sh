# shellcheck shell=bash
# gobuild OUT_DIR NAME MODULE_DIR PACKAGE LDFLAGS [TAGS]
#
# Builds PACKAGE from the pinned tools module MODULE_DIR into OUT_DIR/NAME with CGO_ENABLED=0,
# unless the binary is there and was built from the same go.mod, go.sum, flags and tags (a
# stamp file beside it records them), so a second run takes seconds. Nothing prebuilt is
# downloaded: every module comes from the Go module proxy.
gobuild() {
  local out=$1 name=$2 dir=$3 pkg=$4 ldflags=$5 tags=${6:-}
  local stamp="$out/.$name.stamp" want
  mkdir -p "$out"
  want=$( (cat "$dir/go.mod" "$dir/go.sum"; echo "$pkg $ldflags $tags") | sha256sum | cut -d' ' -f1)
  if [[ -x "$out/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "gobuild: $name is up to date ($out/$name)"
    return 0
  fi
  echo "gobuild: building $name from $pkg (a first build takes minutes)"
  local start=$SECONDS log
  log=$(mktemp)
  if ! (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags="$tags" -ldflags="$ldflags" -o "$out/$name.tmp" "$pkg") >"$log" 2>&1; then
    echo "gobuild: FAILED to build $name from $pkg in $dir:" >&2
    tail -n 40 "$log" >&2
    echo "gobuild: the Go module proxy must be reachable and $dir/go.mod must pin every module it needs" >&2
    rm -f "$log" "$out/$name.tmp"
    return 1
  fi
  rm -f "$log"
  mv "$out/$name.tmp" "$out/$name"
  echo "$want" >"$stamp"
  echo "gobuild: built $name in $((SECONDS - start))s"
}

# kube_ldflags: Kubernetes binaries report their release like an official build does
# (kubectl, the kubelet's node status and clients read it).
kube_ldflags="-s -X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
