#!/usr/bin/env bash
# Runs the whole integration suite, then the end-to-end suite under the real Pulumi engine (test/e2e), once per
# test-bed Kubernetes version, and prints a version × suite table.
# Arguments: minors or exact versions, or the words newest, legacy, matrix (from test/testbed/versions.json).
# Exit status: non-zero when any version failed.
# Binaries: the first version's are built first when missing (setup builds the newest). The Pulumi engine, then the
# other versions' binaries, are built in the background while the suites run, niced: the suites leave a third to a
# half of two cores idle, and a cold engine build is about 20 min of them, a version about 15, time a cold CI run
# cannot spare. Each version's suite waits for its build, and its e2e suite for the engine.
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
. test/testbed/killTree.sh
# shellcheck disable=SC2317
stop_builds() { local job; for job in $(jobs -p); do kill_tree "$job"; done; rm -rf "$builds"; }
trap stop_builds EXIT
bash test/testbed/install.sh "${resolved[0]}" 2>&1 | tee "$builds/build.log"
echo "${PIPESTATUS[0]}" > "$builds/${resolved[0]}.rc"
(
  nice -n 19 ionice -c3 bash test/testbed/build/pulumi.sh >>"$builds/build.log" 2>&1
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
# wait_for_engine: 0 once the Pulumi engine is built (test/e2e runs it). pulumi.sh takes the build lock, so this
# waits for a build in progress (npm test starts one in the background) and builds it when none ran.
wait_for_engine() {
  local t0=$SECONDS
  bash test/testbed/build/pulumi.sh --env >/dev/null 2>"$builds/engine.log" || { echo "=== the Pulumi engine could not be built:"; tail -n 40 "$builds/engine.log"; return 1; }
  [ $(( SECONDS - t0 )) -lt 10 ] || echo "=== waited $(( SECONDS - t0 )) s for the Pulumi engine build"
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
  # integration first, then e2e: only e2e needs the engine, which may still be building
  version_failed=0
  counts=(0 0 0)
  for suite in integration e2e; do
    if [ "$suite" = e2e ] && ! wait_for_engine; then version_failed=1; continue; fi
    log=$(mktemp)
    echo "=== $suite suite on Kubernetes $version"
    CIDR_MIGRATION_KUBE_VERSION="$version" npx mocha --config .mocharc.integration.json "test/$suite/**/*.test.ts" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    totals=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$totals" ]; then
      version_failed=1
    else
      read -r p f k < <(sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?.*/\1 \2 \4/' <<<"$totals")
      counts=($(( counts[0] + p )) $(( counts[1] + f )) $(( counts[2] + ${k:-0} )))
    fi
    if [ "$status" -ne 0 ]; then
      version_failed=1
      failure_lists+=("=== $suite failures on Kubernetes $version"$'\n'"$(sed -n '/^  [0-9]* failing$/,$p' "$log" | head -n 200)")
    fi
    rm -f "$log"
  done
  [ "$version_failed" -eq 0 ] || failed=1
  tests="${counts[0]} passed, ${counts[1]} failed$([ "${counts[2]}" -gt 0 ] && echo ", ${counts[2]} skipped")"
  rows+=("$(printf '| %s | %s | %s | %s s |' "$version" "$([ "$version_failed" -eq 0 ] && echo pass || echo FAIL)" "$tests" "$(( $(date +%s) - start ))")")
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
