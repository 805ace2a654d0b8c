#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kubeadm and kubectl (or the programs named after the version, e.g.
# the node's kubelet kube-proxy kube-scheduler) for one Kubernetes version from the Go module proxy, into
# $CIDR_MIGRATION_CACHE/kube-<version>/bin. Skipped when the cache already has them.
# Usage: kube.sh 1.37.2 [PROGRAM...]
# The k8s.io/kubernetes module zip leaves out staging/ and its go.mod replaces every staging module with
# ./staging/..., so a wrapper module requires each staging module at v0.<minor>.<patch> instead.
set -euo pipefail
version="$1"
shift
minor=$(echo "$version" | cut -d. -f2)
cache_dir="${CIDR_MIGRATION_CACHE:-$HOME/.cache/cidr-migration}"
bin_dir="$cache_dir/kube-$version/bin"
programs=(kube-apiserver kube-controller-manager kubeadm kubectl)
[ "$#" -eq 0 ] || programs=("$@")
# Bump when the recipe changes, so stale cached binaries are rebuilt.
stamp="go-module-build-1"
# One build of a version at a time: a second caller (npm test's background build, a test) waits, then finds it cached.
mkdir -p "$cache_dir"
exec 9>"$cache_dir/kube-$version.lock"
flock 9
missing=()
for p in "${programs[@]}"; do [ -x "$bin_dir/$p" ] || missing+=("$p"); done
if [ "${#missing[@]}" -eq 0 ] && [ "$(cat "$cache_dir/kube-$version/BUILD" 2>/dev/null)" = "$stamp" ]; then
  echo "test bed: kube $version (${programs[*]}) cached in $bin_dir"; exit 0
fi
start=$(date +%s)
work="$cache_dir/build/kube-$version"
rm -rf "$work"; mkdir -p "$work"; cd "$work"
go mod init wrapper >/dev/null 2>&1
gomod=$(go mod download -json "k8s.io/kubernetes@v$version" | jq -r .GoMod)
go mod edit -go="$(awk '$1=="go"{print $2; exit}' "$gomod")" -require="k8s.io/kubernetes@v$version"
# godebug lines change runtime defaults the upstream binaries are built with
awk '$1=="godebug" && $2!="(" {print $2}' "$gomod" | while read -r kv; do go mod edit -godebug="$kv"; done
awk '/^godebug \($/{f=1;next} f&&/^\)/{f=0} f{print $1}' "$gomod" | while read -r kv; do go mod edit -godebug="$kv"; done
# A staging module's own patch release is sometimes missing from the proxy (k8s.io/endpointslice v0.32.13): then
# the newest patch of the same minor that it serves is used, and said.
awk '$2=="=>" && $3 ~ /^\.\/staging/ {print $1}' "$gomod" | while read -r m; do
  want="v0.$minor.${version##*.}"
  if ! (cd / && go mod download "$m@$want" >/dev/null 2>&1); then
    fallback=$( (cd / && go list -m -versions "$m" 2>/dev/null) | tr ' ' '\n' | grep -E "^v0\.$minor\.[0-9]+$" | sort -t. -k3 -n | awk -F. -v p="${version##*.}" '$3+0 < p+0' | tail -n 1 || true)
    if [ -z "$fallback" ]; then
      # none served at all (k8s.io/sample-cli-plugin): the binaries import nothing from it, so an empty module
      # stands in, only so that the module graph loads
      echo "test bed: the proxy serves no $m v0.$minor; an empty stand-in module takes its place (none of the binaries imports it)"
      mkdir -p "stub/$m"
      printf 'module %s\n' "$m" > "stub/$m/go.mod"
      go mod edit -replace="$m=./stub/$m"
      continue
    fi
    echo "test bed: the proxy does not serve $m $want; using $fallback"
    want="$fallback"
  fi
  go mod edit -replace="$m=$m@$want"
done
# each program's package: cmd/<name>, but agnhost (the e2e tests' workload image) is test/images/agnhost
packages=()
for p in "${programs[@]}"; do
  case "$p" in
    agnhost) packages+=("k8s.io/kubernetes/test/images/agnhost") ;;
    *) packages+=("k8s.io/kubernetes/cmd/$p") ;;
  esac
done
go get "${packages[@]/%/@v$version}" >/dev/null 2>&1 || go get "${packages[@]/%/@v$version}"
ld=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+="-X $pkg.gitVersion=v$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean "
done
mkdir -p out
# No DWARF (-gcflags=all=-dwarf=false, -ldflags -s -w): 13% less build time measured on etcd, and stack traces
# keep their file:line (pclntab stays). The cache stamp is unchanged: a binary with DWARF is as good.
CGO_ENABLED=0 go build -trimpath -pgo=off -gcflags=all=-dwarf=false -ldflags "-s -w $ld" -o out/ "${packages[@]}"
mkdir -p "$bin_dir"
for p in "${programs[@]}"; do cp "out/$p" "$bin_dir/.$p.new"; mv -f "$bin_dir/.$p.new" "$bin_dir/$p"; done
echo "$stamp" > "$cache_dir/kube-$version/BUILD"
cd /; rm -rf "$work"
echo "test bed: built kube $version (${programs[*]}) in $(( $(date +%s) - start )) s into $bin_dir"
