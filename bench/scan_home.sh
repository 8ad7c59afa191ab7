#!/usr/bin/env bash
# Full `smolsweep scan --json` of the HOME that holds TREE, for scan_vs_du.sh:
#   bench/scan_vs_du.sh --dir "$T/home/.cache/smolvm-pack/0badc0de" -- bench/scan_home.sh
# TREE is a pack-cache entry, so the scan measures the whole tree (and everything else in that
# HOME, which holds nothing else).
set -euo pipefail
tree="$1"
home="${tree%/.cache/smolvm-pack/*}"
exec env -i HOME="$home" PATH=/usr/bin:/bin \
  "$(cd "$(dirname "$0")/.." && pwd)/target/release/smolsweep" scan --json
