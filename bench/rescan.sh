#!/usr/bin/env bash
# Issue 11: the app's incremental rescan (scan::memo) against a full scan of the same HOME, in
# one process (examples/measure_rescan.rs), on the 105k-file `_shared` HOME of gen_shared_home.py.
#
# usage: bench/rescan.sh [--files N] [--runs N] [--dir DIR] [--keep] [--farm PROCSxFDS] [--bin PATH]
#
# --farm 300x64: with a desktop-sized process table running beside it (bench/proc_farm.py:
#   PROCS processes each holding FDS open files; killed and removed afterwards).
# --bin PATH: measure this build of examples/measure_rescan instead of building one.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
files=105000
runs=9
dir=""
keep=0
farm=""
bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --farm) farm="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ]; then
  (cd "$repo" && cargo build --release --example measure_rescan >&2)
  bin="$repo/target/release/examples/measure_rescan"
fi
scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-rescan.XXXXXX")"
[ -n "$dir" ] || dir="$scratch/home"
farm_pid=""
launcher_pid=""
cleanup() {
  if [ -n "$farm_pid" ]; then
    kill "$farm_pid" 2>/dev/null || true
    while kill -0 "$farm_pid" 2>/dev/null; do sleep 0.2; done
    wait "$launcher_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch/farm" "$scratch/farm.out"
  if [ "$keep" = 0 ]; then
    rm -rf "$dir"
  fi
  rmdir "$scratch" 2>/dev/null || true
}
trap cleanup EXIT
[ -e "$dir" ] || python3 "$here/gen_shared_home.py" "$dir" "$files" >/dev/null
if [ -n "$farm" ]; then
  python3 "$here/proc_farm.py" "${farm%x*}" "${farm#*x}" "$scratch/farm" >"$scratch/farm.out" &
  launcher_pid=$!
  farm_pid=$launcher_pid
  until grep -q '^ready' "$scratch/farm.out" 2>/dev/null; do
    kill -0 "$launcher_pid" 2>/dev/null || { echo "the process farm did not start" >&2; exit 1; }
    sleep 0.2
  done
  farm_pid="$(awk '/^ready/ {print $2}' "$scratch/farm.out")"   # the farm itself
  echo "farm: $farm ($(ls /proc | grep -c '^[0-9]') processes)"
fi
echo "cores: $(nproc), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" "$dir" "$runs" 2>/dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
