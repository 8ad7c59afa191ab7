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
setup() {
  local s=scripts/setup/$1.sh _s=$SECONDS
  # shellcheck source=/dev/null
  source "$s"
  echo "phase setup/$1: $((SECONDS - _s)) s (total $((SECONDS - _t0)) s)"
}
# What the build needs (the toolchain, WebKitGTK's headers) first. What only the tests need (the
# real celesto and smolvm CLIs, the QEMU guest and its accelerator probe, qemu-img, promtool:
# downloads and unpacking, mostly waiting) is installed while the build runs, in a subshell
# that owns apt meanwhile; after the build each file is sourced again, which then finds
# everything in place and only exports.
for s in 00-rust 50-desktop; do setup "$s"; done
test_only=()
for s in scripts/setup/*.sh; do
  s=$(basename "$s" .sh)
  [ "$s" = 00-rust ] || [ "$s" = 50-desktop ] || test_only+=("$s")
done
mkdir -p target
( for s in "${test_only[@]}"; do setup "$s"; done ) >target/setup-tests.log 2>&1 &
setup_pid=$!
phase fmt cargo fmt --all --check
# Clippy lints the workspace's own crates while they are compiled for the tests, in the same
# build: `cargo clippy` is `cargo check` with clippy-driver as the workspace's compiler wrapper,
# so the wrapper on a test build gives the same lints (`-D warnings`, every target `cargo test`
# builds: lib, bins, examples, tests) without type-checking every dependency a second time.
# Exported for the whole run, so the desktop phase's builds find everything up to date.
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
[ -x "$RUSTC_WORKSPACE_WRAPPER" ] || { echo "test.sh: no clippy-driver (rustup component add clippy)" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# A cold build: incremental compilation only adds work.
export CARGO_INCREMENTAL=0
phase build+clippy cargo test --workspace --no-run
wait "$setup_pid" || { cat target/setup-tests.log >&2; echo "test.sh: setup for the tests failed" >&2; exit 1; }
grep '^phase' target/setup-tests.log | sed 's/^phase /phase (beside the build) /'
for s in "${test_only[@]}"; do setup "$s"; done
phase test cargo test --workspace
phase desktop scripts/desktop-tests.sh
