#!/usr/bin/env bash
# Journal reads (issues 29 and 38): `history -n 1`, `trend` and the timer's `auto` on a large journal,
# wall time and peak RSS (`/usr/bin/time -v`), on the current build and, for comparison, on a
# build from before bounded reads (REV, default 1eb3f62): each case on the old build, then the new.
#
# The journal: finished runs of 200 orphan-disk deletions each (examples/gen_journal.rs), in a
# scratch data directory (SMOLSWEEP_DATA_DIR) with an empty scratch HOME. Commands measured:
#   history    `smolsweep history -n 1`
#   trend-new  `smolsweep trend` with a space history that has counted every run (what a scan
#              or the timer left; trend.json written from the journal's last run)
#   trend-cold `smolsweep trend` with no space history yet (every run is new to it)
#   trend-newest `smolsweep trend` with a space history that has counted every run but the
#              newest (with --last-mb: the interrupted run whose line is the journal's newest)
#   auto       `smolsweep auto --policy P` (enabled, nothing to do): its scan records a trend
#              point, which adds the journal's new runs; trend.json as for trend-new
#   history-run  `smolsweep history PLAN` (the newest run's plan id): one run's items
#
# Usage: bench/journal.sh [--mb N (300)] [--last-mb N (none)] [--runs N (3)] [--dir PARENT (/tmp)]
#          [--cases "history trend-new trend-cold trend-newest auto history-run" (all)]
#          [--new BIN] [--old BIN | --old-rev REV | --no-old] [--keep]
# Without --new/--old the current checkout and REV (from `git archive`, no worktree) are built
# with `cargo build --release` into $BUILD_DIR (/tmp/journal-bench-target; kept, so a second run
# only recompiles smolsweep). Needs: cargo, git, GNU time at /usr/bin/time, python3.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
MB=300 LAST_MB="" RUNS=3 PARENT=/tmp NEW_BIN="" OLD_BIN="" OLD_REV=1eb3f62 OLD=1 KEEP=0
CASES="history trend-new trend-cold trend-newest auto history-run"
BUILD=${BUILD_DIR:-/tmp/journal-bench-target}

while [ $# -gt 0 ]; do
  case $1 in
    --mb) MB=$2; shift 2 ;;
    --last-mb) LAST_MB=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --dir) PARENT=$2; shift 2 ;;
    --new) NEW_BIN=$2; shift 2 ;;
    --old) OLD_BIN=$2; shift 2 ;;
    --old-rev) OLD_REV=$2; shift 2 ;;
    --no-old) OLD=0; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

WORK=$(mktemp -d "$PARENT/journal-bench.XXXXXX")
cleanup() { [ "$KEEP" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT

# Build: the generator and the new binary from this checkout, the old one from REV.
(cd "$REPO" && CARGO_TARGET_DIR=$BUILD nice -n 10 cargo build -q --release \
  --bin smolsweep --example gen_journal)
GEN=$BUILD/release/examples/gen_journal
if [ -z "$NEW_BIN" ]; then
  NEW_BIN=$WORK/smolsweep-new
  cp "$BUILD/release/smolsweep" "$NEW_BIN"
fi
if [ "$OLD" = 1 ] && [ -z "$OLD_BIN" ]; then
  src=$WORK/old-src
  mkdir -p "$src"
  git -C "$REPO" archive "$OLD_REV" | tar -x -C "$src"
  (cd "$src" && CARGO_TARGET_DIR=$BUILD nice -n 10 cargo build -q --release --bin smolsweep)
  OLD_BIN=$WORK/smolsweep-old
  cp "$BUILD/release/smolsweep" "$OLD_BIN"
  rm -rf "$src"
fi

DATA=$WORK/data
mkdir -p "$DATA" "$WORK/home"
# shellcheck disable=SC2086 # LAST_MB: no argument when empty
runs=$("$GEN" "$DATA/journal.jsonl" "$MB" 200 $LAST_MB)
size=$(stat -c %s "$DATA/journal.jsonl")
last_ms=$((runs * 1000))
newest=$(python3 -c '
import os, sys
f = open(sys.argv[1], "rb"); end = os.path.getsize(sys.argv[1]) - 1; at = end
while at > 0:
    f.seek(max(0, at - (1 << 20))); b = f.read(at - max(0, at - (1 << 20))); i = b.rfind(b"\n")
    if i >= 0: at = max(0, at - (1 << 20)) + i + 1; break
    at = max(0, at - (1 << 20))
print(end - at)' "$DATA/journal.jsonl")
echo "journal: $size bytes, $runs runs of 200 actions${LAST_MB:+ (the last: an interrupted plan of ${LAST_MB} MB)}; newest line $newest bytes; $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
POLICY=$WORK/policy.json
echo '{"schema": "smolsweep.policy/1", "enabled": true}' >"$POLICY"

counted() { # the space history as a scan leaves it: every run of the journal up to $1 ms counted
  printf '{"schema":"smolsweep.trend/1","points":[],"freed":[],"runs_seen_ms":%s}' \
    "${1:-$last_ms}" >"$DATA/trend.json"
}

# One measured command: "<wall s> <peak RSS kB>".
measure() {
  local bin=$1 case=$2 out
  case $case in
    history) set -- "$bin" history -n 1 ;;
    trend-new) counted; set -- "$bin" trend ;;
    trend-cold) rm -f "$DATA/trend.json"; set -- "$bin" trend ;;
    trend-newest) counted $((last_ms - 1000)); set -- "$bin" trend ;;
    auto) counted; set -- "$bin" auto --policy "$POLICY" ;;
    history-run) set -- "$bin" history "$(printf '%064x' "$runs")" ;;
  esac
  out=$(env -i PATH=/usr/bin:/bin HOME="$WORK/home" SMOLSWEEP_DATA_DIR="$DATA" TZ=UTC0 \
    /usr/bin/time -v "$@" 2>&1 >/dev/null) || true
  python3 - "$out" <<'EOF'
import re, sys
t = sys.argv[1]
w = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w.split(":"))))
rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)
print(f"{secs:.3f} {rss}")
EOF
}

# Warm the page cache once, then alternate old/new per case and round.
cat "$DATA/journal.jsonl" >/dev/null
printf '%-11s %-4s %s\n' case bin "wall s / peak RSS MB (per round)"
for case in $CASES; do
  for which in old new; do
    [ "$which" = old ] && [ "$OLD" = 0 ] && continue
    line=""
    for _ in $(seq "$RUNS"); do
      [ "$which" = old ] && bin=$OLD_BIN || bin=$NEW_BIN
      read -r w r < <(measure "$bin" "$case")
      line+=" $w/$((r / 1024))"
    done
    printf '%-11s %-4s%s\n' "$case" "$which" "$line"
  done
done
