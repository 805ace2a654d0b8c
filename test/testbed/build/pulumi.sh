#!/usr/bin/env bash
# Builds the Pulumi engine from Go module sources, cached per version, never downloading at run time:
#   $CIDR_MIGRATION_CACHE/pulumi-<pulumi version>/bin/         pulumi, pulumi-language-nodejs, pulumi-resource-pulumi-nodejs
#   $CIDR_MIGRATION_CACHE/pulumi-plugins/<name>-<version>/     pulumi-resource-kubernetes, pulumi-resource-command
#   $CIDR_MIGRATION_CACHE/pulumi-home/                         PULUMI_HOME with both resource plugins installed
# Versions are the installed npm packages': @pulumi/pulumi (CLI and language host), @pulumi/kubernetes and
# @pulumi/command (the engine asks for the plugin version equal to the npm package's own).
# A `pulumi` on PATH with the same version is used as it is (with its own language host beside it).
# Usage: pulumi.sh            build what is missing, install the plugins, print the environment to use
#        pulumi.sh --env      the same, progress on stderr, only `export ...` lines on stdout (for eval)
#        pulumi.sh --smoke    the same, then `pulumi up`/`destroy` of a dynamic resource and a local Command, and a
#                             preview with the kubernetes provider, on a local backend in a temporary directory
# Recipes (shared/TESTBED.md): pkg/go.mod and sdk/nodejs/cmd/pulumi-language-nodejs/go.mod carry directory replaces,
# so a wrapper module requires pkg/v3 and sdk/v3 at the tag. The provider and language-host modules have no tags of
# their own: only pseudo-versions name them (tables below). Where the proxy refuses one, the source is taken from
# $CIDR_MIGRATION_PULUMI_SRC (default test/testbed/build/pulumi-src), laid out as:
#   pulumi-language-nodejs-<v>/  the non-test .go files of sdk/nodejs/cmd/pulumi-language-nodejs at tag v<v>
#   pulumi-command-<v>/          the provider/ directory of pulumi/pulumi-command at tag v<v> (go.mod, go.sum, cmd, pkg)
set -euo pipefail
mode="${1:-}"
case "$mode" in ""|--env|--smoke) ;; *) echo "usage: $0 [--env|--smoke]" >&2; exit 2 ;; esac
if [ "$mode" = "--env" ]; then exec 3>&1 1>&2; else exec 3>&1; fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cache_dir="${CIDR_MIGRATION_CACHE:-$HOME/.cache/cidr-migration}"
src_dir="${CIDR_MIGRATION_PULUMI_SRC:-$here/pulumi-src}"
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
command_version="$(npm_version command)"

# Pseudo-versions of the untagged modules, from each upstream tag's commit (UTC commit time, 12 hex digits).
language_host_pseudo() {
  case "$1" in
    3.248.0) echo "v3.0.0-20260624120734-a88168d865b7" ;; # = tag v3.248.0 (sdk/v3.248.0)
  esac
}
kubernetes_pseudo() {
  case "$1" in
    4.25.0) echo "v4.0.0-20260115033456-f47bc2d6f199" ;;
    4.32.0) echo "v4.0.0-20260608201737-a03ff6ba58d2" ;;
  esac
}
command_pseudo() {
  case "$1" in
    1.2.1) echo "v0.0.0-20260303235922-7f3eb6f3b77c" ;;
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
out_dir="$cache_dir/pulumi-$pulumi_version"
bin_dir="$out_dir/bin"
plugins_dir="$cache_dir/pulumi-plugins"
k8s_dir="$plugins_dir/kubernetes-$kubernetes_version"
cmd_dir="$plugins_dir/command-$command_version"
pulumi_home="$cache_dir/pulumi-home"
cached() { [ -x "$2" ] && [ "$(cat "$1/BUILD" 2>/dev/null)" = "$stamp" ]; } # cached STAMP_DIR BINARY

# --- which pulumi: one on PATH with the right version, else ours -------------------------------------------------
pulumi_bin="$bin_dir/pulumi"
need_cli=1 need_language_host=1
if path_pulumi=$(command -v pulumi) && [ "$(readlink -f "$path_pulumi")" != "$(readlink -f "$pulumi_bin")" ]; then
  path_version=$("$path_pulumi" version 2>/dev/null || true)
  if [ "${path_version#v}" = "$pulumi_version" ]; then
    echo "test bed: using pulumi $path_version on PATH at $path_pulumi (not building the CLI)"
    pulumi_bin="$path_pulumi"; need_cli=0
    # an installed pulumi ships its language host beside it
    [ -x "$(dirname "$(readlink -f "$path_pulumi")")/pulumi-language-nodejs" ] && need_language_host=0
  else
    echo "test bed: pulumi on PATH at $path_pulumi is ${path_version:-unknown}, not v$pulumi_version: building v$pulumi_version"
  fi
fi
if cached "$out_dir" "$bin_dir/pulumi"; then need_cli=0; fi
if cached "$out_dir" "$bin_dir/pulumi-language-nodejs"; then need_language_host=0; fi
need_kubernetes=1 need_command=1
if cached "$k8s_dir" "$k8s_dir/pulumi-resource-kubernetes"; then need_kubernetes=0; fi
if cached "$cmd_dir" "$cmd_dir/pulumi-resource-command"; then need_command=0; fi

# --- where each missing part comes from: the proxy, else vendored source; all problems reported at once ----------
problems=()
language_host_from="" command_from="" kubernetes_pseudo_version=""
if [ "$need_language_host" = 1 ]; then
  p="$(language_host_pseudo "$pulumi_version")"
  if [ -n "$p" ] && served github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3 "$p"; then
    language_host_from="proxy:$p"
  elif [ -f "$src_dir/pulumi-language-nodejs-$pulumi_version/main.go" ]; then
    [ -z "$p" ] || echo "test bed: the proxy refuses pulumi-language-nodejs $p ($refusal); building it from $src_dir"
    language_host_from="src:$src_dir/pulumi-language-nodejs-$pulumi_version"
  else
    problems+=("pulumi-language-nodejs $pulumi_version: ${p:+the proxy refuses $p ($refusal), and }no source in $src_dir/pulumi-language-nodejs-$pulumi_version/")
  fi
fi
if [ "$need_kubernetes" = 1 ]; then
  p="$(kubernetes_pseudo "$kubernetes_version")"
  if [ -z "$p" ]; then
    problems+=("pulumi-resource-kubernetes $kubernetes_version: no known commit (known: 4.25.0, 4.32.0); the proxy serves provider/v4 at 4.25.0's commit, so re-pin @pulumi/kubernetes to 4.25.0, or set CIDR_MIGRATION_PULUMI_KUBERNETES_VERSION to build another")
  elif served github.com/pulumi/pulumi-kubernetes/provider/v4 "$p"; then
    kubernetes_pseudo_version="$p"
  else
    problems+=("pulumi-resource-kubernetes $kubernetes_version: the proxy refuses $p ($refusal)")
  fi
fi
if [ "$need_command" = 1 ]; then
  p="$(command_pseudo "$command_version")"
  if [ -n "$p" ] && served github.com/pulumi/pulumi-command/provider "$p"; then
    command_from="proxy:$p"
  elif [ -f "$src_dir/pulumi-command-$command_version/go.mod" ]; then
    [ -z "$p" ] || echo "test bed: the proxy refuses pulumi-command/provider $p ($refusal); building it from $src_dir"
    command_from="src:$src_dir/pulumi-command-$command_version"
  else
    problems+=("pulumi-resource-command $command_version: ${p:+the proxy refuses $p ($refusal), and }no source in $src_dir/pulumi-command-$command_version/")
  fi
fi
if [ "${#problems[@]}" -gt 0 ]; then
  for m in "${problems[@]}"; do echo "test bed: cannot build $m" >&2; done
  exit 1
fi

start=$SECONDS
# "v" as in upstream release builds, so `pulumi version` prints v<version>
version_ld="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$pulumi_version"
# --- the CLI and the language host: one wrapper module pinning pkg/v3 and sdk/v3 at the tag ----------------------
if [ "$need_cli" = 1 ] || [ "$need_language_host" = 1 ]; then
  work="$cache_dir/build/pulumi-$pulumi_version"
  rm -rf "$work"; mkdir -p "$work"; cd "$work"
  go mod init wrapper >/dev/null 2>&1
  modules=("github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v$pulumi_version" "github.com/pulumi/pulumi/sdk/v3@v$pulumi_version")
  language_host_pkg=./pulumi-language-nodejs
  case "$language_host_from" in
    proxy:*) modules+=("github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3@${language_host_from#proxy:}")
             language_host_pkg=github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3 ;;
    src:*) mkdir -p pulumi-language-nodejs
           cp "${language_host_from#src:}"/*.go pulumi-language-nodejs/
           rm -f pulumi-language-nodejs/*_test.go; chmod -R u+w pulumi-language-nodejs ;;
  esac
  go get "${modules[@]}" >/dev/null 2>&1 || go get "${modules[@]}"
  mkdir -p out
  if [ "$need_cli" = 1 ]; then
    timed_build pulumi env CGO_ENABLED=0 go build -trimpath -ldflags "$version_ld" -o out/pulumi \
      github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
    install_file out/pulumi "$bin_dir/pulumi"
  fi
  if [ "$need_language_host" = 1 ]; then
    timed_build pulumi-language-nodejs env CGO_ENABLED=0 go build -trimpath -ldflags "$version_ld" \
      -o out/pulumi-language-nodejs "$language_host_pkg"
    install_file out/pulumi-language-nodejs "$bin_dir/pulumi-language-nodejs"
  fi
  echo "$stamp" > "$out_dir/BUILD"
  cd /; rm -rf "$work"
fi
# The dynamic-provider shim is a shell script of the npm package; the engine looks for it beside `pulumi`.
shim="$root/node_modules/@pulumi/pulumi/pulumi-resource-pulumi-nodejs"
[ -f "$shim" ] || die "no $shim (run npm ci first)"
cmp -s "$shim" "$bin_dir/pulumi-resource-pulumi-nodejs" 2>/dev/null || install_file "$shim" "$bin_dir/pulumi-resource-pulumi-nodejs"

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
  timed_build pulumi-resource-kubernetes env CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X $module/pkg/version.Version=$kubernetes_version" -o out/pulumi-resource-kubernetes ./k
  install_file out/pulumi-resource-kubernetes "$k8s_dir/pulumi-resource-kubernetes"
  echo "$stamp" > "$k8s_dir/BUILD"
  cd /; rm -rf "$work"
fi

# --- pulumi-resource-command: no replaces, only committed embeds -----------------------------------------------
if [ "$need_command" = 1 ]; then
  work="$cache_dir/build/pulumi-command-$command_version"
  rm -rf "$work"; mkdir -p "$work"; cd "$work"
  command_ld="-X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$command_version"
  case "$command_from" in
    proxy:*) go mod init wrapper >/dev/null 2>&1
             pkg=github.com/pulumi/pulumi-command/provider/cmd/pulumi-resource-command
             go get "$pkg@${command_from#proxy:}" >/dev/null 2>&1 || go get "$pkg@${command_from#proxy:}" ;;
    src:*) cp -R "${command_from#src:}"/. .; chmod -R u+w .
           pkg=./cmd/pulumi-resource-command ;;
  esac
  timed_build pulumi-resource-command env CGO_ENABLED=0 go build -trimpath -ldflags "$command_ld" \
    -o "$work/out/pulumi-resource-command" "$pkg"
  install_file "$work/out/pulumi-resource-command" "$cmd_dir/pulumi-resource-command"
  echo "$stamp" > "$cmd_dir/BUILD"
  cd /; rm -rf "$work"
fi
if [ "$need_cli$need_language_host$need_kubernetes$need_command" != 0000 ]; then
  echo "test bed: Pulumi engine built in $(( SECONDS - start )) s"
fi

# --- install the resource plugins into PULUMI_HOME (exact versions: what the npm packages ask for) ---------------
export PULUMI_HOME="$pulumi_home"
install_plugin() { # NAME VERSION DIR
  local installed="$pulumi_home/plugins/resource-$1-v$2/pulumi-resource-$1"
  cmp -s "$3/pulumi-resource-$1" "$installed" 2>/dev/null && return 0
  "$pulumi_bin" plugin install resource "$1" "$2" --file "$3/pulumi-resource-$1" --reinstall >/dev/null
  echo "test bed: installed plugin resource-$1 v$2 into $pulumi_home"
}
install_plugin kubernetes "$kubernetes_version" "$k8s_dir"
install_plugin command "$command_version" "$cmd_dir"
if [ "$kubernetes_version" != "$(npm_version kubernetes)" ]; then
  echo "test bed: warning: plugin kubernetes $kubernetes_version is not what @pulumi/kubernetes $(npm_version kubernetes) asks for"
fi

# bin_dir goes on PATH unless an installed pulumi has its language host and shim beside it (else the engine warns)
engine_path="$bin_dir"
if [ "$pulumi_bin" != "$bin_dir/pulumi" ]; then
  real_dir="$(dirname "$(readlink -f "$pulumi_bin")")"
  engine_path="$(dirname "$pulumi_bin")"
  if [ ! -x "$real_dir/pulumi-language-nodejs" ] || [ ! -x "$real_dir/pulumi-resource-pulumi-nodejs" ]; then
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
[ "$mode" = "--smoke" ] || exit 0

# --- smoke test: the engine runs Node programs of this repo's node_modules, with no download ---------------------
export PATH="$engine_path:$PATH"
smoke="$(mktemp -d)"
trap 'rm -rf "$smoke"' EXIT
export PULUMI_BACKEND_URL="file://$smoke/state" PULUMI_CONFIG_PASSPHRASE=smoke
mkdir -p "$smoke/state" "$smoke/dyn" "$smoke/k8s"
for p in dyn k8s; do
  ln -s "$root/node_modules" "$smoke/$p/node_modules"
  printf 'name: smoke-%s\nruntime: nodejs\n' "$p" > "$smoke/$p/Pulumi.yaml"
  printf '{"name": "smoke-%s", "main": "index.js"}\n' "$p" > "$smoke/$p/package.json"
done
# A dynamic resource (through the pulumi-resource-pulumi-nodejs shim) and a local Command (the command plugin).
cat > "$smoke/dyn/index.js" <<'EOF'
const pulumi = require("@pulumi/pulumi");
const command = require("@pulumi/command");
const provider = {
  async create(inputs) { return { id: "smoke-" + inputs.n, outs: { n: inputs.n, doubled: inputs.n * 2 } }; },
  async delete() {},
};
const r = new pulumi.dynamic.Resource(provider, "r", { n: 21, doubled: undefined });
const c = new command.local.Command("c", { create: "echo made", delete: "true" });
exports.doubled = r.doubled;
exports.stdout = c.stdout;
EOF
# The provider cannot reach a cluster (a preview needs none); the check is that the engine starts the installed plugin.
cat > "$smoke/k8s/index.js" <<EOF
const k8s = require("@pulumi/kubernetes");
const kubeconfig = "apiVersion: v1\nkind: Config\nclusters: []\n";
const provider = new k8s.Provider("p", { kubeconfig }, { version: "$kubernetes_version" });
new k8s.core.v1.Namespace("ns", {}, { provider });
EOF
cd "$smoke/dyn"
pulumi stack init smoke >/dev/null
pulumi up --yes --skip-preview > "$smoke/up.log" 2>&1 || { cat "$smoke/up.log"; die "smoke: pulumi up failed"; }
[ "$(pulumi stack output doubled)" = 42 ] || die "smoke: stack output doubled is not 42"
[ "$(pulumi stack output stdout)" = made ] || die "smoke: the local Command's stdout is not 'made'"
pulumi destroy --yes > "$smoke/destroy.log" 2>&1 || { cat "$smoke/destroy.log"; die "smoke: pulumi destroy failed"; }
echo "test bed: smoke: pulumi up (dynamic resource, local Command) and destroy passed"
cd "$smoke/k8s"
pulumi stack init smoke >/dev/null
pulumi preview --logtostderr -v=6 > "$smoke/preview.log" 2>&1 || {
  grep -v '^{' "$smoke/preview.log"; die "smoke: pulumi preview failed"; }
found="found in cache at $pulumi_home/plugins/resource-kubernetes-v$kubernetes_version/pulumi-resource-kubernetes"
grep -qF "$found" "$smoke/preview.log" || {
  grep -v '^{' "$smoke/preview.log"; die "smoke: the kubernetes plugin was not loaded from $pulumi_home"; }
echo "test bed: smoke: pulumi preview loaded resource-kubernetes v$kubernetes_version from $pulumi_home"
