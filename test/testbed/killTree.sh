# Sourced: kill_tree PID kills a process and everything under it (a background build and its go processes).
# shellcheck shell=bash
# shellcheck disable=SC2317 # called from EXIT traps
kill_tree() { local child; for child in $(pgrep -P "$1"); do kill_tree "$child"; done; kill "$1" 2>/dev/null; }
