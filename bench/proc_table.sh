#!/usr/bin/env bash
# Issue 20: what a desktop-sized process table costs a scan. `smolsweep scan --json` of an
# empty scratch HOME against a Python loop that readlinks every open file descriptor of every
# process on the machine, both timed as whole processes, alternating, with PROCS extra
# processes each holding FDS open files (bench/proc_farm.py, removed afterwards).
#
# usage: bench/proc_table.sh [--runs N] [--table PROCSxFDS]... [--bin PATH]...
#   default tables: 300x64 and 1000x100; default binary: target/release/smolsweep (built).
#   Several --bin (e.g. a build of the commit before a change, and after) are each measured
#   against the same Python walk on the same table, one after the other.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
runs=9
tables=()
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --table) tables+=("$2"); shift 2 ;;
    --bin) bins+=("$2"); shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ ${#tables[@]} -gt 0 ] || tables=(300x64 1000x100)
if [ ${#bins[@]} -eq 0 ]; then
  (cd "$repo" && cargo build --release --bin smolsweep >&2)
  bins=("$repo/target/release/smolsweep")
fi
scratch="$(mktemp -d "${TMPDIR:-/tmp}/smolsweep-proctable.XXXXXX")"
farm_pid=""
cleanup() {
  if [ -n "$farm_pid" ]; then
    kill "$farm_pid" 2>/dev/null || true
    while kill -0 "$farm_pid" 2>/dev/null; do sleep 0.2; done
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
mkdir "$scratch/home"

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

# Whole-process wall and CPU time (wait4's rusage), A and B alternating after one warm-up each.
cat >"$scratch/alternate.py" <<'EOF'
import os, subprocess, sys, time
runs = int(sys.argv[1]); a = sys.argv[2].split('\x1f'); b = sys.argv[3].split('\x1f')
env = dict(os.environ)
def once(cmd):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        sys.exit(f"{cmd[0]} failed: {status}")
    return wall, ru.ru_utime + ru.ru_stime
once(a); once(b)
rows = [(once(a), once(b)) for _ in range(runs)]
med = lambda v: sorted(v)[len(v) // 2]
aw, ac = med([r[0][0] for r in rows]), med([r[0][1] for r in rows])
bw, bc = med([r[1][0] for r in rows]), med([r[1][1] for r in rows])
rw = med([r[0][0] / r[1][0] for r in rows]); rc = med([r[0][1] / r[1][1] for r in rows])
print(f"  scan   wall {aw*1000:7.1f} ms  cpu {ac*1000:7.1f} ms")
print(f"  python wall {bw*1000:7.1f} ms  cpu {bc*1000:7.1f} ms")
print(f"  ratio  wall {rw:.2f}x  cpu {rc:.2f}x   (median of {runs} pairwise ratios)")
EOF

echo "cores: $(nproc), kernel $(uname -r), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in "${tables[@]}"; do
  procs="${t%x*}"; fds="${t#*x}"
  python3 "$here/proc_farm.py" "$procs" "$fds" "$scratch/farm-$t" >"$scratch/farm-$t.out" &
  farm_pid=$!
  until grep -q '^ready' "$scratch/farm-$t.out"; do
    kill -0 "$farm_pid" 2>/dev/null || { echo "the process farm did not start" >&2; exit 1; }
    sleep 0.5
  done
  launcher_pid=$farm_pid
  farm_pid="$(awk '/^ready/ {print $2}' "$scratch/farm-$t.out")"   # the farm itself
  echo "table ${procs}x${fds}: $(ls /proc | grep -c '^[0-9]') processes," \
    "$(python3 "$scratch/walk.py") fds readable"
  B="python3"$'\x1f'"$scratch/walk.py"
  for bin in "${bins[@]}"; do
    echo " $bin"
    A="env"$'\x1f'"-i"$'\x1f'"HOME=$scratch/home"$'\x1f'"PATH=/usr/bin:/bin"$'\x1f'"$bin"$'\x1f'"scan"$'\x1f'"--json"
    python3 "$scratch/alternate.py" "$runs" "$A" "$B"
  done
  kill "$farm_pid"
  while kill -0 "$farm_pid" 2>/dev/null; do sleep 0.2; done   # its files are removed
  wait "$launcher_pid" 2>/dev/null || true; farm_pid=""
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
