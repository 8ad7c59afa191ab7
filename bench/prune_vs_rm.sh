#!/usr/bin/env bash
# Prune of N files through `smolsweep prune --yes` (the real CLI: plan from a saved report,
# identity re-check, descriptor-based delete, journal with fsync, statvfs before/after) versus
# `rm -rf` of an identical copy of the same tree. Goal: prune ≤ 1.1 × rm -rf.
#
# Usage: bench/prune_vs_rm.sh [FILES (50000)] [ROUNDS (5)] [SCRATCH_PARENT ($TMPDIR or /tmp)]
# Needs: a release build (`cargo build --release --bin smolsweep`), python3, GNU coreutils.
set -euo pipefail

FILES=${1:-50000}
ROUNDS=${2:-5}
PARENT=${3:-${TMPDIR:-/tmp}}
PER_DIR=500
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SMOLSWEEP_BIN:-$HERE/target/release/smolsweep}
[ -x "$BIN" ] || { echo "build first: cargo build --release --bin smolsweep" >&2; exit 2; }

WORK=$(mktemp -d "$PARENT/smolsweep-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
HOME_DIR=$WORK/home
ROOT=$HOME_DIR/.cache/smolvm
export SMOLSWEEP_DATA_DIR=$WORK/data

make_tree() { # make_tree DIR: FILES files of 1 KiB in FILES/PER_DIR directories
  python3 - "$1" "$FILES" "$PER_DIR" <<'EOF'
import os, sys
d, n, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = b"x" * 1024
for i in range(n):
    sub = os.path.join(d, "d%04d" % (i // per))
    if i % per == 0:
        os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%06d" % i), "wb") as f:
        f.write(data)
EOF
}

write_report() { # write_report TARGET OUT: a smolsweep.scan/1 report with one reclaimable dir
  local target=$1 out=$2
  read -r dev ino mode size mtime < <(stat -c '%d %i %f %s %Y' "$target")
  local mtime_ns
  mtime_ns=$(python3 -c "import os;print(os.lstat('$target').st_mtime_ns)")
  local ftype=$(( 0x$mode & 0170000 ))
  cat > "$out" <<EOF
{"schema":"smolsweep.scan/1","home":"$HOME_DIR","platform":"linux",
 "products":[{"product":"smolvm","detected":true,"status":"ok","roots":{"cache_root":"$ROOT"},"problems":[]}],
 "findings":[{"id":"bench","product":"smolvm","kind":"smolvm.dangling_machine_dir","path":"$target",
   "owner":null,"apparent_bytes":0,"allocated_bytes":0,"verdict":"reclaimable","reason":"bench",
   "identity":{"dev":$dev,"ino":$ino,"file_type":$ftype,"size":$size,"mtime_ns":$mtime_ns},
   "is_dir":true,"root":"$ROOT"}],
 "machines":[],"processes":[],"totals":{"reclaimable_allocated_bytes":0,"opt_in_allocated_bytes":0},
 "scanned_at":$(date +%s),"duration_ms":0}
EOF
}

# timed CMD...: prints "WALL CPU" (seconds; CPU = user + system time of the command).
timed() {
  python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
with open(sys.argv[1], "wb") as out:
    subprocess.run(sys.argv[2:], check=True, stdout=out)
w = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f %.4f" % (w, r.ru_utime + r.ru_stime))
' "$@"
}

declare -a PRUNE RM PRUNE_CPU RM_CPU
for r in $(seq 1 "$ROUNDS"); do
  rm -rf "$WORK/data" "$HOME_DIR"
  mkdir -p "$ROOT/vms"
  make_tree "$ROOT/vms/bench"
  cp -a "$ROOT/vms/bench" "$WORK/copy"
  sleep 1.1 # the scan happens after the last write, as it would for leftovers
  write_report "$ROOT/vms/bench" "$WORK/report.json"
  sync
  # Alternate the order so neither side always runs on a colder cache.
  if (( r % 2 )); then order="prune rm"; else order="rm prune"; fi
  for what in $order; do
    sync; sleep 1 # start each timed delete with no writeback of our own pending
    if [ "$what" = prune ]; then
      read -r w c < <(timed "$WORK/out.json" "$BIN" prune --yes --json --from-report "$WORK/report.json")
      grep -q '"failed":\[\]' "$WORK/out.json" || { cat "$WORK/out.json"; exit 1; }
      [ ! -e "$ROOT/vms/bench" ] || { echo "prune left the tree" >&2; exit 1; }
      PRUNE+=("$w"); PRUNE_CPU+=("$c")
    else
      read -r w c < <(timed /dev/null rm -rf "$WORK/copy")
      RM+=("$w"); RM_CPU+=("$c")
    fi
  done
  printf 'round %d: prune %.3fs (cpu %.3fs)  rm -rf %.3fs (cpu %.3fs)\n' "$r" "${PRUNE[-1]}" "${PRUNE_CPU[-1]}" "${RM[-1]}" "${RM_CPU[-1]}"
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mp=$(median "${PRUNE[@]}")
mr=$(median "${RM[@]}")
printf 'files=%d dirs=%d rounds=%d fs=%s\n' "$FILES" $(( (FILES + PER_DIR - 1) / PER_DIR )) "$ROUNDS" "$(stat -f -c %T "$WORK")"
minp=$(printf '%s\n' "${PRUNE[@]}" | sort -g | head -1)
minr=$(printf '%s\n' "${RM[@]}" | sort -g | head -1)
printf 'median prune %.3fs, median rm -rf %.3fs, ratio %.3f\n' "$mp" "$mr" "$(echo "$mp / $mr" | bc -l)"
mpc=$(median "${PRUNE_CPU[@]}")
mrc=$(median "${RM_CPU[@]}")
printf 'median cpu prune %.3fs, median cpu rm -rf %.3fs, ratio %.3f\n' "$mpc" "$mrc" "$(echo "$mpc / $mrc" | bc -l)"
printf 'best   prune %.3fs, best   rm -rf %.3fs, ratio %.3f\n' "$minp" "$minr" "$(echo "$minp / $minr" | bc -l)"
