#!/usr/bin/env bash
# Runs the whole integration suite, then the end-to-end suite under the real Pulumi engine (test/e2e), once per
# test-bed Kubernetes version, and prints a version × suite table.
# Arguments: minors or exact versions, or the words newest, legacy, matrix (from test/testbed/versions.json).
# Exit status: non-zero when any version failed.
# Binaries: the first version's are built first when missing (setup builds the newest). The others' are built in the
# background while the earlier suites run, niced: the suites leave about half of two cores idle, and a cold build of
# one version is about 19 min of them, time a cold CI run cannot spare. Each version's suite waits for its build.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
versions_file=test/testbed/versions.json
resolved=()
for arg in "$@"; do
  case "$arg" in
    newest|legacy) resolved+=("$(jq -r ".$arg" "$versions_file")") ;;
    matrix) mapfile -t -O "${#resolved[@]}" resolved < <(jq -r '.matrix[]' "$versions_file") ;;
    *) resolved+=("$arg") ;;
  esac
done
[ "${#resolved[@]}" -gt 0 ] || { echo "usage: $0 newest|legacy|matrix|VERSION..." >&2; exit 2; }
builds=$(mktemp -d)
# On exit (Ctrl-C included) a background build goes too, with the go processes under it.
# shellcheck disable=SC2317 # called by the EXIT trap
kill_tree() { local child; for child in $(pgrep -P "$1"); do kill_tree "$child"; done; kill "$1" 2>/dev/null; }
# shellcheck disable=SC2317
stop_builds() { local job; for job in $(jobs -p); do kill_tree "$job"; done; rm -rf "$builds"; }
trap stop_builds EXIT
bash test/testbed/install.sh "${resolved[0]}" 2>&1 | tee "$builds/build.log"
echo "${PIPESTATUS[0]}" > "$builds/${resolved[0]}.rc"
(
  for version in "${resolved[@]:1}"; do
    [ -f "$builds/$version.rc" ] && continue
    nice -n 19 ionice -c3 bash test/testbed/install.sh "$version" >>"$builds/build.log" 2>&1
    echo $? > "$builds/$version.rc"
  done
) &
# wait_for_build VERSION: 0 once its binaries are built; else the build's output is shown
wait_for_build() {
  local t0=$SECONDS
  until [ -f "$builds/$1.rc" ]; do sleep 5; done
  [ $(( SECONDS - t0 )) -lt 10 ] || echo "=== waited $(( SECONDS - t0 )) s for the Kubernetes $1 build"
  [ "$(cat "$builds/$1.rc")" = 0 ] && return 0
  echo "=== the test bed for Kubernetes $1 could not be built:"; tail -n 40 "$builds/build.log"
  return 1
}
rows=()
failed=0
# Each failing version's mocha failure list, printed again after the table: CI shows only the end of the output.
failure_lists=()
for version in "${resolved[@]}"; do
  start=$(date +%s)
  if ! wait_for_build "$version"; then
    failed=1
    rows+=("$(printf '| %s | FAIL | the test bed build failed | %s s |' "$version" "$(( $(date +%s) - start ))")")
    continue
  fi
  log=$(mktemp)
  echo "=== integration suite on Kubernetes $version"
  CIDR_MIGRATION_KUBE_VERSION="$version" npx mocha --config .mocharc.integration.json 'test/integration/**/*.test.ts' 'test/e2e/**/*.test.ts' 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  totals=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ "$status" -ne 0 ]; then
    failed=1
    failure_lists+=("=== failures on Kubernetes $version"$'\n'"$(sed -n '/^  [0-9]* failing$/,$p' "$log" | head -n 200)")
  fi
  rows+=("$(printf '| %s | %s | %s | %s s |' "$version" "$([ "$status" -eq 0 ] && echo pass || echo FAIL)" "${totals:-no totals (exit $status)}" "$(( $(date +%s) - start ))")")
  rm -f "$log"
done
echo
echo "| Kubernetes | integration + e2e suites | tests | time |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
for list in "${failure_lists[@]}"; do
  echo
  echo "$list"
done
exit "$failed"
