#!/usr/bin/env bash
# The images a kubeadm cluster runs, built here with no registry and no Docker: each is one layer (the Go-built
# binary, or pause from Kubernetes' C source) written as a `docker save` archive that `ctr images import` reads,
# under the names kubeadm asks for (kubeadm config images list). Output: $CIDR_MIGRATION_NODE_LAB_IMAGES (default
# $CIDR_MIGRATION_NODE_LAB/images)/*.tar, which further labs share.
# Usage: images.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lab="${CIDR_MIGRATION_NODE_LAB:-$HOME/.cache/cidr-migration/node-lab}"
cache_dir="${CIDR_MIGRATION_CACHE:-$HOME/.cache/cidr-migration}"
versions_file="$here/../versions.json"
kube=$(jq -r '.versions[.newest].kube' "$versions_file")
etcd=$(jq -r '.versions[.newest].etcd' "$versions_file")
coredns=$(jq -r '.node.coredns' "$versions_file")
flannel=$(jq -r '.node.flannel' "$versions_file")
flannel_cni=$(jq -r '.node.flannelCni' "$versions_file")
kube_bin="$cache_dir/kube-$kube/bin"
out="${CIDR_MIGRATION_NODE_LAB_IMAGES:-$lab/images}"
mkdir -p "$out"

die() { echo "node images: $*" >&2; exit 1; }

# image NAME:TAG ROOTFS ENTRYPOINT_JSON [USER]: a one-layer docker-archive in $out.
image() {
  local ref="$1" rootfs="$2" entrypoint="$3" user="${4:-}"
  local file work layer_sha config config_sha
  file="$out/$(echo "$ref" | tr '/:' '__').tar"
  work=$(mktemp -d)
  tar --numeric-owner --owner=0 --group=0 --sort=name -C "$rootfs" -cf "$work/layer.tar" .
  layer_sha=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  # os and architecture are required: ctr import keeps only the images of the platform it is asked for
  config=$(jq -cn --arg sha "sha256:$layer_sha" --argjson entrypoint "$entrypoint" --arg user "$user" '{
    architecture: "amd64", os: "linux",
    config: ({Entrypoint: $entrypoint, Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]} + (if $user == "" then {} else {User: $user} end)),
    rootfs: {type: "layers", diff_ids: [$sha]}
  }')
  config_sha=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
  printf '%s' "$config" > "$work/$config_sha.json"
  mkdir -p "$work/$layer_sha"
  mv "$work/layer.tar" "$work/$layer_sha/layer.tar"
  jq -cn --arg config "$config_sha.json" --arg ref "$ref" --arg layer "$layer_sha/layer.tar" '[{Config: $config, RepoTags: [$ref], Layers: [$layer]}]' > "$work/manifest.json"
  tar -C "$work" -cf "$file.new" manifest.json "$config_sha.json" "$layer_sha"
  mv -f "$file.new" "$file"
  rm -rf "$work"
  echo "node images: $ref -> $file"
}

# a rootfs with these binaries in /usr/local/bin (and the shared libraries a dynamically linked one needs)
rootfs_with() {
  local dir binary lib
  dir=$(mktemp -d)
  mkdir -p "$dir/usr/local/bin" "$dir/tmp" "$dir/etc"
  chmod 1777 "$dir/tmp"
  echo "root:x:0:0:root:/root:/bin/sh" > "$dir/etc/passwd"
  # nft prints protocol names only with /etc/protocols; without it kube-proxy (1.33+, which reads its table back at
  # start instead of flushing it) takes "6" and "tcp" for two keys and deletes the element it just kept: an empty
  # service map after every other restart
  cp /etc/protocols /etc/services "$dir/etc/"
  for binary in "$@"; do
    [ -x "$binary" ] || die "$binary is missing: build it first (test/testbed/build/kube.sh, etcd.sh, node.sh)"
    cp "$binary" "$dir/usr/local/bin/"
    if ldd "$binary" >/dev/null 2>&1; then
      for lib in $(ldd "$binary" | grep -o '/[^ ]*'); do
        mkdir -p "$dir$(dirname "$lib")"
        cp -L "$lib" "$dir$lib"
      done
    fi
  done
  echo "$dir"
}

# pause, from the C source in the Kubernetes module (build/pause/linux/pause.c), static as upstream builds it
pause_version=$("$kube_bin/kubeadm" config images list --kubernetes-version "v$kube" | awk -F: '/\/pause:/ {print $2}')
pause_src="$(go env GOMODCACHE)/k8s.io/kubernetes@v$kube/build/pause/linux/pause.c"
[ -f "$pause_src" ] || (cd / && go mod download "k8s.io/kubernetes@v$kube")
root=$(mktemp -d)
gcc -Os -Wall -Werror -static -DVERSION="v$pause_version-test-bed" -o "$root/pause" "$pause_src"
image "registry.k8s.io/pause:$pause_version" "$root" '["/pause"]' "65535:65535"
rm -rf "$root"

for component in kube-apiserver kube-controller-manager kube-scheduler; do
  root=$(rootfs_with "$kube_bin/$component")
  image "registry.k8s.io/$component:v$kube" "$root" "[\"/usr/local/bin/$component\"]"
  rm -rf "$root"
done

# kube-proxy programs the nftables backend through the nft command
root=$(rootfs_with "$kube_bin/kube-proxy" /usr/sbin/nft)
image "registry.k8s.io/kube-proxy:v$kube" "$root" '["/usr/local/bin/kube-proxy"]'
rm -rf "$root"

etcd_tag=$("$kube_bin/kubeadm" config images list --kubernetes-version "v$kube" | awk -F: '/\/etcd:/ {print $2}')
root=$(rootfs_with "$cache_dir/etcd-$etcd/bin/etcd" "$cache_dir/etcd-$etcd/bin/etcdctl")
image "registry.k8s.io/etcd:$etcd_tag" "$root" '["/usr/local/bin/etcd"]'
rm -rf "$root"

root=$(rootfs_with "$cache_dir/coredns-$coredns/bin/coredns")
mv "$root/usr/local/bin/coredns" "$root/coredns"
image "registry.k8s.io/coredns/coredns:v$coredns" "$root" '["/coredns"]'
rm -rf "$root"

# flannel as its DaemonSet runs it: /opt/bin/flanneld, and /opt/bin/install-conf for the CNI config init container;
# nft for its nftables mode, sh and cp for the init containers
root=$(rootfs_with "$cache_dir/flannel-$flannel/bin/flanneld" /usr/sbin/nft /bin/sh /bin/cp /usr/sbin/xtables-nft-multi)
mkdir -p "$root/opt/bin" "$root/bin" "$root/usr/sbin"
# iptables as Debian links it (the nft variant), with the extensions it loads at run time
for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -s /usr/local/bin/xtables-nft-multi "$root/usr/sbin/$name"
done
mkdir -p "$root/usr/lib/x86_64-linux-gnu"
cp -r /usr/lib/x86_64-linux-gnu/xtables "$root/usr/lib/x86_64-linux-gnu/"
mv "$root/usr/local/bin/flanneld" "$root/opt/bin/flanneld"
mv "$root/usr/local/bin/sh" "$root/usr/local/bin/cp" "$root/bin/"
# shellcheck disable=SC2016 # the script's own arguments
printf '#!/bin/sh\nset -e\ncp -f "$1" "$2"\n' > "$root/opt/bin/install-conf"
chmod +x "$root/opt/bin/install-conf"
image "ghcr.io/flannel-io/flannel:v$flannel" "$root" '["/opt/bin/flanneld"]'
rm -rf "$root"

root=$(rootfs_with "$cache_dir/flannel-cni-$flannel_cni/bin/flannel" /bin/cp)
mv "$root/usr/local/bin/flannel" "$root/flannel"
image "ghcr.io/flannel-io/flannel-cni-plugin:v$flannel_cni" "$root" '["/flannel"]'
rm -rf "$root"

# the workload the traffic measurements use: agnhost (the Kubernetes e2e tests' image; netexec answers HTTP) and
# the prober (prober/main.go, standard library only)
root=$(rootfs_with "$kube_bin/agnhost")
image "registry.k8s.io/e2e-test-images/agnhost:v$kube-test-bed" "$root" '["/usr/local/bin/agnhost"]'
rm -rf "$root"
root=$(mktemp -d)
(cd "$here/prober" && CGO_ENABLED=0 go build -trimpath -o "$root/prober" .)
image "cidr-migration.test/prober:test-bed" "$root" '["/prober"]'
rm -rf "$root"
