#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kubeadm v1.20.2 once from Debian's kubernetes source package,
# and unpacks Debian's kubectl 1.20.2, into $CIDR_MIGRATION_CACHE/kube-1.20.2/bin (the 1.20 test bed, with Debian's
# etcd 3.4). Skipped when cached. Needs root (apt).
set -euo pipefail
cache_dir="${CIDR_MIGRATION_CACHE:-$HOME/.cache/cidr-migration}"
kube_bin_dir="$cache_dir/kube-1.20.2/bin"
apt_updated=false
apt_update_once() {
  if [ "$apt_updated" = false ]; then
    apt-get update -qq
    apt_updated=true
  fi
}
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server etcd-client >/dev/null 2>&1 || {
  apt_update_once; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server etcd-client; }
# Debian starts etcd as a service on install; the tests run their own.
systemctl stop etcd 2>/dev/null || pkill -x etcd 2>/dev/null || true

# --- kubectl 1.20.2 for bench/services.bench.ts (the `kubectl replace --force` baseline) ---------------
# Debian's kubernetes-client, unpacked into the cache rather than installed: /usr/bin/kubectl may belong
# to another package (google-cloud-sdk ships a dispatcher there), and the bench wants the server's version.
if [ ! -x "$kube_bin_dir/kubectl" ]; then
  kubectl_dl=$(mktemp -d)
  if ! (cd "$kubectl_dl" && apt-get download kubernetes-client >/dev/null 2>&1); then
    apt_update_once
    (cd "$kubectl_dl" && apt-get download kubernetes-client >/dev/null)
  fi
  dpkg-deb -x "$kubectl_dl"/kubernetes-client_*.deb "$kubectl_dl/root"
  mkdir -p "$kube_bin_dir"
  install -m 0755 "$kubectl_dl/root/usr/bin/kubectl" "$kube_bin_dir/kubectl"
  rm -rf "$kubectl_dl"
fi
# --- end kubectl ------------------------------------------------------------------------------------

# Bump when the build changes, so stale cached binaries are rebuilt.
build_stamp="kube-1.20.2 reflect2-1.0.2"
stamp_file="$cache_dir/kube-1.20.2/BUILD"
stamp_ok=false
[ "$(cat "$stamp_file" 2>/dev/null)" = "$build_stamp" ] && stamp_ok=true
# Each binary comes from KUBEBUILDER_ASSETS when it has it (envtest assets often lack KCM and kubeadm), else from
# the cache; only what neither has is built. kubeadm re-issues the apiserver certificate in the component tests.
to_build=()
for bin in kube-apiserver kube-controller-manager kubeadm; do
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$bin" ]; then continue; fi
  if [ "$stamp_ok" = true ] && [ -x "$kube_bin_dir/$bin" ]; then continue; fi
  to_build+=("$bin")
done
if [ "${#to_build[@]}" -eq 0 ]; then
  echo "test bed: using kube binaries from ${KUBEBUILDER_ASSETS:+KUBEBUILDER_ASSETS and }$kube_bin_dir"
  exit 0
fi

echo "test bed: building ${to_build[*]} from Debian's kubernetes source (once)"
if ! grep -rqs "deb-src" /etc/apt/sources.list.d/cidr-migration-src.list; then
  echo "deb-src http://deb.debian.org/debian bookworm main" > /etc/apt/sources.list.d/cidr-migration-src.list
  apt_updated=false
fi
apt_update_once
# golang-github-modern-go-reflect2-dev: see the vendor swap below.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go rsync dpkg-dev make \
  golang-github-modern-go-reflect2-dev
build_root="$cache_dir/build"
rm -rf "$build_root"
mkdir -p "$build_root"
cd "$build_root"
apt-get source --download-only kubernetes >/dev/null
tar xzf kubernetes_*.orig.tar.gz
src_dir=$(find . -maxdepth 1 -mindepth 1 -type d -name 'kubernetes*' | head -n 1)
cd "$src_dir"
# Kubernetes 1.20 vendors modern-go/reflect2 1.0.1, which segfaults under Go >= 1.18
# (json-iterator map encoding, e.g. on every custom resource write). Debian's Go is
# 1.19, so use Debian's reflect2 1.0.2, the API-compatible release that fixes it.
reflect2_src=/usr/share/gocode/src/github.com/modern-go/reflect2
[ -f "$reflect2_src/reflect2.go" ] || { echo "test bed: $reflect2_src missing" >&2; exit 1; }
rsync -a --delete --exclude '*_test.go' --exclude test "$reflect2_src/" vendor/github.com/modern-go/reflect2/
mkdir -p .go/src/k8s.io
ln -sfn ../../.. .go/src/k8s.io/kubernetes
GOPATH="$PWD/.go" CGO_ENABLED=0 GOFLAGS=-mod=vendor make WHAT="${to_build[*]/#/cmd/}" >"$build_root/build.log" 2>&1 || {
  tail -n 40 "$build_root/build.log"; exit 1; }
mkdir -p "$kube_bin_dir"
# copy, then rename: tests may be running the old binaries ("text file busy")
for bin in "${to_build[@]}"; do
  cp "_output/bin/$bin" "$kube_bin_dir/.$bin.new"
  mv -f "$kube_bin_dir/.$bin.new" "$kube_bin_dir/$bin"
done
echo "$build_stamp" > "$stamp_file"
cd /
rm -rf "$build_root"
echo "test bed: kube binaries cached in $kube_bin_dir"
