#!/usr/bin/env bash
# Issue 11: the app's incremental rescan (scan::memo) against a full scan of the same HOME, in
# one process (examples/measure_rescan.rs), on the 105k-file `_shared` HOME of gen_shared_home.py.
#
# usage: bench/rescan.sh [--files N] [--runs N] [--dir DIR] [--keep] [--farm PROCSxFDS] [--bin PATH]
#                        [--layout shared|scale] [--cli PATH]
#
# --farm 300x64: with a desktop-sized process table running beside it (bench/proc_farm.py:
#   PROCS processes each holding FDS open files; killed and removed afterwards).
# --bin PATH: measure this build of examples/measure_rescan instead of building one.
# --layout scale: the HOME of bench/tray_launch.sh instead (the fixture crate's layouts of both
#   products, inventories included, plus gen_scale_home.py's FILES files, dated 30 days back:
#   machine directories with their vm.lock, sandbox disks, caches), needing
#   target/release/smolsweep-fixture.
# --cli PATH: the peer is the CLI: RUNS rounds alternating one measure_rescan (runs 1: a full
#   scan, then the rescans) and one `PATH scan --json` of the same HOME as a whole process
#   (bench/runstat.py once, `env -i HOME PATH`); prints the medians and the ratios of the
#   rescans (wall and CPU) to the CLI's scan.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
files=105000
runs=9
dir=""
keep=0
farm=""
bin=""
layout=shared
cli=""
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --farm) farm="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --layout) layout="$2"; shift 2 ;;
    --cli) cli="$(realpath "$2")"; shift 2 ;;
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
if [ ! -e "$dir" ] && [ "$layout" = scale ]; then
  mkdir -p "$dir.fx"
  "$repo/target/release/smolsweep-fixture" both "$dir.fx" >/dev/null
  mv "$dir.fx/home" "$dir" && rm -rf "$dir.fx"
  touch "$scratch/marker"
  rootfs=$(ls -d "$repo"/.tools/smolmachines-*/agent-rootfs 2>/dev/null | head -1 || true)
  python3 "$here/gen_scale_home.py" "$dir" "$files" ${rootfs:+--agent-rootfs "$rootfs"} >/dev/null
  find "$dir" -newer "$scratch/marker" -exec touch -h -d "@$(( $(date +%s) - 30 * 86400 ))" {} +
fi
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
# measure_rescan's own messages go to a log, shown when it fails: a failing run stops the bench
# saying why instead of silently.
measure() {
  "$bin" "$@" 2>>"$scratch/measure.err" || {
    echo "bench/rescan.sh: $bin $* failed:" >&2
    tail -n 20 "$scratch/measure.err" >&2
    exit 1
  }
}
if [ -z "$cli" ]; then
  measure "$dir" "$runs"
else
  echo "HOME: $(find "$dir" | wc -l) entries; peer: $cli scan --json"
  for i in $(seq "$runs"); do
    measure "$dir" 1 >>"$scratch/rescan.out"
    python3 "$here/runstat.py" once -- env -i HOME="$dir" PATH=/usr/bin:/bin "$cli" scan --json \
      >>"$scratch/cli.out"
  done
  python3 - "$scratch/rescan.out" "$scratch/cli.out" <<'PY'
import json, sys
rows = [dict(kv.split("=", 1) for kv in l.split()) for l in open(sys.argv[1]) if "=" in l]
cli = [json.loads(l) for l in open(sys.argv[2])]
med = lambda v: sorted(v)[len(v) // 2]
f = lambda k: med([float(r[k]) for r in rows])
cw, cc = med([c["wall_ms"] for c in cli]), med([c["cpu_ms"] for c in cli])
print(f"CLI scan --json: wall {cw:.1f} ms, CPU {cc:.1f} ms (median of {len(cli)})")
print(f"in-process full scan: wall {f('full_ms'):.1f} ms, CPU {f('full_cpu_ms'):.1f} ms")
for k, c in [("rescan_nothing_after_full_ms", "rescan_nothing_after_full_cpu_ms"),
             ("rescan_nothing_again_ms", None), ("rescan_one_orphan_ms", None),
             ("rescan_after_writers_ms", None)]:
    line = f"{k}: {f(k):.1f} ms = {f(k) / cw:.3f}x the CLI's wall"
    if c:
        line += f"; CPU {f(c):.1f} ms = {f(c) / cc:.3f}x the CLI's CPU"
    print(line)
print("processes kept/read per rescan:", f("processes_kept_per_rescan"), f("processes_read_per_rescan"),
      "| files restated:", f("files_restated_per_rescan"))
PY
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
