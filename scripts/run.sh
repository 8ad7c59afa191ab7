#!/usr/bin/env bash
# Install whatever is missing on a fresh Debian/Ubuntu machine, build Smolsweep, and scan.
# Arguments are passed to `smolsweep scan` (for example --json).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=/dev/null
source scripts/setup/00-rust.sh
cargo build --release --quiet --bin smolsweep
exec ./target/release/smolsweep scan "$@"
