#!/usr/bin/env bash
# Issue 20: the app's incremental rescan (scan::memo) against a full scan of the same HOME, in
# one process (examples/measure_rescan.rs), on a HOME of smolvm stores laid out like extracted
# image layers where every tenth file (--every N) has a second name outside the HOME
# (gen_hardlink_home.py): those files are stat'ed again on every rescan.
#
# usage: bench/hardlinks.sh [--files N] [--every N] [--runs N] [--dir DIR] [--keep]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
files=50000
every=10
runs=9
dir=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --every) every="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
(cd "$repo" && cargo build --release --example measure_rescan >&2)
scratch=""
if [ -z "$dir" ]; then
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-hardlinks.XXXXXX")"
  dir="$scratch"
fi
cleanup() {
  if [ "$keep" = 0 ]; then
    if [ -n "$scratch" ]; then rm -rf "$scratch"; else rm -rf "$dir/home" "$dir/outside"; fi
  fi
}
trap cleanup EXIT
# The second names live beside the HOME, on the same file system, where no scan walks.
if [ ! -e "$dir/home" ]; then
  echo "files, of them given a second name: $(python3 "$here/gen_hardlink_home.py" "$dir/home" "$dir/outside" "$files" --every "$every")"
fi
echo "second names outside the HOME: $(find "$dir/outside" -type f | wc -l)"
echo "cores: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# First with an empty process table given to both scans (the walk's figure), then with this
# machine's table read by both (what the app pays here; issue 20's first bullet is that part).
echo "walk (no process table):"
"$repo/target/release/examples/measure_rescan" "$dir/home" "$runs" --no-procs 2>/dev/null
echo "with this machine's process table ($(ls /proc | grep -c '^[0-9]') processes):"
"$repo/target/release/examples/measure_rescan" "$dir/home" "$runs" 2>/dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
