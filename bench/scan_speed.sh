#!/usr/bin/env bash
# Issue 11: full `smolsweep scan --json` of a HOME laid out like a busy smol-machines node
# (`~/.cache/smolvm/vms/_shared/<sha256>/` pack stores plus pack-cache entries, see
# gen_shared_home.py) against `du -s -B1` of the same `~/.cache`, warm cache.
#
# usage: bench/scan_speed.sh [--files N] [--runs N] [--entries N] [--dir DIR] [--keep] [--measure]
#
#   --files N    files in the HOME (default 105000)
#   --entries N  `_shared` pack stores (default 80)
#   --runs N     timed runs of each side, alternating, after one warm-up each (default 7)
#   --measure    time `examples/measure ~/.cache` (the walk alone) instead of the whole scan
#   --dir DIR    where to build the HOME (default: a fresh mktemp -d, removed afterwards unless
#                --keep); an existing DIR is reused as is
#
# Prints medians of wall time, CPU (user + sys) and peak RSS of each side, and the ratios
# scan/du (issue goal: wall <= 0.7, cpu <= 1.1, peak RSS <= 64 MB at 1M files).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
files=105000
entries=80
runs=7
dir=""
keep=0
walk_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --entries) entries="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --measure) walk_only=1; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

scan="$repo/target/release/smolsweep"
measure="$repo/target/release/examples/measure"
if [ ! -x "$scan" ] || [ ! -x "$measure" ]; then
  (cd "$repo" && cargo build --release --bin smolsweep --example measure >&2)
fi

scratch=""
if [ -z "$dir" ]; then
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-speed.XXXXXX")"
  dir="$scratch/home"
fi
cleanup() {
  if [ "$keep" = 0 ]; then
    if [ -n "$scratch" ]; then rm -rf "$scratch"; else rm -rf "$dir"; fi
  else
    echo "HOME kept at $dir" >&2
  fi
}
trap cleanup EXIT
if [ ! -e "$dir" ]; then
  echo "generating $files files ($entries _shared stores) in $dir ..." >&2
  python3 "$here/gen_shared_home.py" "$dir" "$files" --entries "$entries" >/dev/null
fi
cache="$dir/.cache"

if [ "$walk_only" = 1 ]; then
  cmd=("$measure" "$cache")
else
  cmd=(env -i HOME="$dir" PATH=/usr/bin:/bin "$scan" scan --json)
fi

# Correctness first: the walk's allocated bytes equal du's, and the scan found every store.
du_bytes=$(du -s -B1 "$cache" | cut -f1)
ours=$("$measure" "$cache" | sed -n 's/.*allocated=\([0-9]*\).*/\1/p' | tail -n1)
if [ "$ours" != "$du_bytes" ]; then
  echo "MISMATCH: du says $du_bytes allocated bytes, measure says $ours" >&2
  exit 1
fi
stores=$(env -i HOME="$dir" PATH=/usr/bin:/bin "$scan" scan --json |
  python3 -c 'import json,sys; print(sum(1 for f in json.load(sys.stdin)["findings"] if "shared_pack" in str(f["kind"])))')
echo "allocated bytes agree: $du_bytes; the scan reports $stores _shared stores"

time_once() { # "wall_ms cpu_ms maxrss_kb" of "$@", output discarded
  local tf
  tf=$(mktemp)
  local TIMEFORMAT='%3R %3U %3S' t
  t=$( { time /usr/bin/time -o "$tf" -f '%M' "$@" >/dev/null 2>&1; } 2>&1)
  awk -v rss="$(tail -n1 "$tf")" '{printf "%d %d %d\n", $1 * 1000, ($2 + $3) * 1000, rss}' <<<"$t"
  rm -f "$tf"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -v c="$1" '{print $c}'; }

load0=$(cut -d" " -f1-3 /proc/loadavg)
time_once du -s -B1 "$cache" >/dev/null
time_once "${cmd[@]}" >/dev/null
du_t=""
cmd_t=""
for _ in $(seq "$runs"); do
  du_t+="$(time_once du -s -B1 "$cache")"$'\n'
  cmd_t+="$(time_once "${cmd[@]}")"$'\n'
done
for side in du cmd; do
  v="${side}_t"
  printf -v "${side}_wall" '%s' "$(printf '%s' "${!v}" | col 1 | median)"
  printf -v "${side}_cpu" '%s' "$(printf '%s' "${!v}" | col 2 | median)"
  printf -v "${side}_rss" '%s' "$(printf '%s' "${!v}" | col 3 | median)"
done
entries_n=$(find "$cache" | wc -l)
echo "HOME: $dir ($entries_n entries under ~/.cache)"
echo "cores: $(nproc), load before/after: $load0 / $(cut -d' ' -f1-3 /proc/loadavg)"
echo "du -s -B1 : median wall ${du_wall} ms, cpu ${du_cpu} ms, peak RSS ${du_rss} KB over $runs runs (wall: $(printf '%s' "$du_t" | col 1 | tr '\n' ' '))"
echo "${cmd[*]##*/} : median wall ${cmd_wall} ms, cpu ${cmd_cpu} ms, peak RSS ${cmd_rss} KB (wall: $(printf '%s' "$cmd_t" | col 1 | tr '\n' ' '))"
awk -v c="$cmd_wall" -v d="$du_wall" -v cc="$cmd_cpu" -v dc="$du_cpu" \
  'BEGIN {printf "ratio cmd/du: wall %.2f, cpu %.2f\n", c / d, (dc > 0 ? cc / dc : 0)}'
