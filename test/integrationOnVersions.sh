#!/usr/bin/env bash
# Runs the whole integration suite, then the end-to-end suite under the real Pulumi engine (test/e2e), once per
# test-bed Kubernetes version, and prints a version × suite table.
# Arguments: minors or exact versions, or the words newest, legacy, matrix (from test/testbed/versions.json).
# Exit status: non-zero when any version failed. The binaries must be built (test/testbed/install.sh VERSION...).
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
rows=()
failed=0
# Each failing version's mocha failure list, printed again after the table: CI shows only the end of the output.
failure_lists=()
for version in "${resolved[@]}"; do
  log=$(mktemp)
  start=$(date +%s)
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
