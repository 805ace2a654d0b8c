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

# runc links libseccomp through cgo; the node images carry Debian's nft (kube-proxy, flannel) and iptables (flannel
# cleans up its iptables rules before it programs nftables), and netbase's /etc/protocols and /etc/services
bash "$here/../aptEnsure.sh" libseccomp-dev pkg-config nftables iptables netbase

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
    # a component-specific step (stand-ins for modules the proxy does not serve), when there is one
    if declare -F "prepare_$name" >/dev/null; then "prepare_$name"; fi
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

# flanneld links every cloud backend, Tencent's VPC SDK among them, whose module the proxy does not serve (403). The
# lab uses the vxlan backend only, so a stand-in package with the SDK's names, whose client always fails, takes its place.
prepare_flannel() {
  local module=github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc
  mkdir -p stub/vpc/v20170312
  printf 'module %s\n\ngo 1.21\n' "$module" > stub/vpc/go.mod
  cat > stub/vpc/v20170312/client.go <<'GO'
// Package v20170312 stands in for Tencent Cloud's VPC SDK, which the Go module proxy does not serve: every call fails.
package v20170312

import "errors"

var errUnavailable = errors.New("flannel's tencent-vpc backend is not built into this test-bed flanneld")

type Filter struct {
	Name   *string
	Values []*string
}

type Route struct {
	DestinationCidrBlock *string
	GatewayType          *string
	GatewayId            *string
	RouteType            *string
	RouteId              *uint64
	Enabled              *bool
}

type RouteTable struct {
	RouteTableId *string
	RouteSet     []*Route
}

type DescribeRouteTablesRequest struct{ Filters []*Filter }
type DescribeRouteTablesResponse struct {
	Response *struct{ RouteTableSet []*RouteTable }
}
type DeleteRoutesRequest struct {
	RouteTableId *string
	Routes       []*Route
}
type DeleteRoutesResponse struct{}
type CreateRoutesRequest struct {
	RouteTableId *string
	Routes       []*Route
}
type CreateRoutesResponse struct{}

type Client struct{}

func NewClientWithSecretId(string, string, string) (*Client, error) { return nil, errUnavailable }
func NewDescribeRouteTablesRequest() *DescribeRouteTablesRequest    { return &DescribeRouteTablesRequest{} }
func NewDeleteRoutesRequest() *DeleteRoutesRequest                  { return &DeleteRoutesRequest{} }
func NewCreateRoutesRequest() *CreateRoutesRequest                  { return &CreateRoutesRequest{} }

func (*Client) DescribeRouteTables(*DescribeRouteTablesRequest) (*DescribeRouteTablesResponse, error) {
	return nil, errUnavailable
}
func (*Client) DeleteRoutes(*DeleteRoutesRequest) (*DeleteRoutesResponse, error) {
	return nil, errUnavailable
}
func (*Client) CreateRoutes(*CreateRoutesRequest) (*CreateRoutesResponse, error) {
	return nil, errUnavailable
}
GO
  go mod edit -replace="$module=./stub/vpc"
}

# flanneld imports C on amd64 (its udp backend); linked statically so that it runs in a bare image
v=$(node_version flannel)
build flannel "$v" github.com/flannel-io/flannel 1 "" \
  "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=v$v -extldflags -static" \
  flanneld=github.com/flannel-io/flannel

# the flannel CNI plugin: containernetworking/plugins' flannel meta plugin (its last release that had it)
v=$(node_version flannelCni)
build flannel-cni "$v" github.com/containernetworking/plugins 0 "" "" flannel=github.com/containernetworking/plugins/plugins/meta/flannel

v=$(node_version coredns)
build coredns "$v" github.com/coredns/coredns 0 "" "" coredns=github.com/coredns/coredns
