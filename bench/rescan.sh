#!/usr/bin/env bash
# Issue 11: the app's incremental rescan (scan::memo) against a full scan of the same HOME, in
# one process (examples/measure_rescan.rs), on the 105k-file `_shared` HOME of gen_shared_home.py.
#
# usage: bench/rescan.sh [--files N] [--runs N] [--dir DIR] [--keep]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
files=105000
runs=9
dir=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
(cd "$repo" && cargo build --release --example measure_rescan >&2)
scratch=""
if [ -z "$dir" ]; then
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-rescan.XXXXXX")"
  dir="$scratch/home"
fi
cleanup() {
  if [ "$keep" = 0 ]; then
    if [ -n "$scratch" ]; then rm -rf "$scratch"; else rm -rf "$dir"; fi
  fi
}
trap cleanup EXIT
[ -e "$dir" ] || python3 "$here/gen_shared_home.py" "$dir" "$files" >/dev/null
echo "cores: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$repo/target/release/examples/measure_rescan" "$dir" "$runs" 2>/dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
