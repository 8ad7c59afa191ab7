#!/usr/bin/env bash
# Issue 40, item 1: a full scan of a HOME with leftovers while an orphaned VM holds one of its
# disks, beside a desktop's process table, against the plain Python walk that readlinks every
# fd (the yardstick of bench/proc_table.sh).
#
# Two scratch HOMEs from the fixture crate (`smolsweep-fixture both`: leftovers of both
# products to judge, machines, caches). In V, a stand-in smolvm VMM (`_boot-vm`, comm
# `libkrun VM`: examples/fake_vmm.rs, HOME = V's) runs for the machine directory
# `8b5abb8b7f67f229`, which has no record (an orphaned VM of this HOME), holding its
# `storage.raw` open; a second stand-in VMM of another HOME holds a disk of its own there. N is
# the same layout with no VM at all (nothing judged is held: the kernel's answer spares the
# table, bench/compact.md part 5). Beside them bench/proc_farm.py holds PROCS processes × FDS
# open files. Then, after one warm-up each, RUNS rounds of: `smolsweep scan --json` of V, of N,
# and the Python walk, each a whole new process, timed by wait4's rusage (children included).
# Printed: medians of wall and CPU time of each and the medians of the per-round ratios V/walk
# and N/walk, then the CPU ratios of the rounds where the walk ran faster than its median and of
# the others (the host's speed moves the walk's interpreter more than the scan's system calls). The script first checks that V's scan calls the VM an orphan of this HOME holding
# the machine directory (so the case is the one measured).
#
# usage: bench/held_table.sh [--runs N] [--table PROCSxFDS] [--bin PATH]... [--fixture PATH]
#   defaults: 5 runs, 300x64, target/release/smolsweep, target/release/smolsweep-fixture
#   (`cargo build --release -p smolsweep --bin smolsweep -p smolsweep-fixtures`).
#   Several --bin (a build before a change and after) are measured in the same rounds, on the
#   same HOMEs and table, against the same walks.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs=5
table=300x64
bins=()
fixture="$repo/target/release/smolsweep-fixture"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --table) table="$2"; shift 2 ;;
    --bin) bins+=("$(realpath "$2")"); shift 2 ;;
    --fixture) fixture="$(realpath "$2")"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || bins=("$repo/target/release/smolsweep")
scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-heldtable.XXXXXX")"
pids=()
farm_pid=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$farm_pid" ]; then
    kill "$farm_pid" 2>/dev/null || true
    while kill -0 "$farm_pid" 2>/dev/null; do sleep 0.2; done
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# The stand-in VMM (std only), built once.
rustc --edition 2021 -C opt-level=2 -o "$scratch/fake_vmm" "$repo/examples/fake_vmm.rs"

for side in v n; do
  mkdir -p "$scratch/$side"
  "$fixture" both "$scratch/$side" > "$scratch/$side.env"
done
home_v="$scratch/v/home"
mdir="$home_v/.cache/smolvm/vms/8b5abb8b7f67f229"
[ -f "$mdir/storage.raw" ] || { echo "bench: the fixture has no $mdir/storage.raw" >&2; exit 1; }
# Another HOME's machine, with its own disk.
other="$scratch/other/.cache/smolvm/vms/00112233aabbccdd"
mkdir -p "$other" && truncate -s 1G "$other/storage.raw"

mkfifo "$scratch/stdin"
exec 7<>"$scratch/stdin" # the stand-ins' stdin: open, never written, never closed
vmm() { # HOME MACHINE_DIR DISK: a `_boot-vm` of MACHINE_DIR holding DISK, started from HOME
  local out="$scratch/vmm.$RANDOM"
  env -i HOME="$1" FAKE_VMM_COMM="libkrun VM" FAKE_VMM_OPEN="$3" \
    bash -c 'exec -a /proc/self/exe "$0" _boot-vm "$1"' "$scratch/fake_vmm" "$2/boot-config.json" \
    <&7 >"$out" &
  pids+=($!)
  until grep -q ready "$out" 2>/dev/null; do sleep 0.05; done
}
vmm "$home_v" "$mdir" "$mdir/storage.raw"
vmm "$scratch/other" "$other" "$other/storage.raw"

env -i PATH=/usr/bin:/bin $(cat "$scratch/v.env") "${bins[0]}" scan --json > "$scratch/v.json"
python3 - "$scratch/v.json" "$mdir" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); mdir = sys.argv[2]
orphans = [p for p in r["processes"] if p.get("orphan")]
f = next(f for f in r["findings"] if f["path"] == mdir)
assert orphans, "no orphaned VM found"
assert f["verdict"] == "protected" and f["used_by"], f
print("V: %d findings, %d VM processes (%d orphaned), the machine directory %s: %s"
      % (len(r["findings"]), len(r["processes"]), len(orphans), f["verdict"], f["reason"]))
PY

cat >"$scratch/walk.py" <<'EOF'
import os
n = 0
for p in os.listdir('/proc'):
    if not p.isdigit():
        continue
    d = '/proc/' + p + '/fd'
    try:
        fds = os.listdir(d)
    except OSError:
        continue
    for f in fds:
        try:
            os.readlink(d + '/' + f)
            n += 1
        except OSError:
            pass
print(n)
EOF

cat >"$scratch/rounds.py" <<'EOF'
import os, subprocess, sys, time
# rounds.py RUNS NAMES COMMAND...: one warm-up each, then RUNS rounds of every command in turn,
# the last command the walk every ratio is taken against.
runs = int(sys.argv[1]); names = sys.argv[2].split('|'); cmds = [c.split('\x1f') for c in sys.argv[3:]]
def once(cmd):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        sys.exit(f"{cmd} failed: {status}")
    return wall, ru.ru_utime + ru.ru_stime
for c in cmds:
    once(c)
rows = [[once(c) for c in cmds] for _ in range(runs)]
med = lambda v: sorted(v)[len(v) // 2]
w = len(cmds) - 1
ratio = lambda rs, i, k: med([r[i][k] / r[w][k] for r in rs])
for i, n in enumerate(names):
    line = f"  {n:<24} wall {med([r[i][0] for r in rows])*1000:7.1f} ms  cpu {med([r[i][1] for r in rows])*1000:7.1f} ms"
    if i != w:
        line += f"   / walk: wall {ratio(rows, i, 0):.2f}x  cpu {ratio(rows, i, 1):.2f}x"
    print(line)
print(f"  (medians of {runs} rounds, each ratio the median of the rounds' own)")
# The walk's CPU time moves with the host (an interpreter's user time more than a system
# call's): the ratios in the rounds where it ran faster than its median, and in the others.
cut = med([r[w][1] for r in rows])
for label, rs in (("walk faster than its median", [r for r in rows if r[w][1] < cut]),
                  ("walk at or above its median", [r for r in rows if r[w][1] >= cut])):
    if rs:
        print(f"  rounds with the {label} ({len(rs)}): "
              + ", ".join(f"{names[i]} {ratio(rs, i, 1):.2f}x" for i in range(w)) + " (CPU)")
EOF

echo "cores: $(nproc), kernel $(uname -r), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
procs="${table%x*}"; fds="${table#*x}"
python3 "$here/proc_farm.py" "$procs" "$fds" "$scratch/farm" >"$scratch/farm.out" &
farm_pid=$!
until grep -q '^ready' "$scratch/farm.out"; do
  kill -0 "$farm_pid" 2>/dev/null || { echo "the process farm did not start" >&2; exit 1; }
  sleep 0.5
done
launcher_pid=$farm_pid
farm_pid="$(awk '/^ready/ {print $2}' "$scratch/farm.out")"
echo "table ${procs}x${fds}: $(ls /proc | grep -c '^[0-9]') processes," \
  "$(python3 "$scratch/walk.py") fds readable"
W="python3"$'\x1f'"$scratch/walk.py"
side() { printf 'env\x1f-i\x1fPATH=/usr/bin:/bin'; tr '\n' '\037' < "$scratch/$1.env" | sed 's/\x1f$//' | sed 's/^/\x1f/'; printf '\x1f%s\x1fscan\x1f--json' "$2"; }
# Every build in the same rounds, so each round's ratios share one state of the machine.
names=() cmds=()
echo "V: an orphaned VM holds a judged disk; N: nothing judged is held"
for which in "v:scan V" "n:scan N"; do
  for bin in "${bins[@]}"; do
    label="${which#*:}"
    [ ${#bins[@]} -gt 1 ] && label="$label $(basename "$(dirname "$bin")")/$(basename "$bin")"
    names+=("$label"); cmds+=("$(side "${which%%:*}" "$bin")")
  done
done
python3 "$scratch/rounds.py" "$runs" "$(IFS='|'; echo "${names[*]}")|python walk" "${cmds[@]}" "$W"
kill "$farm_pid"
while kill -0 "$farm_pid" 2>/dev/null; do sleep 0.2; done
wait "$launcher_pid" 2>/dev/null || true; farm_pid=""
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
