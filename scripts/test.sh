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
# The Apple toolchain (70-apple) too: the Apple phase starts beside the build.
before_build=(00-rust 50-desktop 70-apple)
for s in "${before_build[@]}"; do setup "$s"; done
test_only=()
for s in scripts/setup/*.sh; do
  s=$(basename "$s" .sh)
  [[ " ${before_build[*]} " == *" $s "* ]] || test_only+=("$s")
done
mkdir -p target
( for s in "${test_only[@]}"; do setup "$s"; done ) >target/setup-tests.log 2>&1 &
setup_pid=$!
phase fmt cargo fmt --all --check
# The macOS build (scripts/apple-check.sh: the CLI linked as Mach-O for both Apple targets, every
# crate and target type-checked and linted for both) runs in the background from here to the
# end, niced, in its own target dir: it takes the CPU the Linux build and the tests leave idle
# (downloads, waits on VMs and windows). Its failure fails the run like a failing test. A
# session of its own, so a run that stops early ends it too.
# `setsid` also starts a new scheduler autogroup where the kernel has them (Debian's does):
# nice then only ranks processes inside that group, and the group as a whole got the same CPU
# share as the whole Linux build and test session, which ran the tests 2.6 times slower
# beside it. The group's own nice value (`/proc/self/autogroup`) puts it behind them.
setsid bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null || true
  nice -n 19 scripts/apple-check.sh && echo "phase apple: $SECONDS s"' \
  >target/apple-check.log 2>&1 &
apple_pid=$!
trap 'kill -- -"$apple_pid" 2>/dev/null || true' EXIT
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
_w=$SECONDS
wait "$apple_pid" || { tail -n 60 target/apple-check.log >&2; echo "test.sh: the Apple checks failed (target/apple-check.log)" >&2; exit 1; }
grep '^apple:\|^phase apple' target/apple-check.log
echo "phase apple (waited for at the end): $((SECONDS - _w)) s (total $((SECONDS - _t0)) s)"
