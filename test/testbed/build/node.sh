#!/usr/bin/env bash
# Builds what a real node of the test bed runs besides the Kubernetes binaries, from the Go module proxy, each into
# $CIDR_MIGRATION_CACHE/<name>-<version>/bin and skipped when cached: containerd (with ctr and the runc shim), runc
# (cgo, seccomp), the CNI plugins bridge/host-local/loopback/portmap, flanneld (cgo) and CoreDNS. The versions are
# test/testbed/versions.json's "node" entry; the kubelet, kube-proxy and kube-scheduler come from kube.sh.
# Usage: node.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
versions_file="$here/../versions.json"
cache_dir="${CIDR_MIGRATION_CACHE:-$HOME/.cache/cidr-migration}"
# Bump when the recipe changes, so stale cached binaries are rebuilt.
stamp="go-module-build-1"

# runc links libseccomp through cgo
if ! dpkg-query -W -f='${Status}' libseccomp-dev 2>/dev/null | grep -q "install ok installed"; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libseccomp-dev pkg-config
fi

node_version() { jq -r --arg c "$1" '.node[$c] // error("versions.json: no node.\($c)")' "$versions_file"; }

# build NAME VERSION MODULE CGO TAGS LDFLAGS OUT=PACKAGE...
# A wrapper module requires MODULE@vVERSION and builds each PACKAGE into bin/OUT (CGO: 0 or 1; TAGS comma-separated).
build() {
  local name="$1" version="$2" module="$3" cgo="$4" tags="$5" ldflags="$6"
  shift 6
  local dir="$cache_dir/$name-$version" missing=0 target
  for target in "$@"; do [ -x "$dir/bin/${target%%=*}" ] || missing=1; done
  if [ "$missing" -eq 0 ] && [ "$(cat "$dir/BUILD" 2>/dev/null)" = "$stamp" ]; then
    echo "test bed: $name $version cached in $dir/bin"; return 0
  fi
  local start work
  start=$(date +%s)
  work="$cache_dir/build/$name-$version"
  rm -rf "$work"; mkdir -p "$work/out" "$dir/bin"
  (
    cd "$work"
    go mod init wrapper >/dev/null 2>&1
    local packages=() pkg
    for target in "$@"; do packages+=("${target#*=}"); done
    go get "$module@v$version" "${packages[@]/%/@v$version}" >/dev/null 2>&1 || go get "$module@v$version" "${packages[@]/%/@v$version}"
    for target in "$@"; do
      pkg="${target#*=}"
      CGO_ENABLED="$cgo" go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "out/${target%%=*}" "$pkg"
    done
    for target in "$@"; do
      cp "out/${target%%=*}" "$dir/bin/.${target%%=*}.new"
      mv -f "$dir/bin/.${target%%=*}.new" "$dir/bin/${target%%=*}"
    done
  )
  echo "$stamp" > "$dir/BUILD"
  rm -rf "$work"
  echo "test bed: built $name $version in $(( $(date +%s) - start )) s into $dir/bin"
}

v=$(node_version containerd)
build containerd "$v" github.com/containerd/containerd/v2 0 no_btrfs,no_zfs,no_devmapper,urfave_cli_no_docs \
  "-X github.com/containerd/containerd/v2/version.Version=v$v" \
  containerd=github.com/containerd/containerd/v2/cmd/containerd \
  ctr=github.com/containerd/containerd/v2/cmd/ctr \
  containerd-shim-runc-v2=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2

# runc needs cgo and libseccomp: kubeadm's static pods ask for the RuntimeDefault seccomp profile
v=$(node_version runc)
build runc "$v" github.com/opencontainers/runc 1 seccomp "" runc=github.com/opencontainers/runc

v=$(node_version cniPlugins)
build cni-plugins "$v" github.com/containernetworking/plugins 0 "" "" \
  bridge=github.com/containernetworking/plugins/plugins/main/bridge \
  loopback=github.com/containernetworking/plugins/plugins/main/loopback \
  host-local=github.com/containernetworking/plugins/plugins/ipam/host-local \
  portmap=github.com/containernetworking/plugins/plugins/meta/portmap

# flanneld imports C on amd64 (its udp backend); linked statically so that it runs in a bare image
v=$(node_version flannel)
build flannel "$v" github.com/flannel-io/flannel 1 "" \
  "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=v$v -extldflags -static" \
  flanneld=github.com/flannel-io/flannel

v=$(node_version coredns)
build coredns "$v" github.com/coredns/coredns 0 "" "" coredns=github.com/coredns/coredns
