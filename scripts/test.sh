#!/usr/bin/env bash
# Install whatever is missing on a fresh Debian/Ubuntu machine, then run every test.
# Each phase prints its wall time ("phase NAME: N s"); the README's Testing section quotes them.
set -euo pipefail
cd "$(dirname "$0")/.."
export SMOLSWEEP_REPO="$PWD"
_t0=$SECONDS
phase() {
  # Run one phase and say how long it took.
  local name=$1 start=$SECONDS; shift
  "$@"
  echo "phase $name: $((SECONDS - start)) s (total $((SECONDS - _t0)) s)"
}
# Each setup file installs one group of prerequisites idempotently and exports what tests need.
# Sourced (not run in a subshell) because they export what the tests need.
for s in scripts/setup/*.sh; do
  _s=$SECONDS
  # shellcheck source=/dev/null
  source "$s"
  echo "phase setup/$(basename "$s" .sh): $((SECONDS - _s)) s (total $((SECONDS - _t0)) s)"
done
phase fmt cargo fmt --all --check
phase clippy cargo clippy --workspace --all-targets -- -D warnings
phase test cargo test --workspace
phase desktop scripts/desktop-tests.sh
