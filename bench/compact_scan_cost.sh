#!/usr/bin/env bash
# Issue 32, part 5: what the compaction estimates add to a scan of a HOME with leftovers to
# judge, beside a desktop's process table, against the plain Python walk that readlinks every
# fd (the yardstick of bench/proc_table.sh).
#
# Two scratch HOMEs from the fixture crate (`smolsweep-fixture both`: leftovers of both
# products to judge, so the scan reads the whole process table). In A, every disk the scan
# estimates is a real 2 GiB ext4 image with 512 MiB written and then deleted (raw, or qcow2
# through `qemu-img convert`); in B they stay the fixture's sparse files with no file system
# (the estimate stops after the superblock). Beside them, bench/proc_farm.py holds PROCS
# processes × FDS open files. Then, alternating after one warm-up each, RUNS rounds of:
# `smolsweep scan --json` of A, of B, and the Python walk, each a whole new process (so every
# estimate is read cold: the estimate cache lives in a process), timed by wait4's rusage.
# Printed: medians of wall and CPU time of each, and the medians of the per-round ratios A/walk
# and B/walk.
#
# usage: bench/compact_scan_cost.sh [--runs N] [--table PROCSxFDS] [--bin PATH]... [--fixture PATH]
#   defaults: 9 runs, 300x64, target/release/smolsweep, target/release/smolsweep-fixture
#   (`cargo build --release -p smolsweep --bin smolsweep -p smolsweep-fixtures`).
#   Several --bin are measured one after the other, each against its own walks.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs=9
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
PATH=$PATH:/usr/sbin:/sbin
scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-compactcost.XXXXXX")"
farm_pid=""
cleanup() {
  if [ -n "$farm_pid" ]; then
    kill "$farm_pid" 2>/dev/null || true
    while kill -0 "$farm_pid" 2>/dev/null; do sleep 0.2; done
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# One 2 GiB ext4 image with 512 MiB written and deleted, and its qcow2 conversion.
mkdir "$scratch/src"
head -c $((512 << 20)) /dev/urandom > "$scratch/src/big"
mke2fs -q -F -t ext4 -d "$scratch/src" "$scratch/disk.raw" 2G
rm -rf "$scratch/src"
debugfs -w -R 'rm /big' "$scratch/disk.raw" >/dev/null 2>&1
qemu-img convert -O qcow2 "$scratch/disk.raw" "$scratch/disk.qcow2"

for side in a b; do
  mkdir -p "$scratch/$side"
  "$fixture" both "$scratch/$side" > "$scratch/$side.env"
done
disks=$(env -i PATH=/usr/bin:/bin $(cat "$scratch/b.env") "${bins[0]}" scan --json \
  | python3 -c 'import json,sys; [print(d["path"]) for d in json.load(sys.stdin)["compact"]["disks"]]')
for p in $disks; do
  a=${p/#$scratch\/b/$scratch\/a}
  case "$p" in
    *.qcow2) cp --sparse=always "$scratch/disk.qcow2" "$a" ;;
    *) cp --sparse=always "$scratch/disk.raw" "$a" ;;
  esac
  touch -d '2 hours ago' "$a"
done
env -i PATH=/usr/bin:/bin $(cat "$scratch/a.env") "${bins[0]}" scan --json > "$scratch/a.json"
python3 - "$scratch/a.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["compact"]
print("A: %d findings, %d disks estimated (%d read exactly), compactable %.1f GB"
      % (len(r["findings"]), len(c["disks"]),
         len([d for d in c["disks"] if "cannot_tell" not in d]), c["compactable_bytes"] / 1e9))
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
runs = int(sys.argv[1]); cmds = [c.split('\x1f') for c in sys.argv[2:]]
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
names = ["scan A (real disks)", "scan B (no file system)", "python walk"]
for i, n in enumerate(names):
    print(f"  {n:<24} wall {med([r[i][0] for r in rows])*1000:7.1f} ms"
          f"  cpu {med([r[i][1] for r in rows])*1000:7.1f} ms")
for i, n in enumerate(names[:2]):
    rw = med([r[i][0] / r[2][0] for r in rows]); rc = med([r[i][1] / r[2][1] for r in rows])
    print(f"  {n:<24} / walk: wall {rw:.2f}x  cpu {rc:.2f}x")
print(f"  estimates' share (A - B) / walk: cpu "
      f"{med([(r[0][1] - r[1][1]) / r[2][1] for r in rows]):.2f}x  (median of {runs} rounds)")
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
for bin in "${bins[@]}"; do
  echo " $bin"
  side() { printf 'env\x1f-i\x1fPATH=/usr/bin:/bin'; tr '\n' '\037' < "$scratch/$1.env" | sed 's/\x1f$//' | sed 's/^/\x1f/'; printf '\x1f%s\x1fscan\x1f--json' "$bin"; }
  python3 "$scratch/rounds.py" "$runs" "$(side a)" "$(side b)" "$W"
done
kill "$farm_pid"
while kill -0 "$farm_pid" 2>/dev/null; do sleep 0.2; done
wait "$launcher_pid" 2>/dev/null || true; farm_pid=""
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
