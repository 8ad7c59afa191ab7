#!/usr/bin/env bash
# Issue 37: what the reference graph costs. The full scan and the app's rescan with nothing
# changed, before (REV, default the commit before the graph) and after (this checkout), on:
#   A  the 105k-file `_shared` HOME (gen_shared_home.py) plus 40 smolvm machines whose disks
#      back onto copy-on-write bases, half leasing shared extractions, clones on frozen layers,
#      pause records (examples/gen_graph_home.rs): what the graph reads on a busy desktop;
#   B  200 Celesto sandboxes with 2,000 files (gen_celesto_state.py, the real celesto package).
#
# usage: bench/graph_cost.sh [--base REV] [--runs N] [--keep]
#   (needs scripts/setup/20-real-tools.sh and qemu-img; builds both sides in release mode,
#   REV in a worktree under $TMPDIR with its own target directory)
# Method: warm cache; `runstat.py pair` alternates the two binaries' `scan --json` (one warm-up
# each, then N pairs; medians of wall and CPU time). The rescan is examples/measure_rescan of
# each side (`--no-procs`: the walk and the graph alone, the same machine's process table left
# out of both), run alternately, its `rescan_ms` medians compared.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
base=4c4daf7
runs=7
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
export SMOLSWEEP_REPO="$repo"
# shellcheck source=/dev/null
source "$repo/scripts/setup/20-real-tools.sh" >/dev/null

T="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-graph.XXXXXX")"
if [ "$keep" = 1 ]; then trap 'echo "kept $T" >&2' EXIT; else trap 'rm -rf "$T"' EXIT; fi

B="${TMPDIR:-/tmp}/smolsweep-graph-base-$base"
echo "building both sides (release; REV kept built in $B for the next run)" >&2
[ -d "$B/src" ] || git -C "$repo" worktree add -q --detach "$B/src" "$base"
(cd "$B/src" && CARGO_TARGET_DIR="$B/target" cargo build -q --release --bin smolsweep --example measure_rescan)
(cd "$repo" && cargo build -q --release --bin smolsweep --example measure_rescan --example gen_graph_home)
old="$B/target/release/smolsweep"
new="$repo/target/release/smolsweep"
old_rescan="$B/target/release/examples/measure_rescan"
new_rescan="$repo/target/release/examples/measure_rescan"

# A: the shared HOME and the machines.
mkdir -p "$T/a/home"
python3 "$here/gen_shared_home.py" "$T/a/home" 105000 >/dev/null
"$repo/target/release/examples/gen_graph_home" "$T/a/home" 40
# B: 200 Celesto sandboxes made by the real package.
venv_bin="$(dirname "$SMOLSWEEP_CELESTO_BIN")"
home_b="$T/b/home"
data="$home_b/.local/state/celesto"
images="$home_b/.celesto/images"
mkdir -m 700 -p "$home_b/.local/state" "$data" "$images"
env -i PATH="$venv_bin:/usr/bin:/bin" CELESTO_NO_TELEMETRY=1 DO_NOT_TRACK=1 \
  CELESTO_DISABLE_VERSION_CHECK=1 CELESTO_NO_KVM_REEXEC=1 CELESTO_IMAGE_DIR="$images" \
  HOME="$home_b" CELESTO_DATA_DIR="$data" "$venv_bin/python" "$here/gen_celesto_state.py" "$T/b" >/dev/null

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for side in a b; do
  h="$T/$side/home"
  echo "== HOME $side: full scan, before vs after"
  python3 "$here/runstat.py" pair --runs "$runs" \
    --a "env -i HOME=$h PATH=/usr/bin:/bin $old scan --json" \
    --b "env -i HOME=$h PATH=/usr/bin:/bin $new scan --json" \
    --a-name before --b-name after
  echo "== HOME $side: rescan with nothing changed (measure_rescan --no-procs), before vs after"
  for i in 1 2 3; do
    for which in before after; do
      bin=$old_rescan; [ "$which" = after ] && bin=$new_rescan
      env -i HOME="$h" PATH=/usr/bin:/bin "$bin" "$h" 3 --no-procs 2>/dev/null \
        | tr ' ' '\n' | grep -E '^(findings|full_ms|rescan_nothing_again_ms|full_cpu_ms|rescan_nothing_after_full_cpu_ms)=' \
        | tr '\n' ' ' | sed "s/^/$which: /"
      echo
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
