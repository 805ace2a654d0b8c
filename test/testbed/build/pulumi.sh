#!/usr/bin/env bash
# Builds the Pulumi engine from Go module sources, cached per version, never downloading at run time:
#   $CIDR_MIGRATION_CACHE/pulumi-<pulumi version>/bin/         pulumi, the pulumi-resource-pulumi-nodejs shim and the
#                                                               pulumi-analyzer-policy-nodejs launcher
#   $CIDR_MIGRATION_CACHE/pulumi-plugins/kubernetes-<version>/  pulumi-resource-kubernetes
#   $CIDR_MIGRATION_CACHE/pulumi-home/                          PULUMI_HOME with the kubernetes plugin installed
# Versions are the installed npm packages': @pulumi/pulumi (the CLI) and @pulumi/kubernetes (the engine asks for the
# plugin version equal to the npm package's own).
# The program runs as an Automation API inline program (engine/, `cidr-migration engine ...`): the Node process is
# its own language host and the CLI connects to it (--client), so no pulumi-language-nodejs is needed. That is as
# well: the Go module proxy refuses it (sdk/nodejs/cmd/pulumi-language-nodejs has no tags, and its pseudo-versions
# answer 403). Node steps are dynamic resources (RemoteScript), so no command provider is needed either.
# A `pulumi` on PATH with the same version is used as it is.
# Usage: pulumi.sh            build what is missing, install the plugin, print the environment to use
#        pulumi.sh --env      the same, progress on stderr, only `export ...` lines on stdout (for eval)
# Recipes (shared/TESTBED.md): pkg/go.mod carries directory replaces, so a wrapper module requires pkg/v3 and sdk/v3
# at the tag. The kubernetes provider module has no tags of its own: only pseudo-versions name it (table below).
set -euo pipefail
mode="${1:-}"
case "$mode" in ""|--env) ;; *) echo "usage: $0 [--env]" >&2; exit 2 ;; esac
if [ "$mode" = "--env" ]; then exec 3>&1 1>&2; else exec 3>&1; fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cache_dir="${CIDR_MIGRATION_CACHE:-$HOME/.cache/cidr-migration}"
# Bump when the recipe changes, so stale cached binaries are rebuilt.
stamp="go-module-build-1"
export PULUMI_SKIP_UPDATE_CHECK=true PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

die() { echo "test bed: $*" >&2; exit 1; }
npm_version() { # the installed version of @pulumi/$1: node_modules, else package-lock.json
  local v
  v=$(jq -r '.version // empty' "$root/node_modules/@pulumi/$1/package.json" 2>/dev/null || true)
  [ -n "$v" ] || v=$(jq -r --arg p "node_modules/@pulumi/$1" '.packages[$p].version // empty' "$root/package-lock.json" 2>/dev/null || true)
  [ -n "$v" ] || die "cannot tell the installed @pulumi/$1 version (run npm ci first)"
  echo "$v"
}
pulumi_version="$(npm_version pulumi)"
kubernetes_version="${CIDR_MIGRATION_PULUMI_KUBERNETES_VERSION:-$(npm_version kubernetes)}"

# Pseudo-versions of the untagged modules, from each upstream tag's commit (UTC commit time, 12 hex digits).
kubernetes_pseudo() {
  case "$1" in
    4.25.0) echo "v4.0.0-20260115033456-f47bc2d6f199" ;; # the one the proxy serves (4.32.0's a03ff6ba58d2: 403)
  esac
}
# served MODULE VERSION: 0 when the Go module proxy serves it; else the proxy's answer is in $refusal
refusal=""
served() {
  local out
  if out=$(cd / && go mod download -json "$1@$2" 2>&1); then return 0; fi
  refusal=$(jq -r '.Error // empty' <<<"$out" 2>/dev/null || true)
  [ -n "$refusal" ] || refusal="$out"
  return 1
}
# install_file SRC DEST: copy through a temporary name, so a reader never sees half a binary
install_file() { mkdir -p "$(dirname "$2")"; cp "$1" "$2.new"; chmod +x "$2.new"; mv -f "$2.new" "$2"; }
timed_build() { # NAME COMMAND...: run one build step and report its wall time
  local name="$1" t0=$SECONDS; shift
  "$@"
  echo "test bed: built $name in $(( SECONDS - t0 )) s"
}

command -v go >/dev/null || die "Go is not on PATH; the Pulumi engine is built from the Go module proxy"
# One build at a time: a second caller (a test suite asking for --env while setup builds) waits, then finds the cache.
mkdir -p "$cache_dir"
exec 9>"$cache_dir/pulumi-build.lock"
flock 9
out_dir="$cache_dir/pulumi-$pulumi_version"
bin_dir="$out_dir/bin"
plugins_dir="$cache_dir/pulumi-plugins"
k8s_dir="$plugins_dir/kubernetes-$kubernetes_version"
pulumi_home="$cache_dir/pulumi-home"
cached() { [ -x "$2" ] && [ "$(cat "$1/BUILD" 2>/dev/null)" = "$stamp" ]; } # cached STAMP_DIR BINARY

# --- which pulumi: one on PATH with the right version, else ours -------------------------------------------------
pulumi_bin="$bin_dir/pulumi"
need_cli=1
if path_pulumi=$(command -v pulumi) && [ "$(readlink -f "$path_pulumi")" != "$(readlink -f "$pulumi_bin")" ]; then
  path_version=$("$path_pulumi" version 2>/dev/null || true)
  if [ "${path_version#v}" = "$pulumi_version" ]; then
    echo "test bed: using pulumi $path_version on PATH at $path_pulumi (not building the CLI)"
    pulumi_bin="$path_pulumi"; need_cli=0
  else
    echo "test bed: pulumi on PATH at $path_pulumi is ${path_version:-unknown}, not v$pulumi_version: building v$pulumi_version"
  fi
fi
if cached "$out_dir" "$bin_dir/pulumi"; then need_cli=0; fi
need_kubernetes=1
if cached "$k8s_dir" "$k8s_dir/pulumi-resource-kubernetes"; then need_kubernetes=0; fi

# --- whether the proxy serves what is missing; all problems reported at once -------------------------------------
problems=()
kubernetes_pseudo_version=""
if [ "$need_kubernetes" = 1 ]; then
  p="$(kubernetes_pseudo "$kubernetes_version")"
  if [ -z "$p" ]; then
    problems+=("pulumi-resource-kubernetes $kubernetes_version: no known commit; the proxy serves provider/v4 only at 4.25.0's commit, so pin @pulumi/kubernetes to 4.25.0")
  elif served github.com/pulumi/pulumi-kubernetes/provider/v4 "$p"; then
    kubernetes_pseudo_version="$p"
  else
    problems+=("pulumi-resource-kubernetes $kubernetes_version: the proxy refuses $p ($refusal)")
  fi
fi
if [ "${#problems[@]}" -gt 0 ]; then
  for m in "${problems[@]}"; do echo "test bed: cannot build $m" >&2; done
  exit 1
fi

start=$SECONDS
# No DWARF (-gcflags=all=-dwarf=false, -ldflags -s -w): 13% less build time measured on etcd's build, and stack traces
# keep their file:line (pclntab stays). The cache stamp is unchanged: a binary with DWARF is as good.
# "v" as in upstream release builds, so `pulumi version` prints v<version>
version_ld="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$pulumi_version"
# --- the CLI: one wrapper module pinning pkg/v3 and sdk/v3 at the tag -------------------------------------------
if [ "$need_cli" = 1 ]; then
  work="$cache_dir/build/pulumi-$pulumi_version"
  rm -rf "$work"; mkdir -p "$work"; cd "$work"
  go mod init wrapper >/dev/null 2>&1
  modules=("github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v$pulumi_version" "github.com/pulumi/pulumi/sdk/v3@v$pulumi_version")
  go get "${modules[@]}" >/dev/null 2>&1 || go get "${modules[@]}"
  mkdir -p out
  timed_build pulumi env CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w $version_ld" -o out/pulumi \
    github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  install_file out/pulumi "$bin_dir/pulumi"
  echo "$stamp" > "$out_dir/BUILD"
  cd /; rm -rf "$work"
fi
# The dynamic-provider shim is a shell script of the npm package; the engine looks for it beside `pulumi`.
shim="$root/node_modules/@pulumi/pulumi/pulumi-resource-pulumi-nodejs"
[ -f "$shim" ] || die "no $shim (run npm ci first)"
cmp -s "$shim" "$bin_dir/pulumi-resource-pulumi-nodejs" 2>/dev/null || install_file "$shim" "$bin_dir/pulumi-resource-pulumi-nodejs"
# The launcher of Node policy packs (`--policy-pack`), which Pulumi's releases ship beside `pulumi` and npm does not:
# it runs the SDK's own run-policy-pack, found from the pack's directory as the dynamic-provider shim finds its own.
analyzer="$bin_dir/pulumi-analyzer-policy-nodejs"
cat > "$analyzer.new" <<'SHIM'
#!/bin/sh
exec node "$(node -e "console.log(require.resolve('@pulumi/pulumi/cmd/run-policy-pack'))")" "$@"
SHIM
chmod +x "$analyzer.new"; mv -f "$analyzer.new" "$analyzer"

# --- pulumi-resource-kubernetes: main.go embeds two files that `go generate` makes (git-ignored, not in the zip) --
if [ "$need_kubernetes" = 1 ]; then
  work="$cache_dir/build/pulumi-kubernetes-$kubernetes_version"
  rm -rf "$work"; mkdir -p "$work"; cd "$work"
  go mod init wrapper >/dev/null 2>&1
  module=github.com/pulumi/pulumi-kubernetes/provider/v4
  go get "$module@$kubernetes_pseudo_version" >/dev/null 2>&1 || go get "$module@$kubernetes_pseudo_version"
  d="$(go list -m -f '{{.Dir}}' "$module")/cmd/pulumi-resource-kubernetes"
  mkdir -p k; cp "$d"/{main.go,generate.go,schema.json,terraform-mapping.json} k/; chmod -R u+w k
  go mod tidy >/dev/null 2>&1 || go mod tidy
  timed_build "kubernetes embeds (go generate)" env -C k VERSION="$kubernetes_version" go run generate.go
  timed_build pulumi-resource-kubernetes env CGO_ENABLED=0 go build -trimpath -gcflags=all=-dwarf=false \
    -ldflags "-s -w -X $module/pkg/version.Version=$kubernetes_version" -o out/pulumi-resource-kubernetes ./k
  install_file out/pulumi-resource-kubernetes "$k8s_dir/pulumi-resource-kubernetes"
  echo "$stamp" > "$k8s_dir/BUILD"
  cd /; rm -rf "$work"
fi

if [ "$need_cli$need_kubernetes" != 00 ]; then
  echo "test bed: Pulumi engine built in $(( SECONDS - start )) s"
fi

# --- install the resource plugin into PULUMI_HOME (exact versions: what the npm packages ask for) ---------------
export PULUMI_HOME="$pulumi_home"
install_plugin() { # NAME VERSION DIR
  local installed="$pulumi_home/plugins/resource-$1-v$2/pulumi-resource-$1"
  cmp -s "$3/pulumi-resource-$1" "$installed" 2>/dev/null && return 0
  "$pulumi_bin" plugin install resource "$1" "$2" --file "$3/pulumi-resource-$1" --reinstall >/dev/null
  echo "test bed: installed plugin resource-$1 v$2 into $pulumi_home"
}
install_plugin kubernetes "$kubernetes_version" "$k8s_dir"
if [ "$kubernetes_version" != "$(npm_version kubernetes)" ]; then
  echo "test bed: warning: plugin kubernetes $kubernetes_version is not what @pulumi/kubernetes $(npm_version kubernetes) asks for"
fi

# bin_dir goes on PATH unless an installed pulumi has the shim beside it (else the engine warns)
engine_path="$bin_dir"
if [ "$pulumi_bin" != "$bin_dir/pulumi" ]; then
  real_dir="$(dirname "$(readlink -f "$pulumi_bin")")"
  engine_path="$(dirname "$pulumi_bin")"
  if [ ! -x "$real_dir/pulumi-resource-pulumi-nodejs" ]; then
    engine_path="$bin_dir:$engine_path"
  fi
fi
engine_env=(
  "PATH=$engine_path:\$PATH"
  "PULUMI_HOME=$pulumi_home"
  "PULUMI_SKIP_UPDATE_CHECK=true"
  "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true"
)
if [ "$mode" = "--env" ]; then
  for e in "${engine_env[@]}"; do echo "export ${e%%=*}=\"${e#*=}\"" >&3; done
else
  echo "test bed: Pulumi $pulumi_version engine ready ($pulumi_bin); use it with:"
  for e in "${engine_env[@]}"; do echo "  export ${e%%=*}=\"${e#*=}\""; done
fi
