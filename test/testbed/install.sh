#!/usr/bin/env bash
# Installs what the real test bed needs: openssl, shellcheck, sshd, iproute2, jq and chromium from Debian; then, for
# each Kubernetes version asked for, kube-apiserver, kube-controller-manager, kubeadm and kubectl and the etcd that
# kubeadm pairs with it, built from the Go module proxy and cached per version (test/testbed/build/*.sh).
# Versions: the arguments (minors or exact versions from test/testbed/versions.json), else the newest, which the
# sandbox and the first suite of `npm test` use (test/integrationOnVersions.sh builds the legacy one itself, in the
# background while the newest suite runs). Safe to run again: every step is skipped when done.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
versions_file="$here/versions.json"

# Headless Chromium for test/integration/reportBrowser.test.ts (the report as a reader sees it).
bash "$here/aptEnsure.sh" openssl shellcheck openssh-server iproute2 jq chromium
command -v go >/dev/null || { echo "test bed: Go is not on PATH; the Kubernetes and etcd binaries are built from the Go module proxy" >&2; exit 1; }

assets_complete() {
  [ -n "${KUBEBUILDER_ASSETS:-}" ] || return 1
  local b
  for b in kube-apiserver kube-controller-manager kubeadm kubectl; do [ -x "$KUBEBUILDER_ASSETS/$b" ] || return 1; done
}

if [ "$#" -gt 0 ]; then requested=("$@"); else mapfile -t requested < <(jq -r '.newest' "$versions_file"); fi
for wanted in "${requested[@]}"; do
  wanted="${wanted#v}"
  minor=$(echo "$wanted" | cut -d. -f1,2)
  kube=$(jq -r --arg m "$minor" '.versions[$m].kube // empty' "$versions_file")
  etcd=$(jq -r --arg m "$minor" '.versions[$m].etcd // empty' "$versions_file")
  if [ -z "$kube" ] || { [ "$wanted" != "$minor" ] && [ "$wanted" != "$kube" ]; }; then
    echo "test bed: no Kubernetes $wanted in $versions_file; known: $(jq -r '[.versions[].kube] | join(", ")' "$versions_file")" >&2
    exit 2
  fi
  # KUBEBUILDER_ASSETS with every binary skips the kube build (envtest assets often lack KCM and kubeadm)
  if assets_complete; then
    echo "test bed: kube binaries from KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  else
    bash "$here/build/kube.sh" "$kube"
  fi
  bash "$here/build/etcd.sh" "$etcd"
done
