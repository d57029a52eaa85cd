#!/usr/bin/env bash
# Installs Debian's lua5.4, the interpreter test/gitops runs the Argo CD health checks of
# config/gitops/argocd with. Idempotent: nothing happens when lua5.4 is already on PATH.
# The package lists are refreshed only when the install fails without that (a fresh
# container ships none).
set -euo pipefail

if command -v lua5.4 >/dev/null; then
  exit 0
fi
echo "install-lua.sh: lua5.4 is not on PATH: installing Debian's lua5.4"
if [[ $(id -u) != 0 ]]; then
  echo "install-lua.sh: not root: install it with apt-get (sudo apt-get install lua5.4)" >&2
  exit 1
fi
install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lua5.4 >/dev/null
}
if ! install; then
  echo "install-lua.sh: the install failed; refreshing the package lists (apt-get update) and retrying"
  apt-get update -qq
  install
fi
lua5.4 -v
