#!/usr/bin/env bash
# Install whatever is missing on a fresh Debian/Ubuntu machine, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
export SMOLSWEEP_REPO="$PWD"
# Each setup file installs one group of prerequisites idempotently and exports what tests need.
for s in scripts/setup/*.sh; do
  # shellcheck source=/dev/null
  source "$s"
done
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
scripts/desktop-tests.sh
