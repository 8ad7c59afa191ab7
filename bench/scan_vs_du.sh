#!/usr/bin/env bash
# Time a full-tree measurement against `du -s -B1` on a generated tree (warm cache).
#
# usage: bench/scan_vs_du.sh [--files N] [--runs N] [--dir DIR] [--keep] [-- CMD ARGS...]
#
#   --files N   small files in the tree (default 100000); plus 20 sparse 1 GiB disks, 1000 hard
#               links and two symlinks
#   --runs N    timed runs of each side, alternating (default 7), after one warm-up run each
#   --dir DIR   where to build the tree (default: a fresh mktemp -d under ${TMPDIR:-/tmp});
#               the tree is removed afterwards unless --keep
#   CMD ARGS    the command to time; the tree path is appended, or replaces a `{}` argument.
#               Default: target/release/examples/measure (built if missing).
#
# Prints the median wall time of each side and the ratio cmd/du (goal: <= 1.0).
# When CMD prints `allocated=N`, the figure is checked against du's.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
files=100000
runs=7
dir=""
keep=0
cmd=()
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --) shift; cmd=("$@"); break ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

if [ ${#cmd[@]} -eq 0 ]; then
  exe="$repo/target/release/examples/measure"
  if [ ! -x "$exe" ]; then
    (cd "$repo" && cargo build --release --example measure >&2)
  fi
  cmd=("$exe")
fi

scratch=""
if [ -z "$dir" ]; then
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-bench.XXXXXX")"
  dir="$scratch/tree"
fi
cleanup() {
  if [ "$keep" = 0 ]; then
    if [ -n "$scratch" ]; then rm -rf "$scratch"; else rm -rf "$dir"; fi
  else
    echo "tree kept at $dir" >&2
  fi
}
trap cleanup EXIT

if [ ! -e "$dir" ]; then
  echo "generating $files files in $dir ..." >&2
  python3 "$here/gen_tree.py" "$dir" "$files"
fi

# The command line with the tree path substituted or appended.
full=()
subst=0
for a in "${cmd[@]}"; do
  if [ "$a" = "{}" ]; then full+=("$dir"); subst=1; else full+=("$a"); fi
done
[ "$subst" = 1 ] || full+=("$dir")

time_once() { # prints "wall_ms cpu_ms" of "$@" (its output discarded); cpu = user + sys
  local TIMEFORMAT='%R %U %S' t
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
  awk '{printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000}' <<<"$t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -v c="$1" '{print $c}'; }

load0=$(cut -d" " -f1-3 /proc/loadavg)

# Correctness first: the same allocated figure as du.
du_bytes=$(du -s -B1 "$dir" | cut -f1)
out=$("${full[@]}")
ours=$(printf '%s\n' "$out" | sed -n 's/.*allocated=\([0-9]*\).*/\1/p' | tail -n1)
if [ -n "$ours" ]; then
  if [ "$ours" != "$du_bytes" ]; then
    echo "MISMATCH: du says $du_bytes allocated bytes, command says $ours" >&2
    exit 1
  fi
  echo "allocated bytes agree: $du_bytes"
fi

# Warm-up, then alternate.
time_once du -s -B1 "$dir" >/dev/null
time_once "${full[@]}" >/dev/null
du_t=""
cmd_t=""
for _ in $(seq "$runs"); do
  du_t+="$(time_once du -s -B1 "$dir")"$'\n'
  cmd_t+="$(time_once "${full[@]}")"$'\n'
done
du_wall=$(printf '%s' "$du_t" | col 1 | median)
du_cpu=$(printf '%s' "$du_t" | col 2 | median)
cmd_wall=$(printf '%s' "$cmd_t" | col 1 | median)
cmd_cpu=$(printf '%s' "$cmd_t" | col 2 | median)
entries=$(find "$dir" | wc -l)
echo "tree: $dir ($entries entries)"
echo "cores: $(nproc), load before/after: $load0 / $(cut -d' ' -f1-3 /proc/loadavg)"
echo "du -s -B1 : median wall ${du_wall} ms, cpu ${du_cpu} ms over $runs runs (wall: $(printf '%s' "$du_t" | col 1 | tr '\n' ' '))"
echo "${full[*]} : median wall ${cmd_wall} ms, cpu ${cmd_cpu} ms over $runs runs (wall: $(printf '%s' "$cmd_t" | col 1 | tr '\n' ' '))"
awk -v c="$cmd_wall" -v d="$du_wall" -v cc="$cmd_cpu" -v dc="$du_cpu" \
  'BEGIN {printf "ratio cmd/du: wall %.2f, cpu %.2f\n", c / d, (dc > 0 ? cc / dc : 0)}'
